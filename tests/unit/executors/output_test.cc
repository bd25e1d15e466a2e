#include "sandbox/executors/output.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace sandrun::exec {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

struct SanitizeCase {
  const char* name;
  std::string in;
  std::string want;
};

class SanitizeOutputTest : public ::testing::TestWithParam<SanitizeCase> {};

TEST_P(SanitizeOutputTest, Sanitizes) { EXPECT_EQ(SanitizeOutput(GetParam().in), GetParam().want); }

INSTANTIATE_TEST_SUITE_P(
    Table, SanitizeOutputTest,
    ::testing::Values(
        SanitizeCase{"Empty", "", ""}, SanitizeCase{"PlainAscii", "hello world", "hello world"},
        SanitizeCase{"TabNewlineCarriageReturnKept", "a\tb\nc\r\n", "a\tb\nc\r\n"},
        SanitizeCase{"NulDropped", std::string("a\0b", 3), "ab"},
        SanitizeCase{"BellBackspaceFormFeedDropped",
                     "a\x07\x08\x0c"
                     "b",
                     "ab"},
        SanitizeCase{"EscapeDroppedSequenceTextKept", "\x1b[31mred\x1b[0m", "[31mred[0m"},
        SanitizeCase{"DelDropped",
                     "a\x7f"
                     "b",
                     "ab"},
        SanitizeCase{"TwoByteKept", "caf\xC3\xA9", "caf\xC3\xA9"},
        SanitizeCase{"ThreeByteKept", "\xE2\x82\xAC 5", "\xE2\x82\xAC 5"},
        SanitizeCase{"FourByteKept", "\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},
        SanitizeCase{"LargestCodePointKept", "\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF"},
        SanitizeCase{"C1ControlKeptAsText", "\xC2\x85", "\xC2\x85"},
        SanitizeCase{"StrayContinuationByte",
                     "a\x80"
                     "b",
                     "a" + kFffd + "b"},
        SanitizeCase{"InvalidLeadBytes", "\xFF\xFE", kFffd + kFffd},
        SanitizeCase{"F5NeverValid", "\xF5\x80\x80\x80", kFffd + kFffd + kFffd + kFffd},
        SanitizeCase{"OverlongSlash", "\xC0\xAF", kFffd + kFffd},
        SanitizeCase{"OverlongNul", "\xC1\x80", kFffd + kFffd},
        SanitizeCase{"OverlongThreeByte", "\xE0\x80\xAF", kFffd + kFffd + kFffd},
        SanitizeCase{"OverlongFourByte", "\xF0\x80\x80\xAF", kFffd + kFffd + kFffd + kFffd},
        SanitizeCase{"HighSurrogate", "\xED\xA0\x80", kFffd + kFffd + kFffd},
        SanitizeCase{"LowSurrogate", "\xED\xBF\xBF", kFffd + kFffd + kFffd},
        SanitizeCase{"PastMaxCodePoint", "\xF4\x90\x80\x80", kFffd + kFffd + kFffd + kFffd},
        // A truncated sequence is one maximal subpart: one U+FFFD, then the next character.
        SanitizeCase{"TruncatedThreeByte",
                     "\xE2\x82"
                     "A",
                     kFffd + "A"},
        SanitizeCase{"TruncatedFourByte",
                     "\xF0\x9F\x98"
                     "x",
                     kFffd + "x"},
        SanitizeCase{"TruncatedAtEnd", "ok\xE2\x82", "ok" + kFffd},
        SanitizeCase{"LeadThenAscii",
                     "\xC3"
                     "A",
                     kFffd + "A"},
        SanitizeCase{"ZeroWidthSpaceDropped",
                     "a\xE2\x80\x8B"
                     "b",
                     "ab"},
        SanitizeCase{"BidiOverrideDropped", "x\xE2\x80\xAEgnp.exe", "xgnp.exe"},
        SanitizeCase{"ByteOrderMarkDropped", "\xEF\xBB\xBFstart", "start"},
        SanitizeCase{"SoftHyphenDropped", "co\xC2\xADop", "coop"},
        SanitizeCase{"TagCharacterDropped",
                     "a\xF3\xA0\x81\x81"
                     "b",
                     "ab"},
        SanitizeCase{"MixedControlAndInvalid",
                     std::string("\x01"
                                 "a\xFF\0"
                                 "b",
                                 5),
                     "a" + kFffd + "b"}),
    [](const ::testing::TestParamInfo<SanitizeCase>& p) { return p.param.name; });

std::string Marker(uint64_t cut) {
  return "[... " + std::to_string(cut) + " chars truncated ...]\n";
}

TEST(OutputCollectorTest, KeepsEverythingUnderTheCap) {
  OutputCollector out(100);
  out.Append(Stream::kStdout, "hello ");
  out.Append(Stream::kStderr, "world\n");
  EXPECT_EQ(out.Text(), "hello world\n");
  EXPECT_EQ(out.total_bytes(), 12u);
  EXPECT_FALSE(out.truncated());
}

TEST(OutputCollectorTest, ExactlyAtTheCapIsNotTruncated) {
  OutputCollector out(10);
  out.Append(Stream::kStdout, "01234");
  out.Append(Stream::kStdout, "56789");
  EXPECT_EQ(out.Text(), "0123456789");
  EXPECT_FALSE(out.truncated());
}

TEST(OutputCollectorTest, OneOverTheCapKeepsTheTailWithAMarker) {
  OutputCollector out(10);
  out.Append(Stream::kStdout, "0123456789");
  out.Append(Stream::kStdout, "X");
  EXPECT_TRUE(out.truncated());
  EXPECT_EQ(out.Text(), Marker(1) + "123456789X");
}

// Between two trims the buffer holds more than the cap; truncated() must still say so.
TEST(OutputCollectorTest, TruncatedBeforeTheBufferIsTrimmed) {
  OutputCollector out(10);
  for (int i = 0; i < 3; ++i) out.Append(Stream::kStdout, "abcde");
  EXPECT_EQ(out.total_bytes(), 15u);
  EXPECT_TRUE(out.truncated());
  EXPECT_EQ(out.Text(), Marker(5) + "abcdeabcde");
}

TEST(OutputCollectorTest, ManySmallChunksKeepTheLastCapBytes) {
  OutputCollector out(1000);
  std::string all;
  for (int i = 0; i < 5000; ++i) {
    std::string line = std::to_string(i) + "\n";
    all += line;
    out.Append(i % 2 == 0 ? Stream::kStdout : Stream::kStderr, line);
  }
  EXPECT_EQ(out.total_bytes(), all.size());
  EXPECT_EQ(out.Text(), Marker(all.size() - 1000) + all.substr(all.size() - 1000));
}

TEST(OutputCollectorTest, OneChunkLargerThanTheCap) {
  OutputCollector out(4);
  out.Append(Stream::kStdout, "ab");
  out.Append(Stream::kStdout, "0123456789");
  EXPECT_EQ(out.total_bytes(), 12u);
  EXPECT_EQ(out.Text(), Marker(8) + "6789");
}

TEST(OutputCollectorTest, CutDoesNotSplitAUtf8Character) {
  // "é" is two bytes; the cap of 3 bytes would start on its second byte.
  OutputCollector out(3);
  out.Append(Stream::kStdout, "x\xC3\xA9\xC3\xA9");
  EXPECT_EQ(out.Text(), Marker(3) + "\xC3\xA9");
}

TEST(OutputCollectorTest, CutSkipsAtMostThreeContinuationBytes) {
  // Binary garbage made of continuation bytes must not make the kept text vanish.
  OutputCollector out(8);
  out.Append(Stream::kStdout, std::string(20, '\x80'));
  std::string text = out.Text();
  EXPECT_EQ(text.substr(0, Marker(15).size()), Marker(15));
  std::string want;
  for (int i = 0; i < 5; ++i) want += kFffd;
  EXPECT_EQ(text.substr(Marker(15).size()), want);
}

TEST(OutputCollectorTest, TextIsSanitised) {
  OutputCollector out(100);
  out.Append(Stream::kStdout, "\x1b[1mbold\x1b[0m \xFF");
  EXPECT_EQ(out.Text(), "[1mbold[0m " + kFffd);
}

TEST(OutputCollectorTest, LiveSinkSeesEveryByteInOrderUnsanitised) {
  std::vector<std::pair<Stream, std::string>> seen;
  OutputCollector out(4, [&](Stream s, std::string_view b) { seen.emplace_back(s, b); });
  out.Append(Stream::kStdout, "abc\x01");
  out.Append(Stream::kStderr, "");  // empty chunks are not forwarded
  out.Append(Stream::kStderr, "defgh");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::pair<Stream, std::string>{Stream::kStdout, "abc\x01"}));
  EXPECT_EQ(seen[1], (std::pair<Stream, std::string>{Stream::kStderr, "defgh"}));
  EXPECT_EQ(out.total_bytes(), 9u);
}

TEST(OutputCollectorTest, ZeroCapStillCountsEverything) {
  OutputCollector out(0);
  out.Append(Stream::kStdout, "abc");
  EXPECT_EQ(out.total_bytes(), 3u);
  EXPECT_TRUE(out.truncated());
}

TEST(OutputCollectorTest, FiveMebibytesThroughTheDefaultCap) {
  OutputCollector out(200000);
  std::string chunk(64 * 1024, 'y');
  for (int i = 0; i < 80; ++i) out.Append(Stream::kStdout, chunk);
  EXPECT_EQ(out.total_bytes(), 5u << 20);
  std::string text = out.Text();
  uint64_t cut = (5u << 20) - 200000;
  EXPECT_EQ(text, Marker(cut) + std::string(200000, 'y'));
}

}  // namespace
}  // namespace sandrun::exec

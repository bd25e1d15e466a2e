#include "sandbox/docker/frame_demuxer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sandrun::docker {
namespace {

std::string Frame(uint8_t type, const std::string& payload) {
  std::string out = {static_cast<char>(type), 0, 0, 0};
  auto n = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
  return out + payload;
}

struct Collected {
  std::string out, err, in;
  std::vector<StreamKind> order;
  size_t largest_piece = 0;
};

FrameDemuxer Collector(Collected& c) {
  return FrameDemuxer([&c](StreamKind kind, std::string_view bytes) {
    (kind == StreamKind::kStdout   ? c.out
     : kind == StreamKind::kStderr ? c.err
                                   : c.in)
        .append(bytes);
    if (c.order.empty() || c.order.back() != kind) c.order.push_back(kind);
    c.largest_piece = std::max(c.largest_piece, bytes.size());
  });
}

TEST(FrameDemuxerTest, SeparatesStdoutAndStderrInOrder) {
  Collected c;
  auto d = Collector(c);
  ASSERT_TRUE(d.Feed(Frame(1, "out1\n") + Frame(2, "err1\n") + Frame(1, "out2\n")));
  ASSERT_TRUE(d.Finish());
  EXPECT_EQ(c.out, "out1\nout2\n");
  EXPECT_EQ(c.err, "err1\n");
  EXPECT_EQ(c.order, (std::vector<StreamKind>{StreamKind::kStdout, StreamKind::kStderr,
                                              StreamKind::kStdout}));
  EXPECT_EQ(d.frames(), 3u);
}

TEST(FrameDemuxerTest, HandlesFramesSplitAtEveryByte) {
  std::string stream = Frame(1, "hello") + Frame(2, "world!") + Frame(0, "in");
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    Collected c;
    auto d = Collector(c);
    ASSERT_TRUE(d.Feed(stream.substr(0, cut)));
    ASSERT_TRUE(d.Feed(stream.substr(cut)));
    ASSERT_TRUE(d.Finish()) << "cut at " << cut;
    EXPECT_EQ(c.out, "hello");
    EXPECT_EQ(c.err, "world!");
    EXPECT_EQ(c.in, "in");
  }
}

TEST(FrameDemuxerTest, ByteAtATime) {
  std::string stream = Frame(1, std::string(300, 'x')) + Frame(2, "e");
  Collected c;
  auto d = Collector(c);
  for (char ch : stream) ASSERT_TRUE(d.Feed(std::string_view(&ch, 1)));
  ASSERT_TRUE(d.Finish());
  EXPECT_EQ(c.out, std::string(300, 'x'));
  EXPECT_EQ(c.err, "e");
}

TEST(FrameDemuxerTest, ZeroLengthFramesAreSkipped) {
  Collected c;
  auto d = Collector(c);
  ASSERT_TRUE(d.Feed(Frame(1, "") + Frame(2, "") + Frame(1, "x") + Frame(1, "")));
  ASSERT_TRUE(d.Finish());
  EXPECT_EQ(c.out, "x");
  EXPECT_EQ(d.frames(), 4u);
}

TEST(FrameDemuxerTest, LargeFramesAreForwardedInPiecesWithoutBuffering) {
  const size_t kSize = 4u << 20;  // one 4 MiB frame, fed in 64 KiB reads
  std::string stream = Frame(1, std::string(kSize, 'z'));
  Collected c;
  auto d = Collector(c);
  for (size_t i = 0; i < stream.size(); i += 65536) {
    ASSERT_TRUE(d.Feed(std::string_view(stream).substr(i, 65536)));
  }
  ASSERT_TRUE(d.Finish());
  EXPECT_EQ(c.out.size(), kSize);
  EXPECT_LE(c.largest_piece, 65536u);
}

TEST(FrameDemuxerTest, RejectsUnknownStreamType) {
  Collected c;
  auto d = Collector(c);
  auto st = d.Feed(Frame(3, "x"));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kProtocol);
  EXPECT_FALSE(d.Feed(Frame(1, "y"))) << "stays failed";
  EXPECT_TRUE(c.out.empty());
}

TEST(FrameDemuxerTest, RejectsNonZeroPadding) {
  Collected c;
  auto d = Collector(c);
  std::string bad = Frame(1, "x");
  bad[2] = 1;
  EXPECT_FALSE(d.Feed(bad));
}

TEST(FrameDemuxerTest, RawTtyBytesAreAProtocolError) {
  Collected c;
  auto d = Collector(c);
  EXPECT_FALSE(d.Feed("hello world\n"));
}

TEST(FrameDemuxerTest, TruncatedStreamFailsAtFinish) {
  Collected c;
  auto d1 = Collector(c);
  ASSERT_TRUE(d1.Feed(Frame(1, "hello").substr(0, 6)));  // inside the header
  EXPECT_FALSE(d1.Finish());
  auto d2 = Collector(c);
  ASSERT_TRUE(d2.Feed(Frame(1, "hello").substr(0, 10)));  // inside the payload
  EXPECT_FALSE(d2.Finish());
}

}  // namespace
}  // namespace sandrun::docker

// The key encoder against OpenClaw's key table (reference §6), and the PTY output scanner.
#include "runner/sessions/keys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runner/sessions/terminal.h"

namespace sandrun::sessions {
namespace {

std::string Key(const std::string& token, CursorKeyMode mode = CursorKeyMode::kNormal) {
  std::vector<std::string> warnings;
  std::string out = EncodeKeyToken(token, mode, warnings);
  EXPECT_TRUE(warnings.empty()) << token << ": " << warnings.front();
  return out;
}

struct NamedCase {
  const char* name;
  const char* bytes;
};

class NamedKeyTest : public ::testing::TestWithParam<NamedCase> {};

TEST_P(NamedKeyTest, EncodesAsTheTableSays) {
  EXPECT_EQ(Key(GetParam().name), GetParam().bytes) << GetParam().name;
}

TEST_P(NamedKeyTest, NamesAreCaseInsensitive) {
  std::string upper = GetParam().name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(Key(upper), GetParam().bytes) << upper;
}

INSTANTIATE_TEST_SUITE_P(
    Table, NamedKeyTest,
    ::testing::Values(
        NamedCase{"enter", "\r"}, NamedCase{"return", "\r"}, NamedCase{"tab", "\t"},
        NamedCase{"escape", "\x1b"}, NamedCase{"esc", "\x1b"}, NamedCase{"space", " "},
        NamedCase{"bspace", "\x7f"}, NamedCase{"backspace", "\x7f"}, NamedCase{"up", "\x1b[A"},
        NamedCase{"down", "\x1b[B"}, NamedCase{"right", "\x1b[C"}, NamedCase{"left", "\x1b[D"},
        NamedCase{"home", "\x1b[1~"}, NamedCase{"end", "\x1b[4~"}, NamedCase{"pageup", "\x1b[5~"},
        NamedCase{"pgup", "\x1b[5~"}, NamedCase{"ppage", "\x1b[5~"},
        NamedCase{"pagedown", "\x1b[6~"}, NamedCase{"pgdn", "\x1b[6~"},
        NamedCase{"npage", "\x1b[6~"}, NamedCase{"insert", "\x1b[2~"}, NamedCase{"ic", "\x1b[2~"},
        NamedCase{"delete", "\x1b[3~"}, NamedCase{"del", "\x1b[3~"}, NamedCase{"dc", "\x1b[3~"},
        NamedCase{"btab", "\x1b[Z"}, NamedCase{"f1", "\x1bOP"}, NamedCase{"f2", "\x1bOQ"},
        NamedCase{"f3", "\x1bOR"}, NamedCase{"f4", "\x1bOS"}, NamedCase{"f5", "\x1b[15~"},
        NamedCase{"f6", "\x1b[17~"}, NamedCase{"f7", "\x1b[18~"}, NamedCase{"f8", "\x1b[19~"},
        NamedCase{"f9", "\x1b[20~"}, NamedCase{"f10", "\x1b[21~"}, NamedCase{"f11", "\x1b[23~"},
        NamedCase{"f12", "\x1b[24~"}, NamedCase{"kp/", "\x1bOo"}, NamedCase{"kp*", "\x1bOj"},
        NamedCase{"kp-", "\x1bOm"}, NamedCase{"kp+", "\x1bOk"}, NamedCase{"kp0", "\x1bOp"},
        NamedCase{"kp1", "\x1bOq"}, NamedCase{"kp2", "\x1bOr"}, NamedCase{"kp3", "\x1bOs"},
        NamedCase{"kp4", "\x1bOt"}, NamedCase{"kp5", "\x1bOu"}, NamedCase{"kp6", "\x1bOv"},
        NamedCase{"kp7", "\x1bOw"}, NamedCase{"kp8", "\x1bOx"}, NamedCase{"kp9", "\x1bOy"},
        NamedCase{"kp.", "\x1bOn"}, NamedCase{"kpenter", "\x1bOM"}),
    [](const ::testing::TestParamInfo<NamedCase>& param_info) {
      std::string n;
      for (const char* p = param_info.param.name; *p != '\0'; ++p) {
        char c = *p;
        n += std::isalnum(static_cast<unsigned char>(c)) ? std::string(1, c)
             : c == '/'                                  ? "Slash"
             : c == '*'                                  ? "Star"
             : c == '-'                                  ? "Minus"
             : c == '+'                                  ? "Plus"
                                                         : "Dot";
      }
      return n;
    });

TEST(KeysTest, CaretControlCharacters) {
  EXPECT_EQ(Key("^C"), "\x03");
  EXPECT_EQ(Key("^c"), "\x03");
  EXPECT_EQ(Key("^D"), "\x04");
  EXPECT_EQ(Key("^@"), std::string(1, '\0'));
  EXPECT_EQ(Key("^["), "\x1b");
  EXPECT_EQ(Key("^_"), "\x1f");
  EXPECT_EQ(Key("^?"), "\x7f");
  EXPECT_EQ(Key("^1"), "^1");  // not a control character: sent literally
}

TEST(KeysTest, CtrlAltShiftOnCharacters) {
  EXPECT_EQ(Key("C-a"), "\x01");
  EXPECT_EQ(Key("c-A"), "\x01");
  EXPECT_EQ(Key("C-?"), "\x7f");
  EXPECT_EQ(Key("C-["), "\x1b");
  EXPECT_EQ(Key("C-1"), "1");  // no control form
  EXPECT_EQ(Key("M-x"), "\x1bx");
  EXPECT_EQ(Key("S-a"), "A");
  EXPECT_EQ(Key("S-1"), "1");
  EXPECT_EQ(Key("C-M-x"), "\x1b\x18");
  EXPECT_EQ(Key("M-C-x"), "\x1b\x18");
  EXPECT_EQ(Key("C-S-a"), "\x01");
  EXPECT_EQ(Key("a"), "a");
  EXPECT_EQ(Key("-"), "-");
}

TEST(KeysTest, XtermModifiersOnNavigationKeys) {
  EXPECT_EQ(Key("S-up"), "\x1b[1;2A");
  EXPECT_EQ(Key("M-up"), "\x1b[1;3A");
  EXPECT_EQ(Key("M-S-up"), "\x1b[1;4A");
  EXPECT_EQ(Key("C-up"), "\x1b[1;5A");
  EXPECT_EQ(Key("C-S-down"), "\x1b[1;6B");
  EXPECT_EQ(Key("C-M-right"), "\x1b[1;7C");
  EXPECT_EQ(Key("C-M-S-left"), "\x1b[1;8D");
  EXPECT_EQ(Key("C-home"), "\x1b[1;5~");
  EXPECT_EQ(Key("S-end"), "\x1b[4;2~");
  EXPECT_EQ(Key("C-pageup"), "\x1b[5;5~");
  EXPECT_EQ(Key("M-pgdn"), "\x1b[6;3~");
  EXPECT_EQ(Key("S-insert"), "\x1b[2;2~");
  EXPECT_EQ(Key("C-delete"), "\x1b[3;5~");
  EXPECT_EQ(Key("C-Del"), "\x1b[3;5~");
}

TEST(KeysTest, ModifiersOnOtherNamedKeys) {
  EXPECT_EQ(Key("S-Tab"), "\x1b[Z");
  EXPECT_EQ(Key("s-tab"), "\x1b[Z");
  EXPECT_EQ(Key("M-enter"), "\x1b\r");
  EXPECT_EQ(Key("M-f1"), "\x1b\x1bOP");
  EXPECT_EQ(Key("C-enter"), "\r");  // ctrl has no encoding here: the key as is
  EXPECT_EQ(Key("S-f5"), "\x1b[15~");
  EXPECT_EQ(Key("M-escape"), "\x1b\x1b");
}

TEST(KeysTest, ApplicationCursorModeUsesSs3ForUnmodifiedKeys) {
  auto app = CursorKeyMode::kApplication;
  EXPECT_EQ(Key("up", app), "\x1bOA");
  EXPECT_EQ(Key("down", app), "\x1bOB");
  EXPECT_EQ(Key("right", app), "\x1bOC");
  EXPECT_EQ(Key("left", app), "\x1bOD");
  EXPECT_EQ(Key("home", app), "\x1bOH");
  EXPECT_EQ(Key("End", app), "\x1bOF");
  // Modified keys and other keys are unaffected.
  EXPECT_EQ(Key("C-up", app), "\x1b[1;5A");
  EXPECT_EQ(Key("pageup", app), "\x1b[5~");
  EXPECT_EQ(Key("enter", app), "\r");
  // Unknown encodes as normal.
  EXPECT_EQ(Key("up", CursorKeyMode::kUnknown), "\x1b[A");
}

TEST(KeysTest, UnknownKeysAreSentLiterallyWithAWarningWhenModified) {
  std::vector<std::string> warnings;
  EXPECT_EQ(EncodeKeyToken("hello", CursorKeyMode::kNormal, warnings), "hello");
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(EncodeKeyToken("C-hello", CursorKeyMode::kNormal, warnings), "hello");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "Unknown key \"hello\" for modifiers; sending literal.");
  EXPECT_EQ(EncodeKeyToken("  ", CursorKeyMode::kNormal, warnings), "");
  EXPECT_EQ(EncodeKeyToken(" enter ", CursorKeyMode::kNormal, warnings), "\r");
  EXPECT_EQ(EncodeKeyToken("X-a", CursorKeyMode::kNormal, warnings), "X-a");
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(KeysTest, HexBytes) {
  EXPECT_EQ(ParseHexByte("1b"), 0x1b);
  EXPECT_EQ(ParseHexByte("0x03"), 0x03);
  EXPECT_EQ(ParseHexByte("0XFF"), 0xff);
  EXPECT_EQ(ParseHexByte(" a "), 0x0a);
  EXPECT_EQ(ParseHexByte("0"), 0x00);
  EXPECT_FALSE(ParseHexByte("100"));
  EXPECT_FALSE(ParseHexByte("0x"));
  EXPECT_FALSE(ParseHexByte("zz"));
  EXPECT_FALSE(ParseHexByte(""));
  EXPECT_FALSE(ParseHexByte("-1"));
}

TEST(KeysTest, SequenceOrderIsLiteralHexKeysAndWarningsAccumulate) {
  KeyRequest request;
  request.literal = "ls";
  request.hex = {"20", "zz", "0x2d"};
  request.keys = {"l", "Enter", "C-nope"};
  EncodedKeys out = EncodeKeySequence(request, CursorKeyMode::kNormal);
  EXPECT_EQ(out.data, "ls -l\rnope");
  ASSERT_EQ(out.warnings.size(), 2u);
  EXPECT_EQ(out.warnings[0], "Invalid hex byte: zz");
  EXPECT_EQ(out.warnings[1], "Unknown key \"nope\" for modifiers; sending literal.");
  EXPECT_EQ(EncodeKeySequence({}, CursorKeyMode::kNormal).data, "");
  KeyRequest high;
  high.hex = {"ff", "00"};
  EXPECT_EQ(EncodeKeySequence(high, CursorKeyMode::kNormal).data, std::string("\xff\0", 2));
}

TEST(KeysTest, CursorModeSensitiveKeys) {
  EXPECT_TRUE(HasCursorModeSensitiveKeys({"a", "Up"}));
  EXPECT_TRUE(HasCursorModeSensitiveKeys({"home"}));
  EXPECT_TRUE(HasCursorModeSensitiveKeys({" end "}));
  EXPECT_FALSE(HasCursorModeSensitiveKeys({"C-up", "S-left", "pageup", "enter", "^C"}));
  EXPECT_FALSE(HasCursorModeSensitiveKeys({}));
}

TEST(KeysTest, Paste) {
  EXPECT_EQ(EncodePaste("hi\nthere", true), "\x1b[200~hi\nthere\x1b[201~");
  EXPECT_EQ(EncodePaste("hi", false), "hi");
}

TEST(TerminalScannerTest, StripsCursorPositionRequestsAndCountsThem) {
  TerminalScanner scan;
  auto r = scan.Scan("a\x1b[6nb\x1b[?6nc");
  EXPECT_EQ(r.output, "abc");
  EXPECT_EQ(r.dsr_requests, 2);
  EXPECT_FALSE(r.mode);
}

TEST(TerminalScannerTest, TracksCursorKeyModeLastOneWins) {
  TerminalScanner scan;
  auto r = scan.Scan("\x1b[?1hx\x1b[?1l");
  EXPECT_EQ(r.output, "\x1b[?1hx\x1b[?1l");  // mode switches stay in the output
  EXPECT_EQ(r.mode, CursorKeyMode::kNormal);
  r = scan.Scan("\x1b[?1h");
  EXPECT_EQ(r.mode, CursorKeyMode::kApplication);
  r = scan.Scan("\x1b[?1049h");  // alternate screen: not smkx
  EXPECT_FALSE(r.mode);
  EXPECT_EQ(r.output, "\x1b[?1049h");
}

TEST(TerminalScannerTest, SequencesSplitAcrossChunks) {
  TerminalScanner scan;
  auto r = scan.Scan("abc\x1b[");
  EXPECT_EQ(r.output, "abc");
  r = scan.Scan("6ndef\x1b");
  EXPECT_EQ(r.output, "def");
  EXPECT_EQ(r.dsr_requests, 1);
  r = scan.Scan("[?");
  EXPECT_EQ(r.output, "");
  r = scan.Scan("1h");
  EXPECT_EQ(r.mode, CursorKeyMode::kApplication);
  EXPECT_EQ(r.output, "\x1b[?1h");
  r = scan.Scan("\x1b[3");  // not a prefix of anything watched
  EXPECT_EQ(r.output, "\x1b[3");
  r = scan.Scan("\x1b[?");
  EXPECT_EQ(r.output, "");
  EXPECT_EQ(scan.Flush(), "\x1b[?");
  EXPECT_EQ(scan.Flush(), "");
}

}  // namespace
}  // namespace sandrun::sessions

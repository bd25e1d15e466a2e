// Session ids (OpenClaw's slug collision rules) and the process tool's text helpers.
#include "runner/sessions/text.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "runner/sessions/session_id.h"

namespace sandrun::sessions {
namespace {

// Always picks index 0: "amber-atlas", three words "amber-atlas-atlas", random chars "0".
uint64_t First(uint64_t) { return 0; }

TEST(SessionIdTest, WordListsHaveOpenClawsSizes) {
  EXPECT_EQ(SessionIdAdjectiveCount(), 42u);
  EXPECT_EQ(SessionIdNounCount(), 54u);
}

TEST(SessionIdTest, FreshIdsAreAdjectiveNoun) {
  std::regex shape("[a-z]+-[a-z]+");
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    std::string id = CreateSessionId([](const std::string&) { return false; });
    EXPECT_TRUE(std::regex_match(id, shape)) << id;
    seen.insert(id);
  }
  EXPECT_GT(seen.size(), 10u);  // random
}

TEST(SessionIdTest, CollisionsAddNumberSuffixes) {
  std::set<std::string> taken = {"amber-atlas", "amber-atlas-2", "amber-atlas-3"};
  auto is_taken = [&](const std::string& id) { return taken.count(id) != 0; };
  EXPECT_EQ(CreateSessionId(is_taken, First, 0), "amber-atlas-4");
  for (int i = 4; i <= 12; ++i) taken.insert("amber-atlas-" + std::to_string(i));
  // Every two-word candidate is taken (the random source only ever offers one): three words.
  EXPECT_EQ(CreateSessionId(is_taken, First, 0), "amber-atlas-atlas");
  taken.insert("amber-atlas-atlas");
  EXPECT_EQ(CreateSessionId(is_taken, First, 0), "amber-atlas-atlas-2");
}

TEST(SessionIdTest, ThenRandomCharactersThenATimeSuffix) {
  std::set<std::string> asked;
  auto all_but_random = [&](const std::string& id) {
    asked.insert(id);
    return id != "amber-atlas-atlas-000";
  };
  EXPECT_EQ(CreateSessionId(all_but_random, First, 0), "amber-atlas-atlas-000");
  auto everything = [](const std::string&) { return true; };
  EXPECT_EQ(CreateSessionId(everything, First, 36 * 36 + 35), "amber-atlas-atlas-000-10z");
  // 12 bases x (1 + 11 suffixes) for two and for three words, then the random one.
  EXPECT_TRUE(asked.count("amber-atlas-12"));
  EXPECT_FALSE(asked.count("amber-atlas-13"));
}

TEST(TextTest, TruncateMiddle) {
  EXPECT_EQ(TruncateMiddle("short", 80), "short");
  EXPECT_EQ(TruncateMiddle("abcdefghij", 9), "abc...hij");
  EXPECT_EQ(TruncateMiddle("abcdefghij", 10), "abcdefghij");
  // Characters, not bytes: six two-byte characters cut to 1 + "..." + 1.
  EXPECT_EQ(TruncateMiddle("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 5),
            "\xC3\xA9...\xC3\xA9");
}

TEST(TextTest, DeriveSessionName) {
  EXPECT_EQ(DeriveSessionName("npm run dev"), "npm run");
  EXPECT_EQ(DeriveSessionName("python -u server.py --port 8000"), "python server.py");
  EXPECT_EQ(DeriveSessionName("ls -la"), "ls -la");  // no non-flag: the second word
  EXPECT_EQ(DeriveSessionName("top"), "top");
  EXPECT_EQ(DeriveSessionName("  "), "");
  EXPECT_EQ(DeriveSessionName("echo 'hello world' done"), "echo hello world");
  EXPECT_EQ(DeriveSessionName("\"my tool\" x"), "my tool x");
  std::string long_arg(100, 'a');
  EXPECT_EQ(DeriveSessionName("cat " + long_arg), "cat " + TruncateMiddle(long_arg, 48));
}

TEST(TextTest, FormatDurationCompact) {
  EXPECT_EQ(FormatDurationCompact(0), "0ms");
  EXPECT_EQ(FormatDurationCompact(850), "850ms");
  EXPECT_EQ(FormatDurationCompact(42000), "42s");
  EXPECT_EQ(FormatDurationCompact(125000), "2m05s");
  EXPECT_EQ(FormatDurationCompact(7500000), "2h05m");
  EXPECT_EQ(FormatDurationCompact(-1), "n/a");
}

TEST(TextTest, CompactNotifyOutput) {
  EXPECT_EQ(CompactNotifyOutput("  a\n\n b\t c  "), "a b c");
  EXPECT_EQ(CompactNotifyOutput(""), "");
  std::string long_text(300, 'x');
  std::string compact = CompactNotifyOutput(long_text);
  EXPECT_EQ(compact, std::string(179, 'x') + "\xE2\x80\xA6");
  EXPECT_EQ(CompactNotifyOutput(std::string(180, 'y')), std::string(180, 'y'));
}

TEST(TextTest, Characters) {
  EXPECT_EQ(CountChars("h\xC3\xA9llo"), 5u);
  EXPECT_EQ(LastChars("h\xC3\xA9llo", 4), "\xC3\xA9llo");
  EXPECT_EQ(LastChars("abc", 10), "abc");
  EXPECT_EQ(PadRight("run", 9), "run      ");
  EXPECT_EQ(PadRight("completed", 9), "completed");
  EXPECT_EQ(SignalName(9), "SIGKILL");
  EXPECT_EQ(Trim("  a b \n"), "a b");
  EXPECT_EQ(TrimEnd("  a b \n"), "  a b");
}

}  // namespace
}  // namespace sandrun::sessions

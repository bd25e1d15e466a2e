// What `sandrun approvals list` prints (issue 15): the table of pending approvals and of the
// decision record, and that an agent's command text cannot drive the operator's terminal.
#include <gtest/gtest.h>

#include <string>

#include "runner/api/approvals_cmd.h"
#include "sandbox/base/json.h"

namespace sandrun::api {
namespace {

TEST(TerminalLine, ControlsCannotReachTheTerminal) {
  EXPECT_EQ(TerminalLine("echo hi"), "echo hi");
  EXPECT_EQ(TerminalLine("a\x1b]0;pwned\x07z"), "a ]0;pwned z");
  EXPECT_EQ(TerminalLine("a\nb\rc\x7f"), "a b c ");
  EXPECT_EQ(TerminalLine("x\xc2\x9b"
                         "31m"),
            "x?31m");  // U+009B (CSI) as UTF-8
  EXPECT_EQ(TerminalLine("x\x9b"
                         "31m"),
            "x?31m");  // a raw 8-bit CSI
  EXPECT_EQ(TerminalLine("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");  // kept
  // Right-to-left override, zero-width space, isolates: the command must read as it runs.
  EXPECT_EQ(TerminalLine("a\xe2\x80\xae"
                         "b\xe2\x80\x8b"
                         "c\xe2\x81\xa6"
                         "d"),
            "a?b?c?d");
  EXPECT_EQ(TerminalLine(std::string(100, 'a'), 10), "aaaaaaa...");
  // Never cut inside a UTF-8 sequence.
  EXPECT_EQ(TerminalLine("aaaaaa\xe2\x9c\x93zzzz", 10), "aaaaaa...");
}

TEST(ApprovalsTable, ShowsPendingThenTheNewestDecisionsFirst) {
  auto doc = ParseJson(R"({"pending":[{"id":"11111111-x","slug":"11111111","agentId":"main",
    "sessionKey":"B","host":"gateway","createdAtMs":1000,"expiresAtMs":61000,
    "command":"make deploy\u001b[2J"}],
    "decided":[{"slug":"22222222","status":"approved","decision":"allow-once","decidedBy":"ops",
      "decidedAtMs":1764600000000,"agentId":"main","sessionKey":"A","command":"echo one"},
     {"slug":"33333333","status":"denied","decision":"deny","decidedBy":"root",
      "decidedAtMs":1764600001000,"agentId":"main","sessionKey":"A","command":"echo two"}]})");
  ASSERT_TRUE(doc);
  const std::string table = RenderApprovalsTable(*doc, 31000);
  EXPECT_NE(table.find("PENDING (1)"), std::string::npos) << table;
  EXPECT_NE(table.find("11111111  main/B"), std::string::npos) << table;
  EXPECT_NE(table.find("30s"), std::string::npos) << table;  // waiting 30 s, 30 s left
  EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
  EXPECT_NE(table.find("DECIDED (2)"), std::string::npos) << table;
  const size_t newest = table.find("33333333  denied   deny");
  const size_t older = table.find("22222222  approved allow-once");
  ASSERT_NE(newest, std::string::npos) << table;
  ASSERT_NE(older, std::string::npos) << table;
  EXPECT_LT(newest, older);
  EXPECT_NE(table.find("2025-12-01T14:40:00Z"), std::string::npos) << table;
  // At most `max_decided` decisions, and the count says how many there are.
  EXPECT_NE(RenderApprovalsTable(*doc, 31000, 1).find("DECIDED (1 of 2)"), std::string::npos);
}

TEST(ApprovalsTable, AnEmptyListSaysSo) {
  auto doc = ParseJson(R"({"pending":[],"decided":[]})");
  ASSERT_TRUE(doc);
  const std::string table = RenderApprovalsTable(*doc, 0);
  EXPECT_NE(table.find("PENDING (0)"), std::string::npos);
  EXPECT_NE(table.find("DECIDED (0)"), std::string::npos);
  EXPECT_EQ(table.find("STATUS"), std::string::npos);  // no header without rows
}

}  // namespace
}  // namespace sandrun::api

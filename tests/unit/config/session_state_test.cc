// The session state file and the approvals record (issue 15): strict reading with FILE:LINE:COL
// errors, round trips, the one writer's rules (empty states dropped, decided records bounded).
#include "runner/config/session_state.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runner/config/approval_records.h"
#include "tests/support/temp_dir.h"

namespace sandrun::config {
namespace {

using sandrun::testing::TempDir;

Result<SessionStates> Parse(const std::string& text, std::vector<std::string>* warnings = nullptr) {
  return ParseSessionStates(text, "session-state.json", warnings);
}

TEST(SessionStateFile, RoundTrips) {
  SessionStates states;
  SessionState& s = states.agents["main"]["review:1@x"];
  s.host = "gateway";
  s.ask = "always";
  s.node = "mac-mini";
  s.elevated = "full";
  s.updated_at_ms = 1764600000000;
  s.updated_by = "ops-1";
  states.agents["ci"]["main"].security = "allowlist";
  auto back = Parse(SerializeSessionStates(states));
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(*back, states);
}

TEST(SessionStateFile, ValuesAreNormalised) {
  auto s = Parse(R"({"version":1,"agents":{"main":{"A":{"exec":{"host":" Gateway ","ask":"ON-MISS"},
                    "elevated":"FULL"}}}})");
  ASSERT_TRUE(s) << s.error().ToString();
  const SessionState& a = s->agents.at("main").at("A");
  EXPECT_EQ(a.host, "gateway");
  EXPECT_EQ(a.ask, "on-miss");
  EXPECT_EQ(a.elevated, "full");
}

struct Bad {
  const char* text;
  const char* needle;
};
class SessionStateRejects : public ::testing::TestWithParam<Bad> {};
TEST_P(SessionStateRejects, WithWhereAndWhy) {
  auto s = Parse(GetParam().text);
  ASSERT_FALSE(s) << GetParam().text;
  EXPECT_NE(s.error().ToString().find(GetParam().needle), std::string::npos)
      << s.error().ToString();
  EXPECT_NE(s.error().ToString().find("session-state.json:"), std::string::npos);
}
INSTANTIATE_TEST_SUITE_P(
    Table, SessionStateRejects,
    ::testing::Values(
        Bad{R"([])", "version"}, Bad{R"({"agents":{}})", "version"},
        Bad{R"({"version":2,"agents":{}})", "version"},
        Bad{R"({"version":1,"agents":[]})", "agents"},
        Bad{R"({"version":1,"agents":{"../x":{}}})", "agent id"},
        Bad{R"({"version":1,"agents":{"main":{"a/b":{}}}})", "session key"},
        Bad{R"({"version":1,"agents":{"main":{"A":{"exec":{"host":"bogus"}}}}})", "host"},
        Bad{R"({"version":1,"agents":{"main":{"A":{"exec":{"security":"all"}}}}})", "security"},
        Bad{R"({"version":1,"agents":{"main":{"A":{"elevated":"yes"}}}})", "elevated"},
        Bad{R"({"version":1,"agents":{"main":{"A":{"elevated":true}}}})", "elevated"},
        Bad{R"({"version":1,"agents":{"main":{"A":{"exec":{"node":"  "}}}}})", "node"},
        Bad{R"({"version":1,"agents":{"main":{"A":{"updatedAtMs":"x"}}}})", "updatedAtMs"},
        Bad{R"({"version":1, "agents":{"main":{"A":)", ""}));

TEST(SessionStateFile, UnknownKeysAreWarnedAbout) {
  std::vector<std::string> warnings;
  auto s =
      Parse(R"({"version":1,"agents":{"main":{"A":{"elevated":"on","color":"red"}}}})", &warnings);
  ASSERT_TRUE(s);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("color"), std::string::npos);
}

TEST(SessionStateFile, UpdatesDropEmptyStatesAndReadOneSession) {
  TempDir dir("session-state");
  const std::string path = SessionStatePath(dir.path(), "");
  ASSERT_TRUE(UpdateSessionStates(path, [](SessionStates& all) {
    all.agents["main"]["A"].elevated = "full";
    all.agents["main"]["B"];  // empty: not kept
    return Ok();
  }));
  auto a = LoadSessionState(path, "main", "A");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->elevated, "full");
  auto loaded = LoadSessionStates(path);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->file.agents.at("main").count("B"), 0u);
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  ASSERT_TRUE(UpdateSessionStates(path, [](SessionStates& all) {
    all.agents["main"]["A"] = {};
    return Ok();
  }));
  loaded = LoadSessionStates(path);
  ASSERT_TRUE(loaded);
  EXPECT_TRUE(loaded->file.agents.empty());
  // A tenant's file is its own.
  EXPECT_NE(SessionStatePath(dir.path(), "acme"), path);
  EXPECT_NE(SessionStatePath(dir.path(), "acme").find("/tenants/acme/"), std::string::npos);
}

TEST(SessionStateFile, ACorruptFileIsKeptAsideNotTreatedAsEmpty) {
  TempDir dir("session-state");
  const std::string path = SessionStatePath(dir.path(), "");
  std::ofstream(path) << "{\"version\":1,\"agents\":{\"main\":{\"A\":{\"elevated\":\"maybe\"}}}}";
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto loaded = LoadSessionState(path, "main", "A");
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().ToString().find(".corrupt-"), std::string::npos);
  size_t kept = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    kept += e.path().filename().string().rfind("session-state.json.corrupt-", 0) == 0;
  }
  EXPECT_EQ(kept, 1u);
}

ApprovalRecord Record(const std::string& id, const std::string& status) {
  ApprovalRecord r;
  r.id = id;
  r.status = status;
  r.command = "echo " + id;
  r.host = "gateway";
  r.allowed_decisions = {"allow-once", "deny"};
  if (status == "pending") {
    r.request_json = R"({"tool":"exec","command":"echo"})";
    r.principal_json = R"({"agent":"main"})";
  } else {
    r.decision = "allow-once";
    r.decided_by = "ops";
    r.decided_ms = 5;
  }
  return r;
}

TEST(ApprovalRecordsFile, RoundTripsAndUpserts) {
  TempDir dir("session-state");
  const std::string path = ApprovalRecordsPath(dir.path(), "");
  ASSERT_TRUE(UpsertApprovalRecord(path, Record("a", "pending")));
  ASSERT_TRUE(UpsertApprovalRecord(path, Record("b", "pending")));
  ASSERT_TRUE(UpsertApprovalRecord(path, Record("a", "approved")));
  auto loaded = LoadApprovalRecords(path);
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  ASSERT_EQ(loaded->file.records.size(), 2u);
  EXPECT_EQ(loaded->file.records[0], Record("a", "approved"));
  EXPECT_EQ(loaded->file.records[1], Record("b", "pending"));
}

TEST(ApprovalRecordsFile, KeepsEveryPendingAndTheNewestDecided) {
  TempDir dir("session-state");
  const std::string path = ApprovalRecordsPath(dir.path(), "");
  ASSERT_TRUE(UpsertApprovalRecord(path, Record("p", "pending")));
  for (size_t i = 0; i < kMaxDecidedRecords + 5; ++i) {
    ASSERT_TRUE(UpsertApprovalRecord(path, Record("d" + std::to_string(i), "denied")));
  }
  auto loaded = LoadApprovalRecords(path);
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->file.records.size(), kMaxDecidedRecords + 1);
  EXPECT_EQ(loaded->file.records[0].id, "p");
  EXPECT_EQ(loaded->file.records[1].id, "d5");  // the oldest decided ones went
}

TEST(ApprovalRecordsFile, RejectsWhatItCannotRead) {
  for (const char* bad :
       {R"({"version":1,"approvals":{}})", R"({"version":1,"approvals":[{"status":"pending"}]})",
        R"({"version":1,"approvals":[{"id":"a","status":"lost"}]})",
        R"({"version":1,"approvals":[{"id":"a","request":"x"}]})"}) {
    EXPECT_FALSE(ParseApprovalRecords(bad, "approvals-record.json", nullptr)) << bad;
  }
}

}  // namespace
}  // namespace sandrun::config

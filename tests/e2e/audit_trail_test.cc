// The audit log through the binary: every exec decision of the one-shot CLI and of the server is
// one line (decision, host, command and its digest, exit code), an operator's answer to an
// approval is one more with the approval's full id, and `sandrun audit log` reads them back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "sandbox/base/sha256.h"
#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

using ::testing::HasSubstr;

class AuditTrail : public SandrunHome {
 protected:
  void TearDown() override {
    StopServer();
    SandrunHome::TearDown();
  }
  // Gateway runs as the approvals tests make them (no login shell, no sandbox).
  void Gateway(const std::string& security, const std::string& ask) {
    Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"loginShellPath": false, )"
           R"("security": ")" +
           security + R"(", "ask": ")" + ask + "\"}}}");
  }
  // `sandrun audit log --json`, one document per line.
  std::vector<rapidjson::Document> Lines(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"audit", "log", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = Sandrun(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<rapidjson::Document> out;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      auto doc = ParseJson(line);
      EXPECT_TRUE(doc) << line;
      if (doc) out.push_back(std::move(*doc));
    }
    return out;
  }
};

TEST_F(AuditTrail, ARunIsADecisionLineAndAnEndLineARefusalOneLine) {
  Gateway("full", "off");
  ASSERT_EQ(Exec({}, "true").exit_code, 0);
  ASSERT_EQ(Exec({}, "exit 3").exit_code, 3);
  Gateway("deny", "off");
  auto denied = Exec({}, "echo never");
  ASSERT_EQ(denied.exit_code, 125) << denied.err;

  // A run is two lines: the decision before it starts, then its end; a refusal is one.
  auto lines = Lines();
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(JsonString(lines[0], "command"), "true");
  EXPECT_EQ(JsonString(lines[0], "decision"), "allow");
  EXPECT_EQ(JsonString(lines[0], "host"), "gateway");
  EXPECT_EQ(JsonString(lines[0], "tool"), "exec");
  EXPECT_EQ(JsonString(lines[0], "agent"), "main");
  EXPECT_EQ(JsonString(lines[0], "tenant"), "");
  EXPECT_EQ(JsonMember(lines[0], "action"), nullptr);
  EXPECT_EQ(JsonMember(lines[0], "exitCode"), nullptr) << "written before it ran";
  EXPECT_EQ(JsonString(lines[0], "commandSha256"), Sha256Hex("true"));
  EXPECT_EQ(JsonString(lines[1], "action"), "end");
  EXPECT_EQ(JsonInt(lines[1], "exitCode", -1), 0);
  EXPECT_EQ(JsonString(lines[3], "action"), "end");
  EXPECT_EQ(JsonInt(lines[3], "exitCode", -1), 3);
  EXPECT_EQ(JsonString(lines[4], "command"), "echo never");
  EXPECT_EQ(JsonString(lines[4], "decision"), "deny");
  EXPECT_THAT(JsonString(lines[4], "reason"), HasSubstr("denied"));
  EXPECT_EQ(JsonMember(lines[4], "exitCode"), nullptr) << "nothing ran";
  for (const auto& l : lines) EXPECT_GT(JsonInt(l, "time"), 0);

  // The text form and the filters.
  auto text = Sandrun({"audit", "log"});
  EXPECT_THAT(text.out, HasSubstr("\"\"/main - exec:end gateway allow exit=3"));
  EXPECT_EQ(Lines({"--tenant", "acme"}).size(), 0u);
  EXPECT_EQ(Lines({"--since", "1h"}).size(), 5u);
}

TEST_F(AuditTrail, ARunWhoseRunnerIsKilledStillHasItsDecisionLine) {
  Gateway("full", "off");
  const std::string mark = marks_ + "/started";
  pid_t cli = fork();
  if (cli == 0) {
    for (const auto& [k, v] : Env()) setenv(k.c_str(), v.c_str(), 1);
    std::string cmd = "touch " + mark + "; exec sleep 30";
    execl(SANDRUN_BINARY, SANDRUN_BINARY, "exec", "--", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 400 && !std::filesystem::exists(mark); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(std::filesystem::exists(mark)) << "the command ran";
  ::kill(cli, SIGKILL);
  ::waitpid(cli, nullptr, 0);
  auto lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(JsonString(lines[0], "decision"), "allow");
  EXPECT_NE(JsonString(lines[0], "command").find("exec sleep 30"), std::string::npos);
}

TEST_F(AuditTrail, AnApprovalIsAnAskLineAndTheOperatorsAnswerAnother) {
  Gateway("allowlist", "on-miss");
  StartServer();
  const std::string command = "ls " + workspace_;
  auto r = Exec({}, command);
  ASSERT_EQ(r.exit_code, 122) << r.err;
  const std::string id = r.out.substr(0, r.out.size() - 1);
  auto answered = Sandrun({"approvals", "approve", id.substr(0, 8), "deny"});
  ASSERT_EQ(answered.exit_code, 0) << answered.out << answered.err;
  // A bad answer (unknown id) is no operator action.
  EXPECT_NE(Sandrun({"approvals", "approve", "00000000", "deny"}).exit_code, 0);

  auto lines = Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(JsonString(lines[0], "tool"), "exec");
  EXPECT_EQ(JsonString(lines[0], "decision"), "ask");
  EXPECT_EQ(JsonString(lines[0], "approvalId"), id);
  EXPECT_EQ(JsonString(lines[0], "command"), command);
  EXPECT_EQ(JsonString(lines[1], "tool"), "approval");
  EXPECT_EQ(JsonString(lines[1], "action"), "deny");
  EXPECT_EQ(JsonString(lines[1], "decision"), "deny");
  EXPECT_EQ(JsonString(lines[1], "approvalId"), id) << "the full id, not the slug";
  EXPECT_FALSE(JsonString(lines[1], "answeredBy").empty());
}

TEST_F(AuditTrail, AServerThatCannotWriteItsAuditLogDoesNotStart) {
  Gateway("full", "off");
  // A file where the audit directory should be.
  std::ofstream(home_ + "/audit") << "not a directory";
  auto r = RunProcess({SANDRUN_BINARY, "serve"}, Env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("audit"));
  EXPECT_FALSE(std::filesystem::exists(home_ + "/sandrun.sock"));
}

TEST_F(AuditTrail, AServerRunsNothingItCannotRecord) {
  Gateway("full", "off");
  // The log's file a directory: the server does not start.
  std::filesystem::create_directories(home_ + "/audit/audit.jsonl");
  auto r = RunProcess({SANDRUN_BINARY, "serve"}, Env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("audit"));
  std::filesystem::remove_all(home_ + "/audit/audit.jsonl");
  // Started fine, then the log breaks: a command is refused before it runs.
  StartServer();
  ASSERT_EQ(Exec({}, "true").exit_code, 0);
  std::filesystem::remove(home_ + "/audit/audit.jsonl");
  std::filesystem::create_directories(home_ + "/audit/audit.jsonl");
  const std::string mark = marks_ + "/ran";
  auto refused = Exec({}, "touch " + mark);
  EXPECT_EQ(refused.exit_code, 121) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("audit log"));
  EXPECT_FALSE(std::filesystem::exists(mark)) << "it ran unrecorded";
}

}  // namespace
}  // namespace sandrun::testing

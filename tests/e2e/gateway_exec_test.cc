// Gateway (host) execution through the binary: only when policy allows, never as a fallback.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/sandrun_home.h"
#include "tests/support/live_processes.h"

namespace sandrun::testing {
namespace {

using GatewayExec = SandrunHome;

TEST_F(GatewayExec, SandboxOffRunsOnTheHost) {
  Config(R"({"sandbox": {"mode": "off"}})");
  std::string marker = marks_ + "/host-marker";
  auto r = Exec({}, "echo $SANDRUN_SHELL; touch " + marker);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "exec\n");
  EXPECT_TRUE(std::filesystem::exists(marker));
}

TEST_F(GatewayExec, ExplicitSandboxWithSandboxOffFailsClosed) {
  Config(R"({"sandbox": {"mode": "off"}})");
  std::string marker = marks_ + "/must-not-exist";
  auto r = Exec({"--host", "sandbox"}, "touch " + marker);
  EXPECT_EQ(r.exit_code, 123);
  EXPECT_NE(r.err.find("exec host=sandbox requires a sandbox runtime for this session."),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(GatewayExec, ElevatedOffIsAnError) {
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}}})");
  auto r = Exec({"--elevated"}, "id");
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("elevated is not available right now (runtime=sandboxed)."),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Failing gates: enabled"), std::string::npos) << r.err;
}

TEST_F(GatewayExec, ElevatedOnEscapesToTheHost) {
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}},
             "tools": {"elevated": {"enabled": true, "allowFrom": {"cli": ["*"]}}}})");
  std::string marker = marks_ + "/elevated-marker";
  auto r = Exec({"--elevated"}, "touch " + marker + " && echo on-host");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "on-host\n");
  EXPECT_TRUE(std::filesystem::exists(marker));
  EXPECT_EQ(ContainerCount(), 0u) << "no container was needed";
}

TEST_F(GatewayExec, ElevatedAllowFromMissIsAnError) {
  Config(R"({"tools": {"elevated": {"enabled": true, "allowFrom": {"cli": ["ops-*"]}}}})");
  auto r = Exec({"--elevated"}, "id");
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("Failing gates: allowFrom"), std::string::npos) << r.err;
}

TEST_F(GatewayExec, LdPreloadOverrideIsRefused) {
  Config(R"({"sandbox": {"mode": "off"}})");
  std::string marker = marks_ + "/preload-marker";
  auto r = Exec({"--env", "LD_PRELOAD=/tmp/evil.so"}, "touch " + marker);
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("Security Violation: Environment variable 'LD_PRELOAD' is forbidden "
                       "during host execution."),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(GatewayExec, TimeoutKillsTheProcessGroupWithNoOrphans) {
  Config(R"({"sandbox": {"mode": "off"}})");
  auto r = Exec({"--timeout", "1"}, "sleep 41.25 & sleep 41.25; echo never");
  EXPECT_EQ(r.exit_code, 124) << r.out << r.err;
  EXPECT_NE(r.err.find("Command timed out after 1 seconds"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 6.0);
  // Live processes only, read without a stream (one that exits meanwhile cannot throw).
  EXPECT_TRUE(LiveWithArgs("sleep 41.25").empty()) << "no orphan left";
}

TEST_F(GatewayExec, ApproveCommandsAreRefused) {
  Config(R"({"sandbox": {"mode": "off"}})");
  auto r = Exec({}, "/approve abc123 allow-always");
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("exec cannot run /approve commands."), std::string::npos) << r.err;
}

TEST_F(GatewayExec, CommandNotFoundIsAFailedResult) {
  Config(R"({"sandbox": {"mode": "off"}})");
  auto r = Exec({"--json"}, "sandrun-no-such-command-xyz");
  EXPECT_EQ(r.exit_code, 0);
  auto doc = Parsed(r.out);
  EXPECT_EQ(Details(doc, "status"), "failed");
  EXPECT_EQ(JsonInt(*JsonMember(doc, "details"), "exitCode"), 127);
  EXPECT_NE(JsonString(*JsonMember(doc, "content")->Begin(), "text").find("Command not found"),
            std::string::npos);
}

TEST_F(GatewayExec, NonZeroExitIsCompletedWithTheCodeNote) {
  Config(R"({"sandbox": {"mode": "off"}})");
  auto r = Exec({"--json"}, "echo partial; exit 4");
  auto doc = Parsed(r.out);
  EXPECT_EQ(Details(doc, "status"), "completed");
  EXPECT_EQ(JsonString(*JsonMember(doc, "content")->Begin(), "text"),
            "partial\n\n(Command exited with code 4)");
}

TEST_F(GatewayExec, SignalIsReportedByName) {
  Config(R"({"sandbox": {"mode": "off"}})");
  auto r = Exec({"--json"}, "kill -KILL $$");
  auto doc = Parsed(r.out);
  EXPECT_EQ(Details(doc, "status"), "failed");
  EXPECT_NE(JsonString(*JsonMember(doc, "content")->Begin(), "text")
                .find("Command aborted by signal SIGKILL"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace sandrun::testing

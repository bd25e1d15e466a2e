// `sandrun policy check` prints the verdict exec acts on (one loader, one pure decision,
// policy::DecideExec): needs-review without running the reviewer, what askFallback would do
// without an operator, and the sandbox's own refusals (which the check used to skip).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

namespace fs = std::filesystem;

const std::map<std::string, std::string> kNoLoginProbe = {{"SANDRUN_LOAD_SHELL_ENV", "0"}};

class PolicyVerdict : public SandrunHome {
 protected:
  rapidjson::Document Check(const std::string& command) {
    auto r = Sandrun({"policy", "check", "--", command}, kNoLoginProbe);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Parsed(r.out);
  }
};

TEST_F(PolicyVerdict, ModeAutoSaysNeedsReviewAndNeverRunsTheReviewer) {
  std::string asked = marks_ + "/reviewer-ran";
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"mode": "auto",
    "reviewer": {"command": ["/bin/sh", "-c", "touch )" +
         asked + R"(; echo allow", "--"], "timeoutMs": 3000}}}})");
  std::string marker = marks_ + "/ran";
  auto doc = Check("touch " + marker);
  EXPECT_EQ(JsonString(doc, "decision"), "needs-review");
  EXPECT_NE(JsonString(doc, "reason").find("the reviewer would be asked"), std::string::npos);
  const auto* fallback = JsonMember(doc, "askFallback");
  ASSERT_NE(fallback, nullptr);
  EXPECT_FALSE(JsonBool(*fallback, "approved"));
  EXPECT_FALSE(fs::exists(asked)) << "policy check ran the reviewer";
  EXPECT_FALSE(fs::exists(marker));
  // exec asks the reviewer, which allows it once.
  auto r = Exec({}, "touch " + marker, kNoLoginProbe);
  EXPECT_TRUE(fs::exists(asked));
  EXPECT_TRUE(fs::exists(marker)) << r.err;
}

TEST_F(PolicyVerdict, AskSaysWhatAskFallbackDoesAndExecDoesExactlyThat) {
  for (const std::string fallback : {"deny", "full"}) {
    SCOPED_TRACE(fallback);
    Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"security": "full",
      "ask": "always"}}})");
    std::ofstream(home_ + "/exec-approvals.json")
        << R"({"version": 1, "defaults": {"askFallback": ")" << fallback << R"("}})";
    std::string marker = marks_ + "/ran-" + fallback;
    auto doc = Check("touch " + marker);
    EXPECT_EQ(JsonString(doc, "decision"), "ask");
    const auto* f = JsonMember(doc, "askFallback");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(JsonString(*f, "security"), fallback);
    const bool approved = JsonBool(*f, "approved");
    EXPECT_EQ(approved, fallback == "full");
    const auto* decisions = JsonMember(doc, "allowedDecisions");
    ASSERT_NE(decisions, nullptr);
    EXPECT_TRUE(decisions->IsArray() && !decisions->Empty());
    auto r = Exec({"--json"}, "touch " + marker, kNoLoginProbe);
    EXPECT_EQ(fs::exists(marker), approved) << r.out << r.err;
  }
}

TEST_F(PolicyVerdict, SandboxSettingsExecRefusesAreRefusedByTheCheckToo) {
  // A bind of the engine's socket: exec refuses before creating anything; the check used to
  // stop before the sandbox plan and say "allow".
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal",
    "binds": ["/var/run/docker.sock:/var/run/docker.sock"]}}})");
  auto doc = Check("true");
  EXPECT_EQ(JsonString(doc, "decision"), "deny") << JsonString(doc, "reason");
  auto r = Exec({"--json"}, "true");
  auto exec = Parsed(r.out);
  const auto* error = JsonMember(exec, "error");
  ASSERT_NE(error, nullptr) << r.out;
  EXPECT_EQ(JsonString(*error, "message"), JsonString(doc, "reason"));
  EXPECT_TRUE(InstanceId().empty() || ContainerCount() == 0);
}

TEST_F(PolicyVerdict, ACheckWritesNothingToTheStateDir) {
  MinimalSandboxConfig();
  auto doc = Check("echo hi");
  EXPECT_EQ(JsonString(doc, "decision"), "allow");
  EXPECT_EQ(InstanceId(), "") << "policy check created the instance id";
}

}  // namespace
}  // namespace sandrun::testing

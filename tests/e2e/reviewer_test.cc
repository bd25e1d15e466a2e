// Mode auto (SPEC §6.5): a configured reviewer command sees the plan as JSON on stdin and answers
// allow, deny or ask before a human is involved; only single commands it can see whole go to it.
// These run without a server, so "ask" falls through to askFallback (the headless path).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

// The login shell's PATH probe is not what these tests are about (and slow on some machines).
const std::map<std::string, std::string> kNoLoginProbe = {{"SANDRUN_LOAD_SHELL_ENV", "0"}};

class Reviewer : public SandrunHome {
 protected:
  // Gateway, mode auto, the reviewer a shell snippet; its stdin is kept in `seen_`.
  void AutoConfig(const std::string& answer_script) {
    seen_ = home_ + "/reviewer-stdin.json";
    Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"mode": "auto",
      "reviewer": {"command": ["/bin/sh", "-c", "cat > )" +
           seen_ + "; " + answer_script + R"(", "--"], "timeoutMs": 3000}}}})");
  }
  std::string Seen() {
    std::ifstream in(seen_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  std::string seen_;
};

TEST_F(Reviewer, AllowRunsTheCommandOnceAndPersistsNothing) {
  AutoConfig("echo allow");
  std::string marker = marks_ + "/ran";
  auto r = Exec({}, "touch " + marker, kNoLoginProbe);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(marker));
  EXPECT_NE(r.err.find("the reviewer allowed this command once"), std::string::npos) << r.err;
  // The reviewer saw the plan.
  std::string plan = Seen();
  EXPECT_NE(plan.find("\"command\":\"touch " + marker + "\""), std::string::npos) << plan;
  EXPECT_NE(plan.find("\"resolvedPath\":"), std::string::npos) << plan;
  EXPECT_NE(plan.find("\"host\":\"gateway\""), std::string::npos) << plan;
  // Single use: no allowlist entry was written.
  EXPECT_FALSE(std::filesystem::exists(home_ + "/exec-approvals.json") && [&] {
    std::ifstream in(home_ + "/exec-approvals.json");
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return s.find("touch") != std::string::npos;
  }());
}

TEST_F(Reviewer, DenyRefusesAndRunsNothing) {
  AutoConfig("echo DENY");
  std::string marker = marks_ + "/must-not-exist";
  auto r = Exec({}, "touch " + marker, kNoLoginProbe);
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("exec denied: the reviewer denied it (mode auto)"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(Reviewer, AskFallsBackToTheHumanPathWhichIsHeadlessHere) {
  AutoConfig("echo ask");
  std::string marker = marks_ + "/must-not-exist";
  auto r = Exec({}, "touch " + marker, kNoLoginProbe);
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("Headless runs cannot wait for interactive exec approval"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(Reviewer, GarbageTimeoutOrFailureNeverAllows) {
  for (const std::string& script :
       {std::string("echo sure"), std::string("exit 3"), std::string("sleep 10; echo allow")}) {
    AutoConfig(script);
    std::string marker = marks_ + "/must-not-exist";
    auto r = Exec({}, "touch " + marker, kNoLoginProbe);
    EXPECT_EQ(r.exit_code, 125) << script << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << script;
    EXPECT_LT(r.seconds, 8.0) << script << ": the reviewer's timeout (3 s) was not enforced";
  }
}

TEST_F(Reviewer, ChainsAreNotEligible) {
  AutoConfig("echo allow");
  std::string marker = marks_ + "/must-not-exist";
  auto r = Exec({}, "true && touch " + marker, kNoLoginProbe);
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_FALSE(std::filesystem::exists(seen_)) << "the reviewer was asked about a chain";
}

}  // namespace
}  // namespace sandrun::testing

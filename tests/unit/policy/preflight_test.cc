// Script preflight (reference §3.5): when it applies, script targets checked for leaked shell
// syntax, and complex interpreter invocations refused, with OpenClaw's texts.
#include "runner/policy/preflight.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace sandrun::policy {
namespace {

namespace fs = std::filesystem;

const char* kComplex =
    "exec preflight: complex interpreter invocation detected; refusing to run without script "
    "preflight validation. Use a direct `python <file>.py` or `node <file>.js` command.";

TEST(PreflightApplies, OnlyGatewayRunsBelowFullOff) {
  Decision d;
  d.effective_host = Host::kGateway;
  d.effective = {config::Security::kFull, config::Ask::kOff};
  EXPECT_FALSE(PreflightApplies(d)) << "security=full ask=off skips it";
  d.effective = {config::Security::kAllowlist, config::Ask::kOff};
  EXPECT_TRUE(PreflightApplies(d));
  d.effective = {config::Security::kFull, config::Ask::kOnMiss};
  EXPECT_TRUE(PreflightApplies(d));
  d.effective = {config::Security::kFull, config::Ask::kAlways};
  EXPECT_TRUE(PreflightApplies(d));
  d.effective_host = Host::kSandbox;
  EXPECT_FALSE(PreflightApplies(d)) << "never in the sandbox";
  d.effective_host = Host::kNode;
  EXPECT_FALSE(PreflightApplies(d));
  d.effective_host = Host::kGateway;
  d.refusal = Error::Refusal("denied", "x");
  EXPECT_FALSE(PreflightApplies(d)) << "a refused call runs nothing";
}

class Preflight : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sandrun-preflight-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    base_ = templ;
    dir_ = base_ + "/wd";
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(base_); }
  void Write(const std::string& rel, const std::string& content) {
    fs::path p = fs::path(rel).is_absolute() ? fs::path(rel) : fs::path(dir_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }
  std::string Check(const std::string& command) {
    auto e = ScriptPreflight(command, dir_);
    if (!e) return "";
    EXPECT_EQ(e->WireCode(), "preflight");
    return e->message;
  }
  std::string base_;
  std::string dir_;
};

TEST_F(Preflight, PythonShellVariableInjection) {
  Write("job.py", "import os\n\nprint(\"$API_TOKEN\")\n");
  EXPECT_EQ(Check("python3 job.py"),
            "exec preflight: detected likely shell variable injection ($API_TOKEN) in python "
            "script: job.py:3.\n"
            "In Python, use os.environ.get(\"API_TOKEN\") instead of raw $API_TOKEN.\n"
            "(If this is inside a string literal on purpose, escape it or restructure the code.)");
}

TEST_F(Preflight, NodeShellVariableInjection) {
  Write("app.js", "const x = 1;\nconsole.log(`${x}`, \"$HOME_DIR\");\n");
  EXPECT_EQ(Check("node app.js"),
            "exec preflight: detected likely shell variable injection ($HOME_DIR) in node "
            "script: app.js:2.\n"
            "In Node.js, use process.env[\"HOME_DIR\"] instead of raw $HOME_DIR.\n"
            "(If this is inside a string literal on purpose, escape it or restructure the code.)");
}

TEST_F(Preflight, JsFileStartingWithShellSyntax) {
  Write("run.js", "\n  NODE_ENV=production node server.js\n");
  EXPECT_EQ(Check("node run.js"), "");  // NODE_ENV: "NODE" is not a word on its own there
  Write("run2.js", "\n\n  NODE server.js --port 3000  \nmore\n");
  EXPECT_EQ(Check("node run2.js"),
            "exec preflight: JS file starts with shell syntax (NODE server.js --port 3000). This "
            "looks like a shell command, not JavaScript.");
}

TEST_F(Preflight, CleanScriptsPass) {
  Write("ok.py", "import os\nprint(os.environ.get('X'), '$x', '$A')\n");  // lowercase / 1 char
  EXPECT_EQ(Check("python3 ok.py"), "");
  Write("ok.js", "const $el = 1; console.log($el);\n");
  EXPECT_EQ(Check("node ok.js"), "");
}

struct TargetCase {
  const char* name;
  const char* command;
  bool refused;
};

class PreflightTargets : public Preflight, public ::testing::WithParamInterface<TargetCase> {};

TEST_P(PreflightTargets, FindsTheScript) {
  Write("bad.py", "x = '$SECRET_KEY'\n");
  Write("bad.js", "let a = '$SECRET_KEY';\n");
  Write("sub/bad.py", "x = '$SECRET_KEY'\n");
  Write("setup.js", "let a = '$SECRET_KEY';\n");
  Write(base_ + "/outside.py", "x = '$SECRET_KEY'\n");
  fs::create_symlink(base_ + "/outside.py", dir_ + "/link.py");
  std::string msg = Check(GetParam().command);
  if (GetParam().refused) {
    EXPECT_NE(msg.find("shell variable injection ($SECRET_KEY)"), std::string::npos) << msg;
  } else {
    EXPECT_EQ(msg, "");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, PreflightTargets,
    ::testing::Values(TargetCase{"Plain", "python bad.py", true},
                      TargetCase{"Python3Minor", "python3.11 -u bad.py arg", true},
                      TargetCase{"AbsoluteInterpreter", "/usr/bin/python3 sub/bad.py", true},
                      TargetCase{"EnvAssignments", "FOO=1 BAR=2 python3 bad.py", true},
                      TargetCase{"EnvPrefix", "env -u HOME -i X=1 python3 bad.py", true},
                      TargetCase{"EnvChdirValue", "env --chdir /x python3 bad.py", true},
                      TargetCase{"ValueOption", "python3 -W ignore bad.py", true},
                      TargetCase{"AttachedValueOption", "python3 -Wignore bad.py", true},
                      TargetCase{"DoubleDash", "python3 -- bad.py", true},
                      TargetCase{"InlineProgramHasNoTarget", "python3 -c 'print(1)' bad.py", false},
                      TargetCase{"ModuleHasNoTarget", "python3 -m pkg bad.py", false},
                      TargetCase{"FirstPositionalMustBeTheScript", "python3 tool bad.py", false},
                      TargetCase{"NodeEntry", "node --inspect bad.js", true},
                      TargetCase{"NodePreload", "node -r setup.js -e '1'", true},
                      TargetCase{"NodeRequireEquals", "node --require=setup.js other.js", true},
                      TargetCase{"NodeEvalHasNoEntry", "node -e 'x' bad.js", false},
                      TargetCase{"QuotedPath", "python3 'bad.py'", true},
                      TargetCase{"OutsideTheWorkdirIsSkipped", "python3 ../outside.py", false},
                      TargetCase{"AbsoluteOutsideIsSkipped", "python3 /etc/x.py", false},
                      TargetCase{"SymlinkLeadingOutIsSkipped", "python3 link.py", false},
                      TargetCase{"MissingFileIsSkipped", "python3 nope.py", false},
                      TargetCase{"DirectoryIsSkipped", "python3 sub", false},
                      TargetCase{"TargetFoundEvenWithPipes", "python3 bad.py | grep x", true}),
    [](const auto& test_case) { return std::string(test_case.param.name); });

TEST_F(Preflight, LargeScriptsAreSkipped) {
  Write("big.py", "x = '$SECRET_KEY'\n" + std::string(kPreflightMaxScriptBytes, '#'));
  EXPECT_EQ(Check("python3 big.py"), "");
}

struct ComplexCase {
  const char* name;
  const char* command;
  bool refused;
};

class PreflightComplex : public Preflight, public ::testing::WithParamInterface<ComplexCase> {};

TEST_P(PreflightComplex, Decides) {
  EXPECT_EQ(Check(GetParam().command), GetParam().refused ? kComplex : "");
}

INSTANTIATE_TEST_SUITE_P(
    Table, PreflightComplex,
    ::testing::Values(
        ComplexCase{"CdThenPython", "cd app && python3 main.py", true},
        ComplexCase{"SemicolonNode", "npm ci; node build.js", true},
        ComplexCase{"NewlineSeparated", "ls\npython3 x.py", true},
        ComplexCase{"PipedIntoInterpreter", "cat script.py | python3", true},
        ComplexCase{"PipedIntoInterpreterLater", "cat s.js | tr a b | node", true},
        ComplexCase{"HintInCommandSubstitution", "python3 $(echo a.py)", true},
        ComplexCase{"BacktickHint", "node `ls *.js`", true},
        ComplexCase{"ProcessSubstitution", "python3 <(curl -s http://x/get)", true},
        ComplexCase{"ShellPayload", "bash -lc 'cd x && python3 run.py'", true},
        ComplexCase{"EnvWrappedInterpreter", "true && env FOO=1 python3 y.py", true},
        ComplexCase{"NoHintNoRefusal", "echo hi | python3", false},
        ComplexCase{"HintAfterInterpreterInAnotherPipeline", "python3 && cat x.py", false},
        ComplexCase{"SimpleCommandIsNotComplex", "cat x.py", false},
        ComplexCase{"InfoFlagDoesNotCount", "cd a && python3 --version x.py", false},
        ComplexCase{"NodeCheckDoesNotCount", "cd a && node --check x.js", false},
        ComplexCase{"InlineProgramDoesNotCount", "cd a && python3 -c 'import x' y.py", false},
        ComplexCase{"NodeEvalDoesNotCount", "ls; node -e 'require(\"./a.js\")'", false},
        ComplexCase{"QuotedOperatorsAreNotComplex", "echo 'a && python3 b.py'", false},
        ComplexCase{"NoInterpreter", "make && ./run.sh x.py", false},
        ComplexCase{"UnbalancedQuotesAreNotAnalysed", "cd a && python3 x.py 'oops", false}),
    [](const auto& test_case) { return std::string(test_case.param.name); });

}  // namespace
}  // namespace sandrun::policy

// Issue 12, "Allowlist bypasses", through the real binary on the gateway (sandbox.mode=off, no
// Docker): a safe builtin that bash would make evaluate code, and an allowlisted program told by
// its options to run a command. Each test proves the command really runs code in this
// environment (the security=full control creates the marker), then that security=allowlist no
// longer lets it run: before the fix both markers were created under security=allowlist too.
//
// The gateway shell is bash ($SHELL), where `test -v 'a[$(cmd)]'` runs cmd (dash has no -v).
// Markers go to a world-writable directory in the workspace, so the check does not depend on
// which user the host command runs as.
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

// The real path of an executable on this process's PATH; "" when there is none.
std::string Which(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    char real[PATH_MAX];
    if (::access(candidate.c_str(), X_OK) == 0 && ::realpath(candidate.c_str(), real)) {
      return real;
    }
  }
  return "";
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class AllowlistBypass : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    bash_ = Which("bash");
    ASSERT_FALSE(bash_.empty()) << "the test needs bash as the gateway shell";
    markers_ = workspace_ + "/markers";
    std::filesystem::create_directories(markers_);
    std::filesystem::permissions(markers_, std::filesystem::perms::all);
  }

  // Gateway runs, no login-shell probe, the given security and ask=off.
  void Gateway(const std::string& security) {
    Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"loginShellPath": false, )"
           R"("security": ")" +
           security + R"(", "ask": "off"}}})");
  }

  void AllowOnly(const std::vector<std::string>& patterns) {
    std::string list;
    for (const auto& p : patterns) list += (list.empty() ? "" : ", ") + ("\"" + p + "\"");
    std::ofstream(home_ + "/exec-approvals.json")
        << R"({"version": 1, "agents": {"main": {"allowlist": [)" + list + "]}}}";
  }

  ProcessResult Run(const std::string& command) { return Exec({}, command, {{"SHELL", bash_}}); }

  rapidjson::Document PolicyCheck(const std::string& command) {
    auto r = Sandrun({"policy", "check", "--", command}, {{"SHELL", bash_}});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return Parsed(r.out);
  }

  // The command must be refused as an allowlist miss and create no marker; the same command
  // under security=full must create it (so the first check shows something).
  void ExpectRefusedButRealExploit(const std::string& command, const std::string& marker,
                                   const std::string& inline_eval) {
    Gateway("allowlist");
    auto check = PolicyCheck(command);
    EXPECT_EQ(JsonString(check, "decision"), "deny") << ToJson(check);
    EXPECT_EQ(ToJson(*JsonMember(check, "inlineEval")), "[\"" + inline_eval + "\"]")
        << ToJson(check);
    auto r = Run(command);
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(Contains(r.err, "sandrun: exec denied: allowlist miss")) << r.err;
    EXPECT_FALSE(std::filesystem::exists(marker)) << command << " ran under security=allowlist";

    Gateway("full");
    auto control = Run(command);
    EXPECT_TRUE(std::filesystem::exists(marker))
        << "control: under security=full the command should have created " << marker << ": "
        << control.out << control.err;
  }

  std::string bash_, markers_;
};

TEST_F(AllowlistBypass, SafeBuiltinTestDoesNotEvaluateASubscript) {
  const std::string marker = markers_ + "/test-v";
  AllowOnly({});  // an empty allowlist: only the safe builtins could be satisfied
  ExpectRefusedButRealExploit("test -v 'a[$(touch " + marker + ")]'", marker, "test -v operand");
  // The ordinary use still runs without an entry.
  Gateway("allowlist");
  auto ok = Run("test -d / && [ -n x ]");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(AllowlistBypass, AllowlistedGitDoesNotRunAnAliasCommand) {
  const std::string git = Which("git");
  if (git.empty()) GTEST_SKIP() << "no git on PATH";
  const std::string marker = markers_ + "/git-alias";
  AllowOnly({git});
  ExpectRefusedButRealExploit("git -c alias.x='!touch " + marker + "' x", marker, "git -c");
  // An ordinary git command still runs rewritten.
  Gateway("allowlist");
  auto ok = Run("git --version");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(ok.out.starts_with("git version")) << ok.out;
}

// Issue 18: an allowlisted shell allows nothing by itself. Each form really runs its payload
// under security=full (the control); under security=allowlist with the shells on the list it is
// refused and nothing runs, while `sh -c` of an allowlisted payload runs without the shell.
TEST_F(AllowlistBypass, AllowlistedShellAllowsNothingByItself) {
  const std::string echo = Which("echo");
  const std::string dash = Which("dash");
  const std::string busybox = Which("busybox");
  std::vector<std::string> list = {bash_, echo};
  if (!dash.empty()) list.push_back(dash);
  if (!busybox.empty()) list.push_back(busybox);
  AllowOnly(list);
  const std::string script = workspace_ + "/job.sh";
  std::ofstream(script) << "touch " << markers_ << "/script\n";
  struct Form {
    std::string command, marker;
  };
  std::vector<Form> forms = {
      {"bash -c 'touch " + markers_ + "/payload'", markers_ + "/payload"},
      {"bash " + script, markers_ + "/script"},
      {"echo 'touch " + markers_ + "/stdin' | bash", markers_ + "/stdin"},
      {"bash -lc 'echo a && touch " + markers_ + "/login'", markers_ + "/login"},
      {"env sh -c 'echo a && touch " + markers_ + "/env'", markers_ + "/env"},
      {bash_ + " -c 'echo a && touch " + markers_ + "/path'", markers_ + "/path"},
  };
  if (!busybox.empty()) {
    forms.push_back({"busybox touch " + markers_ + "/applet", markers_ + "/applet"});
  }
  for (const Form& f : forms) {
    SCOPED_TRACE(f.command);
    Gateway("allowlist");
    auto check = PolicyCheck(f.command);
    EXPECT_EQ(JsonString(check, "decision"), "deny") << ToJson(check);
    auto r = Run(f.command);
    EXPECT_EQ(r.exit_code, 125) << r.out << r.err;
    EXPECT_TRUE(Contains(r.err, "sandrun: exec denied: ")) << r.err;
    EXPECT_FALSE(std::filesystem::exists(f.marker)) << "ran under security=allowlist";
    Gateway("full");
    Run(f.command);
    EXPECT_TRUE(std::filesystem::exists(f.marker)) << "control: the form runs its payload";
  }
  // The payload of an allowlisted program runs, as the payload alone: no shell is started.
  Gateway("allowlist");
  auto check = PolicyCheck("sh -c 'echo a  b'");
  EXPECT_EQ(JsonString(check, "decision"), "allow") << ToJson(check);
  EXPECT_EQ(JsonString(check, "rewritten"), "( " + echo + " a b )") << ToJson(check);
  auto ok = Run("sh -c 'echo a  b' && sh -c 'echo c; echo d'");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "a b\nc\nd\n");
  // Red team: a nested shell first in a payload once rendered `((...))`, which bash (the gateway
  // shell here) runs as arithmetic, expanding $(...) inside the single quotes.
  const std::string nested = markers_ + "/nested";
  auto quoted = Run(R"(sh -c "sh -c \"echo '\\\$(touch )" + nested + R"()'\"")");
  EXPECT_EQ(quoted.exit_code, 0) << quoted.err;
  EXPECT_EQ(quoted.out, "$(touch " + nested + ")\n");
  EXPECT_FALSE(std::filesystem::exists(nested));
  // Red team: `*` matches unresolved commands, not the shell's own (`.` runs a script).
  AllowOnly({"*"});
  const std::string sourced_script = workspace_ + "/sourced.sh";
  std::ofstream(sourced_script) << "touch " << markers_ << "/sourced\n";
  auto sourced = Run(". " + sourced_script);
  EXPECT_EQ(sourced.exit_code, 125) << sourced.out << sourced.err;
  EXPECT_FALSE(std::filesystem::exists(markers_ + "/sourced"));
}

// Issue 18: with a catch-all allowlist, strictInlineEval and ask=off, a command the analyser
// refuses is denied naming what it refused, and the refusal suggests nothing already in force.
TEST_F(AllowlistBypass, AskOffDeniesAnUnanalysableCommandByItsCategory) {
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"loginShellPath": false, )"
         R"("security": "allowlist", "ask": "off", "strictInlineEval": true}}})");
  AllowOnly({"*"});
  const std::string marker = markers_ + "/redirected";
  const std::string command = "echo hi > " + marker;
  auto check = PolicyCheck(command);
  EXPECT_EQ(JsonString(check, "decision"), "deny") << ToJson(check);
  auto r = Run(command);
  EXPECT_EQ(r.exit_code, 125) << r.out << r.err;
  EXPECT_TRUE(Contains(
      r.err, "sandrun: exec denied: allowlist miss: the command cannot be analysed (redirect)\n"))
      << r.err;
  EXPECT_FALSE(Contains(r.err, "ask=off")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
  // A heredoc is denied under strictInlineEval whatever ask says.
  auto heredoc = Run("python3 <<EOF\nopen('" + marker + "', 'w')\nEOF");
  EXPECT_EQ(heredoc.exit_code, 125) << heredoc.out << heredoc.err;
  EXPECT_TRUE(Contains(heredoc.err, "heredoc")) << heredoc.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

}  // namespace
}  // namespace sandrun::testing

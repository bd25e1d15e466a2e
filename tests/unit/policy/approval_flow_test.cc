// The approvals decision (reference §4.3-§4.4, §5.3-§5.8, §10; SPEC §6): one table of commands
// against a fixed fake file system and allowlist, under the security/ask/strict modes, with the
// verdict, the rewritten command and the inline-eval hits each must give.
#include "runner/policy/approval_flow.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "runner/policy/command_resolution.h"
#include "tests/unit/policy/fake_machine.h"

namespace sandrun::policy {
namespace {

using config::Ask;
using config::Security;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// The fake machine: executables (path -> real path).
const testing::FakeMachine& Machine() {
  static const testing::FakeMachine m = [] {
    testing::FakeMachine f = testing::FakeMachine::WithBins(
        {"ls",   "echo", "cat",    "wc",      "head", "tail",   "cut",     "tr",   "uniq",
         "sort", "grep", "jq",     "python3", "node", "awk",    "sed",     "find", "xargs",
         "env",  "nice", "nohup",  "timeout", "sudo", "bash",   "busybox", "rg",   "git",
         "make", "perl", "stdbuf", "time",    "doas", "printf", "date",    "true", "test"});
    f.files["/usr/bin/sh"] = "/usr/bin/dash";
    f.files["/bin/sh"] = "/usr/bin/dash";
    f.files["/usr/bin/dash"] = "/usr/bin/dash";
    f.files["/usr/bin/python"] = "/usr/bin/python3";
    f.files["/home/u/bin/tool"] = "/home/u/bin/tool";
    f.files["/work/run.sh"] = "/work/run.sh";
    f.files["/opt/skills/bin/skilltool"] = "/opt/skills/bin/skilltool";
    f.files["/usr/local/bin/wc"] = "/usr/local/bin/wc";  // an untrusted copy earlier in PATH
    return f;
  }();
  return m;
}

struct Row {
  const char* name;
  const char* command;
  Security security;
  Ask ask;
  bool strict;
  Verdict verdict;
  const char* expect;  // allow: the command that runs; ask/deny: a substring of the reason
  std::vector<std::string> inline_eval = {};
};

std::ostream& operator<<(std::ostream& os, const Row& r) { return os << r.name; }

class ApprovalFlowTest : public ::testing::TestWithParam<Row> {
 protected:
  ApprovalVerdict Evaluate(const Row& row, const std::vector<config::AllowlistEntry>& entries,
                           const std::string& path = "/usr/bin:/bin") {
    settings_.exec.skill_bin_dirs = {"/opt/skills/bin"};
    return Machine().Evaluate(row.command, row.security, row.ask, row.strict, entries, settings_,
                              path);
  }

  static std::vector<config::AllowlistEntry> Entries() {
    std::vector<config::AllowlistEntry> e;
    auto add = [&](const char* pattern, const char* source = "") {
      config::AllowlistEntry entry;
      entry.id = std::string("id-") + pattern;
      entry.pattern = pattern;
      entry.source = source;
      e.push_back(entry);
    };
    add("/usr/bin/ls");
    add("/usr/bin/echo");
    add("/usr/bin/cat");
    add("~/bin/*");
    add("git");
    add("/usr/bin/python3");
    add("/usr/bin/busybox");
    add("/usr/bin/rg", "allow-always");
    add("/usr/bin/date", "allow-always");
    add("/usr/bin/printf");
    add("/usr/bin/awk");
    add("/usr/bin/find");
    add("/usr/bin/node");
    add("/usr/bin/timeout");
    return e;
  }

  config::AgentSettings settings_;
};

TEST_P(ApprovalFlowTest, Decides) {
  const Row& row = GetParam();
  ApprovalVerdict v = Evaluate(row, Entries());
  EXPECT_EQ(VerdictName(v.verdict), std::string(VerdictName(row.verdict)))
      << row.command << " -> " << v.reason;
  if (row.verdict == Verdict::kAllow) {
    EXPECT_EQ(v.command, row.expect);
  } else {
    EXPECT_THAT(v.reason, HasSubstr(row.expect));
  }
  EXPECT_THAT(v.eval.inline_eval, ElementsAreArray(row.inline_eval));
}

constexpr Security kAL = Security::kAllowlist;
constexpr Security kFull = Security::kFull;
constexpr Ask kOff = Ask::kOff;
constexpr Ask kMiss = Ask::kOnMiss;
constexpr Ask kAlways = Ask::kAlways;
constexpr Verdict kAllow = Verdict::kAllow;
constexpr Verdict kAsk = Verdict::kAsk;
constexpr Verdict kDeny = Verdict::kDeny;

INSTANTIATE_TEST_SUITE_P(
    Table, ApprovalFlowTest,
    ::testing::Values(
        // Allowlist satisfied: the rewritten command runs (argv[0] resolved, args quoted).
        Row{"ls", "ls", kAL, kOff, false, kAllow, "/usr/bin/ls"},
        Row{"ls_echo", "ls; echo hi", kAL, kOff, false, kAllow, "/usr/bin/ls; /usr/bin/echo hi"},
        Row{"and_chain", "ls -la && echo done", kAL, kOff, false, kAllow,
            "/usr/bin/ls -la && /usr/bin/echo 'done'"},
        Row{"or_chain", "ls /nope || echo missing", kAL, kOff, false, kAllow,
            "/usr/bin/ls /nope || /usr/bin/echo missing"},
        Row{"newline", "ls\necho hi", kAL, kOff, false, kAllow, "/usr/bin/ls; /usr/bin/echo hi"},
        Row{"quoted_arg", "echo 'a b'", kAL, kOff, false, kAllow, "/usr/bin/echo 'a b'"},
        Row{"dollar_quoted", "echo '$HOME'", kAL, kOff, false, kAllow, "/usr/bin/echo '$HOME'"},
        Row{"pipeline_safe_bins", "cat f | wc -l", kAL, kOff, false, kAllow,
            "/usr/bin/cat f | /usr/bin/wc -l"},
        Row{"pipeline_head", "echo x | head -n 3", kAL, kOff, false, kAllow,
            "/usr/bin/echo x | /usr/bin/head -n 3"},
        Row{"uniq_c", "cat f | uniq -c", kAL, kOff, false, kAllow,
            "/usr/bin/cat f | /usr/bin/uniq -c"},
        Row{"tr_two", "echo ab | tr a b", kAL, kOff, false, kAllow,
            "/usr/bin/echo ab | /usr/bin/tr a b"},
        Row{"cut_fields", "echo a:b | cut -d : -f 1", kAL, kOff, false, kAllow,
            "/usr/bin/echo a:b | /usr/bin/cut -d : -f 1"},
        Row{"builtins", "cd /tmp && pwd && true", kAL, kOff, false, kAllow,
            "cd /tmp && pwd && true"},
        Row{"test_builtin", "test -d /tmp && ls", kAL, kOff, false, kAllow,
            "test -d /tmp && /usr/bin/ls"},
        Row{"home_glob_pattern", "~/bin/tool --x", kAL, kOff, false, kAllow,
            "/home/u/bin/tool --x"},
        Row{"home_path", "/home/u/bin/tool --x", kAL, kOff, false, kAllow, "/home/u/bin/tool --x"},
        Row{"bare_name_pattern", "git status", kAL, kOff, false, kAllow, "/usr/bin/git status"},
        Row{"bare_name_not_by_path", "/usr/bin/git status", kAL, kOff, false, kDeny,
            "allowlist miss"},
        Row{"env_transparent", "env ls", kAL, kOff, false, kAllow, "/usr/bin/env /usr/bin/ls"},
        Row{"env_dashdash", "env -- ls", kAL, kOff, false, kAllow, "/usr/bin/env -- /usr/bin/ls"},
        Row{"nice_wrapped", "nice -n 5 ls", kAL, kOff, false, kAllow,
            "/usr/bin/nice -n 5 /usr/bin/ls"},
        Row{"timeout_wrapped", "timeout 5 ls", kAL, kOff, false, kAllow,
            "/usr/bin/timeout 5 /usr/bin/ls"},
        Row{"skills", "skilltool run", kAL, kOff, false, kDeny, "allowlist miss"},
        Row{"shell_wrapper_chain", "sh -c 'ls && echo hi'", kAL, kOff, false, kAllow,
            "( /usr/bin/ls && /usr/bin/echo hi )"},
        // The payload runs rewritten too: a `cd` inside cannot make ./x mean another file.
        Row{"shell_wrapper_cd", "sh -c 'cd /tmp && ls'", kAL, kOff, false, kAllow,
            "( cd /tmp && /usr/bin/ls )"},
        Row{"busybox_shell", "busybox sh -c 'ls'", kAL, kOff, false, kAllow, "( /usr/bin/ls )"},
        Row{"python_allowlisted", "python3 script.py", kAL, kOff, false, kAllow,
            "/usr/bin/python3 script.py"},
        // Misses under ask=off are denied; under on-miss they ask.
        Row{"miss_off", "cat f | sort", kAL, kOff, false, kDeny, "exec denied: allowlist miss"},
        Row{"miss_onmiss", "cat f | sort", kAL, kMiss, false, kAsk, "allowlist miss"},
        Row{"pipe_interpreter", "echo x | python2", kAL, kOff, false, kDeny, "allowlist miss"},
        Row{"pipe_node_unlisted", "echo x | perl", kAL, kMiss, false, kAsk, "allowlist miss"},
        Row{"unknown_cmd", "nosuchcmd", kAL, kMiss, false, kAsk, "was not found"},
        Row{"jq_never_safe", "echo '{}' | jq .", kAL, kOff, false, kDeny, "allowlist miss"},
        Row{"head_numeric", "cat f | head -5", kAL, kOff, false, kDeny, "allowlist miss"},
        Row{"tail_follow", "cat f | tail -f", kAL, kOff, false, kDeny, "allowlist miss"},
        Row{"wc_file_arg", "wc -l /etc/passwd", kAL, kOff, false, kDeny, "allowlist miss"},
        Row{"sudo_blocked", "sudo ls", kAL, kMiss, false, kAsk, "sudo is never allowed"},
        Row{"doas_blocked", "doas ls", kAL, kOff, false, kDeny, "allowlist miss"},
        Row{"stdbuf_blocked", "stdbuf -o0 ls", kAL, kMiss, false, kAsk, "stdbuf"},
        Row{"env_modifier", "env FOO=1 ls", kAL, kMiss, false, kAsk, "env with options"},
        Row{"env_flag", "env -i ls", kAL, kMiss, false, kAsk, "env with options"},
        Row{"assignment_prefix", "FOO=1 ls", kAL, kMiss, false, kDeny, "variable assignments"},
        Row{"shell_single_payload", "sh -c 'ls'", kAL, kMiss, false, kAllow, "( /usr/bin/ls )"},
        Row{"bash_lc", "bash -lc 'ls && echo'", kAL, kMiss, false, kDeny, "login shell"},
        Row{"env_sh_c", "env sh -c 'ls'", kAL, kMiss, false, kDeny, "behind a wrapper"},
        Row{"wrapper_depth", "nice nice nice nice nice ls", kAL, kMiss, false, kAsk,
            "nested wrappers"},
        Row{"glob_needs_approval", "ls *.txt", kAL, kMiss, false, kAsk, "glob"},
        Row{"glob_off_denied", "ls *.txt", kAL, kOff, false, kDeny, "allowlist miss"},
        Row{"brace_needs_approval", "echo {a,b}", kAL, kMiss, false, kAsk, "glob"},
        Row{"tilde_arg", "ls ~", kAL, kMiss, false, kAsk, "glob"},
        // Analysis failures.
        Row{"redirect", "ls > out.txt", kAL, kMiss, false, kAsk, "redirect"},
        Row{"redirect_off", "ls > out.txt", kAL, kOff, false, kDeny,
            "allowlist miss: the command cannot be analysed (redirect)"},
        Row{"cmd_subst", "echo $(whoami)", kAL, kMiss, false, kAsk, "command-substitution"},
        Row{"variable", "echo $HOME", kAL, kMiss, false, kAsk, "dynamic-argument"},
        Row{"heredoc", "cat <<EOF\nx\nEOF", kAL, kMiss, false, kAsk, "heredoc"},
        Row{"background", "ls &", kAL, kMiss, false, kAsk, "background"},
        Row{"subshell", "(ls)", kAL, kMiss, false, kAsk, "subshell"},
        Row{"double_semicolon", "ls ;; echo x", kAL, kMiss, false, kAsk, "syntax-error"},
        // security=full: runs as written unless ask or strict inline eval says otherwise.
        Row{"full_anything", "ls > out.txt", kFull, kOff, false, kAllow, "ls > out.txt"},
        Row{"full_ask_always", "ls", kFull, kAlways, false, kAsk, "every time"},
        Row{"full_onmiss_runs", "sort f", kFull, kMiss, false, kAllow, "sort f"},
        // ask=always asks even when satisfied.
        Row{"always_satisfied", "ls", kAL, kAlways, false, kAsk, "every time"},
        // allow-always entries make a command durable: no approval even on-miss.
        Row{"durable_rg", "rg -n TODO", kAL, kMiss, false, kAllow, "/usr/bin/rg -n TODO"},
        Row{"durable_chain", "rg x && date", kAL, kMiss, false, kAllow,
            "/usr/bin/rg x && /usr/bin/date"},
        // strictInlineEval: every interpreter form asks, even under full and when allowlisted.
        Row{"strict_python_c",
            "python3 -c 'print(1)'",
            kAL,
            kOff,
            true,
            kAsk,
            "inline-eval",
            {"python3 -c"}},
        Row{"strict_python_full",
            "python3 -c 'print(1)'",
            kFull,
            kOff,
            true,
            kAsk,
            "inline-eval",
            {"python3 -c"}},
        Row{"strict_node_e", "node -e 1", kAL, kOff, true, kAsk, "inline-eval", {"node -e"}},
        Row{"strict_node_eval",
            "node --eval 1",
            kFull,
            kOff,
            true,
            kAsk,
            "inline-eval",
            {"node --eval"}},
        Row{"strict_awk",
            "echo x | awk '{print}'",
            kAL,
            kOff,
            true,
            kAsk,
            "inline-eval",
            {"awk inline program"}},
        Row{"strict_find_exec",
            "find . -exec ls {} \\;",
            kFull,
            kOff,
            true,
            kAsk,
            "inline-eval",
            {"find -exec"}},
        Row{"strict_sed",
            "echo x | sed s/a/b/",
            kFull,
            kOff,
            true,
            kAsk,
            "inline-eval",
            {"sed inline program"}},
        Row{"strict_xargs",
            "echo x | xargs ls",
            kFull,
            kOff,
            true,
            kAsk,
            "inline-eval",
            {"xargs inline command", "xargs (runs commands itself)"}},
        Row{"strict_perl", "perl -E 1", kFull, kOff, true, kAsk, "inline-eval", {"perl -e"}},
        Row{"strict_unanalysable", "echo $(id)", kFull, kOff, true, kAsk, "inline-eval"},
        Row{"strict_python_file_ok", "python3 script.py", kAL, kOff, true, kAllow,
            "/usr/bin/python3 script.py"},
        Row{"strict_timeout_python",
            "timeout 5 python3 -c 1",
            kFull,
            kOff,
            true,
            kAsk,
            "inline-eval",
            {"python3 -c"}},
        Row{"strict_shell_payload",
            "sh -c 'python3 -c 1 && ls'",
            kFull,
            kOff,
            true,
            kAsk,
            "inline-eval",
            {"python3 -c"}},
        Row{"no_strict_python_c",
            "python3 -c 1",
            kAL,
            kOff,
            false,
            kAllow,
            "/usr/bin/python3 -c 1",
            {"python3 -c"}}),
    [](const ::testing::TestParamInfo<Row>& p) { return std::string(p.param.name); });

TEST_F(ApprovalFlowTest, FileSecurityDenyWinsOverFull) {
  Row row{"", "ls", kFull, kOff, false, kDeny, ""};
  settings_.exec.strict_inline_eval = false;
  Decision d;
  d.effective_host = Host::kGateway;
  d.effective.security = Security::kFull;
  ApprovalInputs in;
  in.settings = &settings_;
  in.approvals.security = Security::kDeny;
  ApprovalVerdict v = EvaluateApprovals(d, "ls", in);
  EXPECT_EQ(v.verdict, Verdict::kDeny);
  EXPECT_EQ(v.reason, "exec denied: host=gateway security=deny");
}

TEST_F(ApprovalFlowTest, AllowAlwaysPersistsPathsNeverShellsOrInterpreters) {
  auto v = Evaluate({"", "cat f | sort -n", kAL, kMiss, false, kAsk, ""}, Entries());
  ASSERT_EQ(v.verdict, Verdict::kAsk);
  EXPECT_THAT(v.always_patterns, ElementsAreArray({"/usr/bin/cat", "/usr/bin/sort"}));
  EXPECT_THAT(v.allowed_decisions, ElementsAreArray({"allow-once", "allow-always", "deny"}));
  // An interpreter yields no path: the exact command is persisted instead.
  v = Evaluate({"", "echo x | perl x.pl", kAL, kMiss, false, kAsk, ""}, Entries());
  ASSERT_EQ(v.always_patterns.size(), 1u);
  EXPECT_EQ(v.always_patterns[0].rfind("=command:", 0), 0u);
  // A shell wrapper with a chain persists its parts' paths, never the shell.
  v = Evaluate({"", "sh -c 'sort a && uniq b'", kAL, kMiss, false, kAsk, ""}, {});
  EXPECT_THAT(v.always_patterns, ElementsAreArray({"/usr/bin/sort", "/usr/bin/uniq"}));
  // Inline eval: allow-always is not offered and nothing would be persisted.
  v = Evaluate({"", "python3 -c 1", kAL, kMiss, true, kAsk, ""}, Entries());
  EXPECT_THAT(v.allowed_decisions, ElementsAreArray({"allow-once", "deny"}));
  EXPECT_TRUE(v.always_patterns.empty());
  // ask=always: allow-always means nothing.
  v = Evaluate({"", "ls", kAL, kAlways, false, kAsk, ""}, Entries());
  EXPECT_THAT(v.allowed_decisions, ElementsAreArray({"allow-once", "deny"}));
  // A glob word: the exact command (the pattern alone would still ask next time).
  v = Evaluate({"", "sort *.txt", kAL, kMiss, false, kAsk, ""}, Entries());
  ASSERT_EQ(v.always_patterns.size(), 1u);
  EXPECT_EQ(v.always_patterns[0], config::ExactCommandPattern("sort *.txt"));
}

TEST_F(ApprovalFlowTest, ExactCommandEntryMakesThatCommandDurable) {
  auto entries = Entries();
  config::AllowlistEntry exact;
  exact.id = "exact";
  exact.pattern = config::ExactCommandPattern("sort *.txt");
  exact.source = "allow-always";
  entries.push_back(exact);
  auto v = Evaluate({"", "sort *.txt", kAL, kMiss, false, kAsk, ""}, entries);
  EXPECT_EQ(v.verdict, Verdict::kAllow) << v.reason;
  EXPECT_EQ(v.command, "sort *.txt");  // not satisfied: runs as approved, not rewritten
  v = Evaluate({"", "sort *.md", kAL, kMiss, false, kAsk, ""}, entries);
  EXPECT_EQ(v.verdict, Verdict::kAsk);
}

TEST_F(ApprovalFlowTest, SafeBinsComeOnlyFromTrustedDirs) {
  // wc found first in /usr/local/bin (not trusted): not a safe bin.
  auto v = Evaluate({"", "cat f | wc -l", kAL, kOff, false, kDeny, ""}, Entries(),
                    "/usr/local/bin:/usr/bin");
  EXPECT_EQ(v.verdict, Verdict::kDeny);
  v = Evaluate({"", "cat f | wc -l", kAL, kOff, false, kAllow, ""}, Entries(), "/usr/bin");
  EXPECT_EQ(v.verdict, Verdict::kAllow);
}

TEST(AskFallbackTest, FollowsAskFallback) {
  ApprovalVerdict v;
  v.command = "ls";
  v.eval.analysis_ok = true;
  v.eval.satisfied = true;
  v.eval.rewritten = "/usr/bin/ls";
  v.ask_fallback = Security::kFull;
  EXPECT_TRUE(ResolveAskFallback(v).approved);
  EXPECT_EQ(ResolveAskFallback(v).command, "ls");
  v.ask_fallback = Security::kAllowlist;
  EXPECT_TRUE(ResolveAskFallback(v).approved);
  EXPECT_EQ(ResolveAskFallback(v).command, "/usr/bin/ls");
  v.eval.satisfied = false;
  EXPECT_FALSE(ResolveAskFallback(v).approved);
  EXPECT_EQ(ResolveAskFallback(v).reason, "approval-timeout (allowlist-miss)");
  v.ask_fallback = Security::kDeny;
  EXPECT_EQ(ResolveAskFallback(v).reason, "approval-timeout");
  v.ask_fallback = Security::kFull;
  v.inline_eval_required = true;  // a fallback never approves an inline eval
  EXPECT_FALSE(ResolveAskFallback(v).approved);
}

}  // namespace
}  // namespace sandrun::policy

namespace sandrun::policy {
namespace {

// The real-file-system lookup with a PathScan: a name absent from a directory is skipped while
// the directory is unchanged, and found as soon as it appears or becomes executable.
TEST(PathScanTest, AbsentNamesAreForgottenWhenTheDirectoryChanges) {
  char templ[] = "/tmp/sandrun-pathscan-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  const std::string dir = templ;
  ResolveContext ctx;
  ctx.path = dir;
  ctx.cwd = "/";
  auto resolve = [&] {
    PathScan scan;
    ctx.scan = &scan;
    return ResolveExecutable("pathscan-tool", ctx);
  };
  EXPECT_FALSE(resolve().resolved());
  EXPECT_FALSE(resolve().resolved());  // remembered as absent: still correct
  const std::string tool = dir + "/pathscan-tool";
  { std::ofstream(tool) << "#!/bin/sh\n"; }
  std::filesystem::permissions(tool, std::filesystem::perms::owner_read);
  EXPECT_FALSE(resolve().resolved()) << "not executable yet";
  std::filesystem::permissions(tool, std::filesystem::perms::owner_all);
  ExecutableResolution r = resolve();  // chmod does not change the directory: never cached
  EXPECT_TRUE(r.resolved());
  EXPECT_EQ(r.resolved_path, tool);
  EXPECT_EQ(r.real_path, std::filesystem::canonical(tool).string());
  std::filesystem::remove(tool);
  EXPECT_FALSE(resolve().resolved());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sandrun::policy

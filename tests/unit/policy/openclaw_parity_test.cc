// Issue 18: never more permissive than OpenClaw 2026.9.6. One table of commands x configs (an
// allowlist with shells and busybox on it, a glob allowlist, a `*` allowlist; strictInlineEval
// on/off; ask off/on-miss), each row with OpenClaw's decision, written from its documented
// behaviour (reference §4.4, §5, §10 and the issue's own observations), and sandrun's. Every row
// checks sandrun's verdict, and that sandrun is never more permissive than OpenClaw (deny >
// ask > allow) except for the divergences the README lists:
//   - kSafeBinFlags: safe bins accept the obviously harmless boolean flags (SPEC §6.3);
//   - kShellRewrite: `sh -c '<satisfied payload>'` runs as the rewritten payload in a subshell,
//     without the shell (SPEC §10); OpenClaw asks for single-command payloads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "runner/policy/approval_flow.h"
#include "runner/policy/exec_decision.h"
#include "runner/policy/shell_analysis.h"
#include "tests/unit/policy/fake_machine.h"

namespace sandrun::policy {
namespace {

using config::Ask;
using config::Security;
using testing::FakeMachine;
using ::testing::HasSubstr;
using ::testing::Not;

const FakeMachine& Machine() {
  static const FakeMachine m = [] {
    FakeMachine f = FakeMachine::WithBins(
        {"ls",      "echo", "cat",  "wc",    "head",    "tail",   "cut",  "tr",   "uniq",
         "sort",    "grep", "jq",   "rm",    "python3", "node",   "awk",  "sed",  "find",
         "xargs",   "env",  "nice", "nohup", "timeout", "sudo",   "bash", "zsh",  "fish",
         "busybox", "git",  "make", "perl",  "stdbuf",  "printf", "true", "test", "dash"});
    f.files["/usr/bin/sh"] = "/usr/bin/dash";
    f.files["/bin/sh"] = "/usr/bin/dash";
    f.files["/home/u/bin/tool"] = "/home/u/bin/tool";
    f.files["/home/u/bin/mysh"] = "/usr/bin/bash";  // a shell under another name
    f.files["/work/run.sh"] = "/work/run.sh";
    f.files["/usr/bin/ksh93"] = "/usr/bin/ksh93";              // shells under versioned or
    f.files["/usr/bin/bash-static"] = "/usr/bin/bash-static";  // build names
    return f;
  }();
  return m;
}

enum class List { kShells, kGlob, kStar };
constexpr List kShells = List::kShells;  // shells, busybox, python3, xargs listed by path
constexpr List kGlob = List::kGlob;      // /usr/bin/*
constexpr List kStar = List::kStar;      // *

std::vector<config::AllowlistEntry> EntriesFor(List list) {
  switch (list) {
    case List::kShells:
      return FakeMachine::Entries({"/usr/bin/ls", "/usr/bin/echo", "/usr/bin/cat", "/usr/bin/bash",
                                   "/usr/bin/dash", "/usr/bin/zsh", "/usr/bin/busybox",
                                   "/usr/bin/python3", "/usr/bin/xargs", "/usr/bin/git",
                                   "~/bin/*"});
    case List::kGlob:
      return FakeMachine::Entries({"/usr/bin/*"});
    case List::kStar:
      return FakeMachine::Entries({"*"});
  }
  return {};
}

constexpr const char* kSafeBinFlags = "safe-bin boolean flags (SPEC §6.3)";
constexpr const char* kShellRewrite = "sh -c runs as its rewritten payload (SPEC §10)";

struct Row {
  const char* name;
  List list;
  bool strict;
  Ask ask;
  const char* command;
  Verdict openclaw;
  Verdict sandrun;
  const char* divergence = "";  // a documented divergence, "" for none
  const char* expect = "";      // allow: the command that runs; else a substring of the reason
};

std::ostream& operator<<(std::ostream& os, const Row& r) { return os << r.name; }

int Rank(Verdict v) {
  switch (v) {
    case Verdict::kAllow:
      return 0;
    case Verdict::kAsk:
      return 1;
    case Verdict::kDeny:
      return 2;
  }
  return 2;
}

class OpenClawParityTest : public ::testing::TestWithParam<Row> {};

TEST_P(OpenClawParityTest, NeverMorePermissive) {
  const Row& row = GetParam();
  config::AgentSettings settings;
  settings.exec.safe_bins =
      std::vector<std::string>{"cut", "uniq", "head", "tail", "tr", "wc", "sort"};
  settings.exec.skill_bin_dirs = {};
  ApprovalVerdict v = Machine().Evaluate(row.command, Security::kAllowlist, row.ask, row.strict,
                                         EntriesFor(row.list), settings);
  EXPECT_EQ(VerdictName(v.verdict), std::string(VerdictName(row.sandrun)))
      << row.command << " -> " << v.reason;
  if (*row.expect != '\0') {
    if (row.sandrun == Verdict::kAllow) {
      EXPECT_EQ(v.command, row.expect);
    } else {
      EXPECT_THAT(v.reason, HasSubstr(row.expect));
    }
  }
  if (*row.divergence == '\0') {
    EXPECT_GE(Rank(v.verdict), Rank(row.openclaw))
        << row.command << ": sandrun " << VerdictName(v.verdict) << ", OpenClaw "
        << VerdictName(row.openclaw) << " (" << v.reason << ")";
  }
  if (row.divergence == kShellRewrite && v.verdict == Verdict::kAllow) {
    // The divergence holds only because the shell itself no longer runs.
    for (const char* shell : {"/usr/bin/sh", "/usr/bin/dash", "/usr/bin/bash", "/bin/sh", "-c"}) {
      EXPECT_THAT(v.command, Not(HasSubstr(shell))) << row.command;
    }
  }
}

constexpr Ask kOff = Ask::kOff;
constexpr Ask kMiss = Ask::kOnMiss;
constexpr Verdict A = Verdict::kAllow;
constexpr Verdict Q = Verdict::kAsk;
constexpr Verdict D = Verdict::kDeny;

INSTANTIATE_TEST_SUITE_P(
    Table, OpenClawParityTest,
    ::testing::Values(
        // --- An allowlist with shells, busybox, python3 and xargs on it ----------------------
        Row{"ls", kShells, false, kOff, "ls", A, A, "", "/usr/bin/ls"},
        // An allowlisted shell allows nothing by itself: its payload decides.
        Row{"bash_c_unlisted", kShells, false, kOff, "bash -c 'rm -rf /tmp/x'", D, D, "",
            "exec denied: allowlist miss"},
        Row{"bash_c_unlisted_ask", kShells, false, kMiss, "bash -c 'rm -rf /tmp/x'", Q, Q, "",
            "shell payload: no allowlist entry matches /usr/bin/rm"},
        Row{"bash_c_chain", kShells, false, kOff, "bash -c 'ls && echo hi'", A, A, "",
            "( /usr/bin/ls && /usr/bin/echo hi )"},
        Row{"sh_c_single", kShells, false, kMiss, "sh -c 'ls'", Q, A, kShellRewrite,
            "( /usr/bin/ls )"},
        Row{"sh_c_single_off", kShells, false, kOff, "sh -c 'ls -la'", Q, A, kShellRewrite,
            "( /usr/bin/ls -la )"},
        Row{"sh_c_nested", kShells, false, kOff, "sh -c 'sh -c \"ls && echo x\"'", Q, A,
            kShellRewrite, "( ( /usr/bin/ls && /usr/bin/echo x ) )"},
        Row{"sh_c_in_chain", kShells, false, kOff, "echo a && sh -c 'ls || echo b'", A, A, "",
            "/usr/bin/echo a && ( /usr/bin/ls || /usr/bin/echo b )"},
        Row{"bash_script", kShells, false, kOff, "bash run.sh", D, D},
        Row{"bash_script_ask", kShells, false, kMiss, "bash run.sh", Q, Q, "",
            "no analysable payload"},
        Row{"bash_stdin", kShells, false, kOff, "echo ls | bash", D, D},
        Row{"bash_s", kShells, false, kMiss, "bash -s", Q, Q},
        Row{"bash_i", kShells, false, kMiss, "bash -i", Q, Q},
        Row{"sh_c_extra_args", kShells, false, kMiss, "sh -c 'ls' zero one", Q, Q},
        Row{"bash_lc", kShells, false, kMiss, "bash -lc 'ls'", D, D, "", "login shell"},
        Row{"bash_l_c", kShells, false, kOff, "bash -l -c 'ls && echo x'", D, D, "", "login shell"},
        Row{"bin_sh_path", kShells, false, kMiss, "/bin/sh -c 'ls'", D, D, "", "given by path"},
        Row{"bash_path_chain", kShells, false, kMiss, "/usr/bin/bash -c 'ls && echo x'", D, D},
        Row{"shell_link_other_name", kShells, false, kMiss, "~/bin/mysh -c 'ls'", D, D, "",
            "given by path"},
        Row{"env_sh_c", kShells, false, kMiss, "env sh -c 'ls'", D, D, "", "behind a wrapper"},
        Row{"nice_sh_c", kShells, false, kMiss, "nice sh -c 'ls'", D, D, "", "behind a wrapper"},
        Row{"nohup_sh_c", kShells, false, kMiss, "nohup sh -c 'ls'", D, D},
        Row{"timeout_bash_c", kShells, false, kOff, "timeout 5 bash -c 'ls && echo'", D, D},
        Row{"payload_refused_inside", kShells, false, kMiss, "sh -c 'ls && env sh -c ls'", D, D, "",
            "behind a wrapper"},
        Row{"zsh_c_chain", kShells, false, kOff, "zsh -c 'ls; echo x'", A, A, "",
            "( /usr/bin/ls; /usr/bin/echo x )"},
        Row{"fish_c", kShells, false, kMiss, "fish -c 'ls'", Q, Q, "", "POSIX sh"},
        Row{"payload_redirect", kShells, false, kOff, "sh -c 'ls > /tmp/x'", D, D},
        Row{"payload_redirect_ask", kShells, false, kMiss, "sh -c 'ls > /tmp/x'", Q, Q, "",
            "shell payload cannot be analysed (redirect)"},
        // Multi-call binaries: only shell applets, judged by their payload.
        Row{"busybox_sh_c", kShells, false, kOff, "busybox sh -c 'ls'", A, A, "",
            "( /usr/bin/ls )"},
        Row{"busybox_sh_c_unlisted", kShells, false, kOff, "busybox sh -c 'rm x'", D, D},
        Row{"busybox_rm", kShells, false, kOff, "busybox rm -rf /tmp/x", D, D, "",
            "allowlist miss"},
        Row{"busybox_rm_ask", kShells, false, kMiss, "busybox rm -rf /tmp/x", Q, Q, "",
            "multi-call binary"},
        Row{"busybox_ls", kShells, false, kOff, "busybox ls", D, D},
        Row{"busybox_alone", kShells, false, kMiss, "busybox", Q, Q},
        Row{"busybox_path_sh", kShells, false, kMiss, "/usr/bin/busybox sh -c 'ls'", D, D, "",
            "given by path"},
        // xargs without a command runs echo: not satisfied, an inline eval under strict.
        Row{"xargs_bare", kShells, false, kOff, "echo x | xargs", D, D},
        Row{"xargs_bare_ask", kShells, false, kMiss, "echo x | xargs -0", Q, Q},
        Row{"xargs_bare_strict", kShells, true, kOff, "echo x | xargs", Q, Q, "", "inline-eval"},
        // Interpreters.
        Row{"python_c", kShells, false, kOff, "python3 -c 'print(1)'", A, A},
        Row{"python_c_strict", kShells, true, kOff, "python3 -c 'print(1)'", Q, Q},
        Row{"python_heredoc_strict", kShells, true, kMiss, "python3 <<EOF\nprint(1)\nEOF", D, D, "",
            "heredoc"},
        Row{"python_heredoc_strict_off", kShells, true, kOff, "python3 <<'EOF'\nprint(1)\nEOF", D,
            D},
        Row{"python_heredoc", kShells, false, kMiss, "python3 <<EOF\nprint(1)\nEOF", Q, Q},
        Row{"heredoc_in_payload_strict", kShells, true, kMiss,
            "sh -c 'python3 <<EOF\nprint(1)\nEOF'", D, D, "", "heredoc"},
        Row{"herestring_strict", kShells, true, kMiss, "python3 <<< 'print(1)'", Q, D},
        Row{"python_behind_sudo_strict", kShells, true, kMiss, "sudo python3 -c 1", Q, Q, "",
            "inline-eval"},
        // Environment and wrappers.
        Row{"assignment", kShells, false, kMiss, "FOO=1 ls", D, D, "", "variable assignments"},
        Row{"env_ls", kShells, false, kOff, "env ls", A, A},
        Row{"env_dashdash", kShells, false, kOff, "env -- ls", A, A},
        Row{"stdbuf", kShells, false, kMiss, "stdbuf -o0 ls", Q, Q},
        Row{"sudo", kShells, false, kOff, "sudo ls", D, D},
        Row{"tilde_command", kShells, false, kOff, "~/bin/tool --x", A, A, "",
            "/home/u/bin/tool --x"},
        Row{"tilde_glob_command", kShells, false, kMiss, "~/bin/t*", Q, Q},
        Row{"redirect", kShells, false, kOff, "ls > out.txt", D, D, "", "(redirect)"},
        Row{"git", kShells, false, kOff, "git status", A, A},
        // Safe bins (sort listed in tools.exec.safeBins for these rows).
        Row{"wc_l", kShells, false, kOff, "cat f | wc -l", A, A},
        Row{"uniq_c", kShells, false, kOff, "cat f | uniq -c", A, A},
        Row{"sort_n", kShells, false, kOff, "cat f | sort -n", D, A, kSafeBinFlags},
        Row{"head_5", kShells, false, kOff, "cat f | head -5", D, D},
        Row{"tail_f", kShells, false, kOff, "cat f | tail -f", D, D},
        Row{"jq", kShells, false, kOff, "echo '{}' | jq .", D, D},
        // Stricter than OpenClaw, deliberately (README): these ask or are denied.
        Row{"command_builtin", kShells, false, kMiss, "command ls", A, Q},
        Row{"exec_builtin", kShells, false, kMiss, "exec ls", A, Q},
        Row{"builtin_builtin", kShells, false, kMiss, "builtin cd /tmp", A, Q},
        Row{"time_keyword", kShells, false, kMiss, "time ls", A, Q},
        Row{"negation", kShells, false, kMiss, "! ls", A, Q},
        Row{"pipe_stderr", kShells, false, kMiss, "ls |& cat", A, Q},
        Row{"ansi_c_quote", kShells, false, kMiss, "echo $'a'", A, Q},
        Row{"trailing_cr", kShells, false, kMiss, "ls\r", A, Q},
        // --- A glob allowlist: /usr/bin/* -----------------------------------------------------
        Row{"glob_ls", kGlob, false, kOff, "ls -la", A, A},
        Row{"glob_rm", kGlob, false, kOff, "rm -rf /tmp/x", A, A},
        Row{"glob_bash_c_chain", kGlob, false, kOff, "bash -c 'ls && rm x'", A, A, "",
            "( /usr/bin/ls && /usr/bin/rm x )"},
        Row{"glob_bash_c_single", kGlob, false, kMiss, "bash -c 'ls'", Q, A, kShellRewrite},
        Row{"glob_bash_script", kGlob, false, kOff, "bash /work/run.sh", D, D},
        Row{"glob_sh_alone", kGlob, false, kMiss, "sh", Q, Q},
        Row{"glob_busybox_sh", kGlob, false, kOff, "busybox sh -c 'ls && echo hi'", A, A},
        Row{"glob_busybox_cat", kGlob, false, kOff, "busybox cat /etc/passwd", D, D},
        Row{"glob_env_sh", kGlob, false, kOff, "env sh -c 'ls'", D, D},
        Row{"glob_xargs_rm", kGlob, false, kOff, "echo x | xargs rm", A, D},
        Row{"glob_find_exec", kGlob, false, kOff, "find . -exec rm {} ';'", A, D},
        Row{"glob_python_strict", kGlob, true, kOff, "python3 -c 1", Q, Q},
        Row{"glob_sed_strict", kGlob, true, kOff, "sed -n p", Q, Q},
        Row{"glob_redirect_strict_off", kGlob, true, kOff, "ls > x", Q, D, "", "(redirect)"},
        Row{"glob_subst_strict", kGlob, true, kMiss, "echo $(id)", Q, Q},
        // --- A catch-all allowlist: * ---------------------------------------------------------
        Row{"star_rm", kStar, false, kOff, "rm -rf /tmp/x", A, A},
        Row{"star_bash_c_single", kStar, false, kMiss, "bash -c 'rm -rf /tmp/x'", Q, A,
            kShellRewrite, "( /usr/bin/rm -rf /tmp/x )"},
        Row{"star_bash_c_chain", kStar, false, kOff, "bash -c 'rm x && ls'", A, A},
        Row{"star_bash_script", kStar, false, kOff, "bash run.sh", D, D},
        Row{"star_bash_script_ask", kStar, false, kMiss, "bash run.sh", Q, Q},
        Row{"star_busybox_rm", kStar, false, kOff, "busybox rm x", D, D},
        Row{"star_busybox_sh", kStar, false, kOff, "busybox sh -c 'rm x && ls'", A, A},
        Row{"star_bin_sh", kStar, false, kMiss, "/bin/sh -c 'ls'", D, D},
        Row{"star_bash_lc", kStar, false, kOff, "bash -lc 'ls'", D, D},
        Row{"star_redirect", kStar, false, kOff, "ls > out.txt", D, D},
        // ask=off: an analysis failure is a denial naming the category, even under strict.
        Row{"star_redirect_strict_off", kStar, true, kOff, "ls > out.txt", Q, D, "",
            "cannot be analysed (redirect)"},
        Row{"star_redirect_strict_ask", kStar, true, kMiss, "ls > out.txt", Q, Q},
        Row{"star_xargs_bare", kStar, false, kOff, "echo x | xargs", D, D},
        Row{"star_unknown", kStar, false, kOff, "nosuchcmd", A, A},
        Row{"star_heredoc_strict", kStar, true, kMiss, "cat <<EOF\nx\nEOF", Q, D},
        Row{"star_assignment", kStar, false, kOff, "FOO=1 ls", D, D},
        Row{"star_sudo", kStar, false, kMiss, "sudo rm x", Q, Q},
        // Red team: `*` matches unresolved commands, but a shell builtin is the shell's own
        // command (it runs a script, code or changes the shell), never a program the entry names.
        Row{"star_dot_script", kStar, false, kOff, ". /work/run.sh", A, D},
        Row{"star_source_ask", kStar, false, kMiss, "source /work/run.sh", A, Q, "",
            "is a shell builtin"},
        Row{"star_trap", kStar, false, kOff, "trap 'rm -rf /tmp/x' EXIT", A, D},
        Row{"star_trap_strict", kStar, true, kMiss, "trap 'python3 -c 1' EXIT", A, Q, "",
            "inline-eval"},
        Row{"star_export", kStar, false, kOff, "export A=1 && ls", A, D},
        Row{"star_read_subscript", kStar, false, kOff, "read 'a[$(id)]'", A, D},
        // Red team: a satisfied shell nested first in a payload rendered `((...))`, which bash
        // runs as arithmetic (expanding $(...) inside single quotes): groups are spaced.
        Row{"star_nested_group", kStar, false, kOff, R"(sh -c "sh -c \"echo '\\\$(id)'\"")", Q, A,
            kShellRewrite, "( ( /usr/bin/echo '$(id)' ) )"},
        // Red team: shells under versioned or build names are shells.
        Row{"star_ksh93_payload", kStar, false, kOff, "ksh93 -c 'rm x && ls'", A, A, "",
            "( /usr/bin/rm x && /usr/bin/ls )"},
        Row{"star_ksh93_script", kStar, false, kOff, "ksh93 /work/run.sh", D, D},
        Row{"star_bash_static_login", kStar, false, kMiss, "bash-static -lc 'ls'", D, D, "",
            "login shell"}),
    [](const ::testing::TestParamInfo<Row>& p) { return std::string(p.param.name); });

// The rewritten payload runs in a real shell as the payload would have: the subshell keeps a
// `cd` to itself, the chain's result is the payload's, and the words arrive intact.
TEST(ShellRewriteTest, RewrittenPayloadRunsAsThePayloadWould) {
  config::AgentSettings settings;
  FakeMachine real;  // files of the test machine itself, so that the command can run
  for (const char* bin : {"/usr/bin/echo", "/usr/bin/ls", "/usr/bin/pwd"}) {
    real.files[bin] = bin;
  }
  const std::string command =
      "sh -c 'cd / && pwd' && pwd && sh -c \"echo 'a  b' && ls /nonexistent-sandrun\" || echo "
      "fell-through";
  ApprovalVerdict v =
      real.Evaluate(command, Security::kAllowlist, Ask::kOff, false,
                    FakeMachine::Entries({"/usr/bin/echo", "/usr/bin/ls"}), settings, "/usr/bin");
  ASSERT_EQ(v.verdict, Verdict::kAllow) << v.reason;
  EXPECT_EQ(
      v.command,
      "( cd / && pwd ) && pwd && ( /usr/bin/echo 'a  b' && /usr/bin/ls /nonexistent-sandrun ) "
      "|| /usr/bin/echo fell-through");
  auto run = [](const std::string& text) {
    std::string out;
    FILE* p =
        ::popen(("cd /tmp && /bin/sh -c " + QuoteShellWord(text) + " 2>/dev/null").c_str(), "r");
    if (p == nullptr) return out;
    char buf[256];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
    return out;
  };
  EXPECT_EQ(run(v.command), run(command));
  EXPECT_EQ(run(v.command), "/\n/tmp\na  b\nfell-through\n");
}

}  // namespace
}  // namespace sandrun::policy

namespace sandrun::policy {
namespace {

// The headless refusal's fixes: only ones that would change the answer, never a setting that is
// already in force (issue 18: it suggested ask=off under ask=off).
std::string Fixes(Security security, Ask ask, bool inline_eval, bool analysis_ok = true) {
  ApprovalVerdict v;
  v.security = security;
  v.ask = ask;
  v.inline_eval_required = inline_eval;
  v.eval.analysis_ok = analysis_ok;
  v.reason = "allowlist miss";
  const std::string text = HeadlessDenial(v, "approval-timeout");
  const size_t fix = text.find("Fix: ");
  return fix == std::string::npos ? "" : text.substr(fix);
}

TEST(HeadlessDenialTest, SuggestsOnlyWhatIsNotInForce) {
  std::string f = Fixes(Security::kAllowlist, Ask::kOnMiss, false);
  EXPECT_THAT(f, HasSubstr("sandrun serve"));
  EXPECT_THAT(f, HasSubstr("allowlist add"));
  EXPECT_THAT(f, HasSubstr("tools.exec.security=full"));
  EXPECT_THAT(f, Not(HasSubstr("ask=")));  // ask=off would turn the miss into a denial
  f = Fixes(Security::kFull, Ask::kAlways, false);
  EXPECT_THAT(f, HasSubstr("tools.exec.ask=on-miss"));
  EXPECT_THAT(f, Not(HasSubstr("security=full")));
  EXPECT_THAT(f, Not(HasSubstr("allowlist add")));  // no allowlist applies under full
  f = Fixes(Security::kAllowlist, Ask::kOnMiss, false, /*analysis_ok=*/false);
  EXPECT_THAT(f, Not(HasSubstr("allowlist add")));  // no entry makes a redirect analysable
  // strictInlineEval asks whatever ask and the allowlist say: neither is offered.
  f = Fixes(Security::kFull, Ask::kOff, true);
  EXPECT_THAT(f, HasSubstr("strictInlineEval"));
  EXPECT_THAT(f, Not(HasSubstr("ask=")));
  EXPECT_THAT(f, Not(HasSubstr("security=")));
}

}  // namespace
}  // namespace sandrun::policy

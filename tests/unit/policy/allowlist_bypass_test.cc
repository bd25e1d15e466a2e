// Issue 12, "Allowlist bypasses": commands that an allowlist (or the safe builtins) let through
// although they run other commands. Each row goes through EvaluateApprovals with the shipped
// profiles (safe bins, profiles/exec-options/default.json) against a fake file system, and says
// what must happen: the bypass forms are misses (denied under ask=off, asked under on-miss,
// asked every time and never persisted under strictInlineEval) and are reported as inline
// evals; the ordinary forms next to them still run rewritten.
//
// On the code before the fix every "bypass" row below was allowed: the safe builtins were
// satisfied whatever their arguments (`test -v 'a[$(cmd)]'` ran cmd in bash with an empty
// allowlist), and an allowlisted program was satisfied whatever its options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "runner/policy/approval_flow.h"
#include "tests/unit/policy/fake_machine.h"

namespace sandrun::policy {
namespace {

using config::Ask;
using config::Security;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The fake machine: executable -> real path.
const testing::FakeMachine& Machine() {
  static const testing::FakeMachine m = [] {
    testing::FakeMachine f;
    for (const char* name :
         {"ls",   "echo", "cat",   "git",  "tar",     "zip",    "ssh",    "scp",  "sftp",
          "less", "man",  "rsync", "sort", "busybox", "strace", "printf", "env",  "test",
          "bash", "zsh",  "wget",  "nice", "fish",    "tcsh",   "sed",    "find", "xargs"}) {
      f.files[std::string("/usr/bin/") + name] = std::string("/usr/bin/") + name;
    }
    f.files["/usr/bin/sh"] = "/usr/bin/dash";
    f.files["/usr/bin/vim.basic"] = "/usr/bin/vim.basic";
    f.files["/usr/bin/vi"] = "/usr/bin/vim.basic";  // /etc/alternatives/vi -> vim.basic
    f.files["/usr/bin/vim"] = "/usr/bin/vim.basic";
    f.files["/usr/bin/mytar"] = "/usr/bin/tar";  // a link with another name
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
  const char* expect;       // allow: the command that runs; ask/deny: a substring of the reason
  const char* inline_eval;  // the one inline-eval hit expected; "" for none
};

std::ostream& operator<<(std::ostream& os, const Row& r) { return os << r.name; }

class AllowlistBypassTest : public ::testing::TestWithParam<Row> {
 protected:
  static std::vector<config::AllowlistEntry> Entries() {
    std::vector<config::AllowlistEntry> e;
    for (const char* p :
         {"/usr/bin/ls",     "/usr/bin/echo",      "/usr/bin/cat",     "git",
          "/usr/bin/tar",    "/usr/bin/zip",       "/usr/bin/ssh",     "/usr/bin/scp",
          "/usr/bin/sftp",   "/usr/bin/vim.basic", "/usr/bin/less",    "/usr/bin/man",
          "/usr/bin/rsync",  "/usr/bin/sort",      "/usr/bin/busybox", "/usr/bin/strace",
          "/usr/bin/printf", "/usr/bin/wget",      "/usr/bin/sed",     "/usr/bin/find",
          "/usr/bin/xargs",  "/work/build/*"}) {
      config::AllowlistEntry entry;
      entry.id = std::string("id-") + p;
      entry.pattern = p;
      e.push_back(entry);
    }
    return e;
  }

  ApprovalVerdict Evaluate(const Row& row, std::vector<config::AllowlistEntry> entries) {
    return Machine().Evaluate(row.command, row.security, row.ask, row.strict, std::move(entries),
                              settings_, "/usr/bin");
  }

  void Check(const Row& row, const ApprovalVerdict& v) {
    EXPECT_EQ(VerdictName(v.verdict), std::string(VerdictName(row.verdict)))
        << row.command << " -> " << v.reason;
    if (row.verdict == Verdict::kAllow) {
      EXPECT_EQ(v.command, row.expect) << row.command;
    } else {
      EXPECT_THAT(v.reason, HasSubstr(row.expect)) << row.command;
    }
    if (*row.inline_eval == '\0') {
      EXPECT_THAT(v.eval.inline_eval, IsEmpty()) << row.command;
    } else {
      EXPECT_THAT(v.eval.inline_eval, ElementsAre(row.inline_eval)) << row.command;
    }
  }

  config::AgentSettings settings_;
};

// ---- 1. Safe builtins, with an EMPTY allowlist ------------------------------------------------

class SafeBuiltinTest : public AllowlistBypassTest {};

TEST_P(SafeBuiltinTest, Decides) {
  const Row& row = GetParam();
  Check(row, Evaluate(row, {}));
}

constexpr Security kAL = Security::kAllowlist;
constexpr Security kFull = Security::kFull;
constexpr Ask kOff = Ask::kOff;
constexpr Ask kMiss = Ask::kOnMiss;
constexpr Verdict kAllow = Verdict::kAllow;
constexpr Verdict kAsk = Verdict::kAsk;
constexpr Verdict kDeny = Verdict::kDeny;
constexpr const char* kMissed = "exec denied: allowlist miss";

INSTANTIATE_TEST_SUITE_P(
    Table, SafeBuiltinTest,
    ::testing::Values(
        // Still safe.
        Row{"test_d", "test -d /tmp", kAL, kOff, false, kAllow, "test -d /tmp", ""},
        Row{"bracket_n", "[ -n x ]", kAL, kOff, false, kAllow, "'[' -n x ']'", ""},
        Row{"test_v_name", "test -v HOME", kAL, kOff, false, kAllow, "test -v HOME", ""},
        Row{"bracket_eq_literals", "[ 1 -eq 1 ]", kAL, kOff, false, kAllow, "'[' 1 -eq 1 ']'", ""},
        Row{"test_lt_signed", "test -3 -lt +4", kAL, kOff, false, kAllow, "test -3 -lt +4", ""},
        Row{"test_t_fd", "test -t 1", kAL, kOff, false, kAllow, "test -t 1", ""},
        Row{"test_string_eq", "test 'a b' = x", kAL, kOff, false, kAllow, "test 'a b' '=' x", ""},
        Row{"test_lone_v", "test -v", kAL, kOff, false, kAllow, "test -v", ""},
        Row{"cd_pwd_true", "cd /tmp && pwd -P && true", kAL, kOff, false, kAllow,
            "cd /tmp && pwd -P && true", ""},
        // `:` and true never look at their arguments: a subscript there stays text.
        Row{"colon_arg", ": 'a[$(touch m)]'", kAL, kOff, false, kAllow, ": 'a[$(touch m)]'", ""},
        Row{"true_arg", "true 'a[$(touch m)]'", kAL, kOff, false, kAllow, "true 'a[$(touch m)]'",
            ""},
        // Bypasses: bash runs $(...) in the subscript (and the value of X) of -v.
        Row{"test_v_subst", "test -v 'a[$(touch m)]'", kAL, kOff, false, kDeny, kMissed,
            "test -v operand"},
        Row{"bracket_v_subst", "[ -v 'a[$(touch m)]' ]", kAL, kOff, false, kDeny, kMissed,
            "[ -v operand"},
        Row{"test_v_env_value", "test -v 'b[X]'", kAL, kOff, false, kDeny, kMissed,
            "test -v operand"},
        Row{"test_not_v", "test ! -v 'a[1]'", kAL, kOff, false, kDeny, kMissed, "test -v operand"},
        Row{"test_and_v", "test -n x -a -v 'a[$(touch m)]'", kAL, kOff, false, kDeny, kMissed,
            "test -v operand"},
        Row{"test_paren_v", "test '(' -v 'a[1]' ')'", kAL, kOff, false, kDeny, kMissed,
            "test -v operand"},
        Row{"test_subscript_anywhere", "test 'a[$(touch m)]' = x", kAL, kOff, false, kDeny, kMissed,
            "test array subscript"},
        // zsh, ksh and mksh evaluate integer operands (and -t's) as arithmetic.
        Row{"test_eq_name", "test x -eq 1", kAL, kOff, false, kDeny, kMissed, "test -eq operand"},
        Row{"bracket_lt_right", "[ 1 -lt y ]", kAL, kOff, false, kDeny, kMissed, "[ -lt operand"},
        Row{"test_eq_subscript", "test 'a[$(touch m)]' -eq 1", kAL, kOff, false, kDeny, kMissed,
            "test array subscript"},
        Row{"test_t_name", "test -t x", kAL, kOff, false, kDeny, kMissed, "test -t operand"},
        // The same inside an evaluated shell payload (sh, bash, zsh: part by part).
        Row{"sh_c_payload", "sh -c \"test -v 'a[\\$(touch m)]' && true\"", kAL, kOff, false, kDeny,
            kMissed, "test -v operand"},
        Row{"bash_c_payload", "bash -c \"true && [ -v 'a[1]' ]\"", kAL, kOff, false, kDeny, kMissed,
            "[ -v operand"},
        Row{"zsh_c_payload", "zsh -c 'test x -gt 0 && true'", kAL, kOff, false, kDeny, kMissed,
            "test -gt operand"},
        // What the approval says; with strictInlineEval it asks every time, even under full.
        Row{"on_miss_asks", "test -v 'a[$(touch m)]'", kAL, kMiss, false, kAsk,
            "bash evaluates what -v is given", "test -v operand"},
        Row{"strict_asks", "test -v 'a[1]'", kAL, kOff, true, kAsk, "strict inline-eval",
            "test -v operand"},
        Row{"strict_full_asks", "[ -v 'a[1]' ]", kFull, kOff, true, kAsk, "strict inline-eval",
            "[ -v operand"},
        // Other evaluating builtins are no safe builtins: misses, or never the builtin.
        Row{"dbl_bracket", "[[ -v 'a[1]' ]]", kAL, kMiss, false, kAsk, "test-expression", ""},
        Row{"let", "let 'a[$(touch m)]=1'", kAL, kMiss, false, kAsk, "\"let\" is a shell builtin",
            "let inline command"},
        Row{"declare", "declare -p 'a[$(touch m)]'", kAL, kOff, false, kDeny, kMissed,
            "declare subscript"},
        Row{"arith_cmd", "((a[1]++))", kAL, kMiss, false, kAsk, "arithmetic", ""},
        Row{"arith_expansion", "echo $((1))", kAL, kMiss, false, kAsk, "dynamic-argument", ""}),
    [](const ::testing::TestParamInfo<Row>& p) { return std::string(p.param.name); });

TEST_F(SafeBuiltinTest, EvaluatingBuiltinPersistsOnlyTheExactCommand) {
  const Row row{"", "test -v 'a[$(touch m)]'", kAL, kMiss, false, kAsk, "", ""};
  ApprovalVerdict v = Evaluate(row, {});
  ASSERT_EQ(v.verdict, Verdict::kAsk);
  EXPECT_THAT(v.always_patterns, ElementsAre(config::ExactCommandPattern(row.command)));
  const Row strict{"", row.command, kAL, kMiss, true, kAsk, "", ""};
  v = Evaluate(strict, {});
  EXPECT_THAT(v.allowed_decisions, ElementsAre("allow-once", "deny"));
  EXPECT_THAT(v.always_patterns, IsEmpty());
}

// An allowlisted builtin-named program runs as the program, never as the evaluating builtin.
TEST_F(SafeBuiltinTest, AllowlistedPrintfRunsTheBinaryNotTheBuiltin) {
  const Row row{"", "printf -v 'a[$(touch m)]' x", kAL, kOff, false, kAllow, "", ""};
  ApprovalVerdict v = Evaluate(row, Entries());
  EXPECT_EQ(v.verdict, Verdict::kAllow) << v.reason;
  EXPECT_EQ(v.command, "/usr/bin/printf -v 'a[$(touch m)]' x");
}

// A `cd` cannot make an allowlisted path that does not exist yet name a file elsewhere: the
// unresolved path (matched through its cwd-resolved form /work/build/x) runs as that path.
TEST_F(SafeBuiltinTest, CdCannotMoveAnUnresolvedAllowlistedPath) {
  const Row row{"", "cd /tmp/elsewhere && ./build/x", kAL, kOff, false, kAllow, "", ""};
  ApprovalVerdict v = Evaluate(row, Entries());
  EXPECT_EQ(v.verdict, Verdict::kAllow) << v.reason;
  EXPECT_EQ(v.command, "cd /tmp/elsewhere && /work/build/x");
  const Row payload{"", "sh -c 'cd /tmp/elsewhere && build/x'", kAL, kOff, false, kAllow, "", ""};
  v = Evaluate(payload, Entries());
  EXPECT_EQ(v.verdict, Verdict::kAllow) << v.reason;
  EXPECT_EQ(v.command, "( cd /tmp/elsewhere && /work/build/x )");
}

// ---- 2. Allowlisted programs that run commands through their options --------------------------

class ExecOptionTest : public AllowlistBypassTest {};

TEST_P(ExecOptionTest, Decides) {
  const Row& row = GetParam();
  Check(row, Evaluate(row, Entries()));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ExecOptionTest,
    ::testing::Values(
        // Still allowed: the ordinary forms.
        Row{"git_status", "git status", kAL, kOff, false, kAllow, "/usr/bin/git status", ""},
        Row{"git_C_status", "git -C /repo status -s", kAL, kOff, false, kAllow,
            "/usr/bin/git -C /repo status -s", ""},
        Row{"git_log_c", "git --no-pager log -c -1", kAL, kOff, false, kAllow,
            "/usr/bin/git --no-pager log -c -1", ""},
        Row{"git_exec_path_print", "git --exec-path", kAL, kOff, false, kAllow,
            "/usr/bin/git --exec-path", ""},
        Row{"tar_tf", "tar -tf x.tar", kAL, kOff, false, kAllow, "/usr/bin/tar -tf x.tar", ""},
        Row{"tar_old_style", "tar xzf a.tgz", kAL, kOff, false, kAllow, "/usr/bin/tar xzf a.tgz",
            ""},
        Row{"tar_checkpoint", "tar --checkpoint=10 -cf a.tar d", kAL, kOff, false, kAllow,
            "/usr/bin/tar --checkpoint=10 -cf a.tar d", ""},
        Row{"zip_r", "zip -r z.zip d", kAL, kOff, false, kAllow, "/usr/bin/zip -r z.zip d", ""},
        Row{"ssh_batch", "ssh -o BatchMode=yes host uptime", kAL, kOff, false, kAllow,
            "/usr/bin/ssh -o 'BatchMode=yes' host uptime", ""},
        Row{"rsync_av", "rsync -av src/ dst/", kAL, kOff, false, kAllow,
            "/usr/bin/rsync -av src/ dst/", ""},
        Row{"sort_n", "sort -n f", kAL, kOff, false, kAllow, "/usr/bin/sort -n f", ""},
        // git: configuration from the command line, subcommands that run commands.
        Row{"git_c_alias", "git -c alias.x='!touch m' x", kAL, kOff, false, kDeny, kMissed,
            "git -c"},
        Row{"git_c_ssh", "git -c core.sshCommand='touch m' fetch", kAL, kOff, false, kDeny, kMissed,
            "git -c"},
        Row{"git_c_fsmonitor", "git -c core.fsmonitor='touch m' status", kAL, kOff, false, kDeny,
            kMissed, "git -c"},
        Row{"git_c_pager", "git -c core.pager='touch m' log", kAL, kOff, false, kDeny, kMissed,
            "git -c"},
        Row{"git_config_env", "git --config-env=alias.x=X x", kAL, kOff, false, kDeny, kMissed,
            "git --config-env"},
        Row{"git_config_env_sep", "git --config-env alias.x=X x", kAL, kOff, false, kDeny, kMissed,
            "git --config-env"},
        Row{"git_exec_path", "git --exec-path=/tmp/evil status", kAL, kOff, false, kDeny, kMissed,
            "git --exec-path"},
        Row{"git_config", "git config alias.x '!touch m'", kAL, kOff, false, kDeny, kMissed,
            "git config (runs commands itself)"},
        Row{"git_C_config", "git -C /repo config core.fsmonitor x", kAL, kOff, false, kDeny,
            kMissed, "git config (runs commands itself)"},
        Row{"git_gitdir_config", "git --git-dir /r/.git config core.pager x", kAL, kOff, false,
            kDeny, kMissed, "git config (runs commands itself)"},
        Row{"git_unknown_option", "git --frobnicate config x y", kAL, kOff, false, kDeny, kMissed,
            "git --frobnicate"},
        Row{"git_rebase_exec", "git rebase --exec 'touch m' HEAD~1", kAL, kOff, false, kDeny,
            kMissed, "git rebase --exec"},
        Row{"git_rebase_abbrev", "git rebase --exe='touch m' HEAD~1", kAL, kOff, false, kDeny,
            kMissed, "git rebase --exec"},
        Row{"git_rebase_x", "git rebase -ix 'touch m' HEAD~1", kAL, kOff, false, kDeny, kMissed,
            "git rebase -x"},
        Row{"git_clone_upload", "git clone --upload-pack='touch m' /r d", kAL, kOff, false, kDeny,
            kMissed, "git clone --upload-pack"},
        Row{"git_clone_template", "git clone --template=/tmp/t /r d", kAL, kOff, false, kDeny,
            kMissed, "git clone --template"},
        Row{"git_clone_c", "git clone -c core.fsmonitor=x /r d", kAL, kOff, false, kDeny, kMissed,
            "git clone -c"},
        Row{"git_fetch_upload", "git fetch --upload-pack=x origin", kAL, kOff, false, kDeny,
            kMissed, "git fetch --upload-pack"},
        Row{"git_push_receive", "git push --receive-pack=x origin", kAL, kOff, false, kDeny,
            kMissed, "git push --receive-pack"},
        Row{"git_grep_O", "git grep -O'touch m' x", kAL, kOff, false, kDeny, kMissed,
            "git grep -O"},
        Row{"git_help", "git log --help", kAL, kOff, false, kDeny, kMissed, "git --help"},
        Row{"env_git", "env git -c alias.x='!y' x", kAL, kOff, false, kDeny, kMissed, "git -c"},
        // tar.
        // Red-team rows: a sed program from a file, git's command transport, find's actions and
        // xargs run or write what they are given.
        Row{"sed_plain", "sed -n 1p f", kAL, kOff, false, kAllow, "/usr/bin/sed -n 1p f",
            "sed inline program"},
        Row{"sed_f", "sed -f s.sed f", kAL, kOff, false, kDeny, kMissed, "sed -f"},
        Row{"git_remote_ext", "git remote-ext x 'touch m'", kAL, kOff, false, kDeny, kMissed,
            "git remote-ext (runs commands itself)"},
        Row{"git_paginate", "git -p log", kAL, kOff, false, kDeny, kMissed, "git -p"},
        Row{"find_name", "find . -name x", kAL, kOff, false, kAllow, "/usr/bin/find . -name x", ""},
        Row{"find_exec", "find . -exec touch m ';'", kAL, kOff, false, kDeny, kMissed,
            "find -exec"},
        Row{"find_fprintf", "find f -fprintf s.sed x", kAL, kOff, false, kDeny, kMissed,
            "find -fprintf"},
        Row{"xargs", "xargs -0", kAL, kOff, false, kDeny, kMissed, "xargs (runs commands itself)"},
        Row{"tar_checkpoint_exec", "tar --checkpoint=1 --checkpoint-action=exec='touch m' -tf a",
            kAL, kOff, false, kDeny, kMissed, "tar --checkpoint-action"},
        Row{"tar_checkpoint_abbrev", "tar --checkpoint-act=exec=x -tf a", kAL, kOff, false, kDeny,
            kMissed, "tar --checkpoint-action"},
        Row{"tar_I", "tar -cf y.tar -I 'sh -c x' f", kAL, kOff, false, kDeny, kMissed, "tar -I"},
        Row{"tar_I_cluster", "tar -cIf prog y.tar f", kAL, kOff, false, kDeny, kMissed, "tar -I"},
        Row{"tar_I_old_style", "tar cIf prog y.tar f", kAL, kOff, false, kDeny, kMissed, "tar -I"},
        Row{"tar_compress_prog", "tar --use-compress-program=x -cf y f", kAL, kOff, false, kDeny,
            kMissed, "tar --use-compress-program"},
        Row{"tar_use_abbrev", "tar --use=x -cf y f", kAL, kOff, false, kDeny, kMissed,
            "tar --use-compress-program"},
        Row{"tar_to_command", "tar -xf x.tar --to-command='touch m'", kAL, kOff, false, kDeny,
            kMissed, "tar --to-command"},
        Row{"tar_to_c", "tar -xf x.tar --to-c=x", kAL, kOff, false, kDeny, kMissed,
            "tar --to-command"},
        Row{"tar_rsh", "tar --rsh-command=x -tf h:x", kAL, kOff, false, kDeny, kMissed,
            "tar --rsh-command"},
        Row{"tar_F", "tar -M -F x -cf y f", kAL, kOff, false, kDeny, kMissed, "tar -F"},
        Row{"tar_info_script", "tar --info-script=x -cf y f", kAL, kOff, false, kDeny, kMissed,
            "tar --info-script"},
        Row{"tar_via_link", "/usr/bin/mytar --to-command=x -xf a", kAL, kMiss, false, kAsk,
            "mytar --to-command", "mytar --to-command"},
        Row{"busybox_tar", "busybox tar -I x -cf y f", kAL, kOff, false, kDeny, kMissed, "tar -I"},
        // zip, ssh, scp, sftp, rsync, vim, less, man, sort, wget, strace.
        Row{"zip_TT", "zip -T -TT 'touch m' z.zip f", kAL, kOff, false, kDeny, kMissed, "zip -TT"},
        Row{"zip_TT_cluster", "zip z.zip f -qTTtouch", kAL, kOff, false, kDeny, kMissed, "zip -TT"},
        Row{"zip_unzip_command", "zip -T --unzip-comm x z.zip f", kAL, kOff, false, kDeny, kMissed,
            "zip --unzip-command"},
        Row{"ssh_proxy", "ssh -o ProxyCommand='touch m' host", kAL, kOff, false, kDeny, kMissed,
            "ssh -o proxycommand"},
        Row{"ssh_proxy_attached", "ssh -oproxycommand=x host", kAL, kOff, false, kDeny, kMissed,
            "ssh -o proxycommand"},
        Row{"ssh_proxy_space", "ssh -o 'ProxyCommand touch m' host", kAL, kOff, false, kDeny,
            kMissed, "ssh -o proxycommand"},
        Row{"ssh_proxy_quoted", "ssh -o '\"ProxyCommand\" touch m' host", kAL, kOff, false, kDeny,
            kMissed, "ssh -o proxycommand"},
        Row{"ssh_proxy_cluster", "ssh -vo ProxyCommand=x host", kAL, kOff, false, kDeny, kMissed,
            "ssh -o proxycommand"},
        Row{"ssh_local_command", "ssh -o BatchMode=yes -o LocalCommand=x host", kAL, kOff, false,
            kDeny, kMissed, "ssh -o localcommand"},
        Row{"ssh_permit_local", "ssh -o PermitLocalCommand=yes host", kAL, kOff, false, kDeny,
            kMissed, "ssh -o permitlocalcommand"},
        Row{"ssh_F", "ssh -F cfg host", kAL, kOff, false, kDeny, kMissed, "ssh -F"},
        Row{"scp_S", "scp -S prog a host:b", kAL, kOff, false, kDeny, kMissed, "scp -S"},
        Row{"scp_proxy", "scp -o ProxyCommand=x a host:b", kAL, kOff, false, kDeny, kMissed,
            "scp -o proxycommand"},
        Row{"sftp", "sftp host", kAL, kOff, false, kDeny, kMissed, "sftp (runs commands itself)"},
        Row{"rsync_e", "rsync -e 'sh -c x' a host:b", kAL, kOff, false, kDeny, kMissed, "rsync -e"},
        Row{"rsync_rsh", "rsync --rsh=x a host:b", kAL, kOff, false, kDeny, kMissed, "rsync --rsh"},
        Row{"rsync_path", "rsync --rsync-path='touch m' a host:b", kAL, kOff, false, kDeny, kMissed,
            "rsync --rsync-path"},
        Row{"vim_c", "vim -c '!touch m' f", kAL, kOff, false, kDeny, kMissed,
            "vim (runs commands itself)"},
        Row{"vi_real_path", "vi f", kAL, kOff, false, kDeny, kMissed, "vi (runs commands itself)"},
        Row{"less", "less f", kAL, kOff, false, kDeny, kMissed, "less (runs commands itself)"},
        Row{"man", "man ls", kAL, kOff, false, kDeny, kMissed, "man (runs commands itself)"},
        Row{"sort_compress", "sort --compress-program=sh -S 1k f", kAL, kOff, false, kDeny, kMissed,
            "sort --compress-program"},
        Row{"sort_compress_abbrev", "sort --compress-prog=x f", kAL, kOff, false, kDeny, kMissed,
            "sort --compress-program"},
        Row{"wget_askpass", "wget --use-askpass=x http://h/", kAL, kOff, false, kDeny, kMissed,
            "wget --use-askpass"},
        Row{"strace", "strace -f ls", kAL, kOff, false, kDeny, kMissed,
            "strace (runs commands itself)"},
        // Inside an evaluated shell payload, and behind an allowlisted first part.
        Row{"sh_c_payload", "sh -c \"ls && git -c alias.x='!y' x\"", kAL, kOff, false, kDeny,
            kMissed, "git -c"},
        Row{"chain", "ls && tar --to-command=x -xf a", kAL, kOff, false, kDeny, kMissed,
            "tar --to-command"},
        // fish and csh quote differently from the analyser: their payloads are never evaluated
        // part by part (an allowlisted ls does not make `fish -c 'ls && ...'` allowed).
        Row{"fish_c_payload", "fish -c 'ls && true'", kAL, kMiss, false, kAsk,
            "fish does not read its -c payload as POSIX sh", ""},
        Row{"tcsh_c_payload", "tcsh -c 'ls && true'", kAL, kOff, false, kDeny, kMissed, ""},
        // What the approval says.
        Row{"on_miss_asks", "git -c alias.x='!y' x", kAL, kMiss, false, kAsk,
            "allowlist miss: git -c: sets any configuration value", "git -c"},
        Row{"strict_asks", "git -c alias.x='!y' x", kAL, kOff, true, kAsk, "strict inline-eval",
            "git -c"},
        Row{"strict_full_asks", "tar --to-command=x -xf a", kFull, kOff, true, kAsk,
            "strict inline-eval", "tar --to-command"},
        // security=full without strictInlineEval runs as written (OpenClaw's full).
        Row{"full_runs", "git -c alias.x='!y' x", kFull, kOff, false, kAllow,
            "git -c alias.x='!y' x", "git -c"}),
    [](const ::testing::TestParamInfo<Row>& p) { return std::string(p.param.name); });

TEST_F(ExecOptionTest, AllowAlwaysPersistsOnlyTheExactCommandAndNeverUnderStrict) {
  const Row row{"", "git -c alias.x='!touch m' x", kAL, kMiss, false, kAsk, "", ""};
  ApprovalVerdict v = Evaluate(row, Entries());
  ASSERT_EQ(v.verdict, Verdict::kAsk);
  // Never /usr/bin/git (that entry exists already and must not cover this form).
  EXPECT_THAT(v.always_patterns, ElementsAre(config::ExactCommandPattern(row.command)));
  const Row strict{"", row.command, kAL, kMiss, true, kAsk, "", ""};
  v = Evaluate(strict, Entries());
  EXPECT_THAT(v.allowed_decisions, ElementsAre("allow-once", "deny"));
  EXPECT_THAT(v.always_patterns, IsEmpty());
  EXPECT_THAT(v.warnings, ElementsAre("Warning: strict inline-eval mode requires explicit "
                                      "approval for git -c."));
}

// An allow-always entry for git does not make the option form durable either.
TEST_F(ExecOptionTest, AllowAlwaysEntryForTheProgramDoesNotCoverTheForm) {
  auto entries = Entries();
  for (auto& e : entries) {
    if (e.pattern == "git") e.source = "allow-always";
  }
  const Row row{"", "git -c alias.x='!touch m' x", kAL, kMiss, false, kAsk, "", ""};
  ApprovalVerdict v = Evaluate(row, entries);
  EXPECT_EQ(v.verdict, Verdict::kAsk) << v.reason;
  EXPECT_FALSE(v.eval.durable);
}

// A caller's table replaces the built-in one (an empty table lists nothing).
TEST_F(ExecOptionTest, ACallersTableReplacesTheBuiltinOne) {
  ExecOptionTable empty;
  Decision d;
  d.effective_host = Host::kGateway;
  d.effective.security = kAL;
  d.effective.ask = kOff;
  ApprovalInputs in;
  in.settings = &settings_;
  in.approvals.security = Security::kFull;
  in.approvals.allowlist = Entries();
  in.exec_options = &empty;
  in.resolve.path = "/usr/bin";
  in.resolve.cwd = "/work";
  in.resolve.is_executable = [](const std::string& p) { return Machine().files.count(p) > 0; };
  in.resolve.real_path = [](const std::string& p) { return Machine().files.at(p); };
  EXPECT_EQ(EvaluateApprovals(d, "git -c alias.x=y x", in).verdict, Verdict::kAllow);
}

}  // namespace
}  // namespace sandrun::policy

// The /approve guard (reference §1.2 step 9): commands that would run `/approve <id>
// <decision>` are refused wherever the shell would run them; the text as an argument is fine.
#include "runner/policy/approve_guard.h"

#include <gtest/gtest.h>

#include <string>

namespace sandrun::policy {
namespace {

struct GuardRow {
  std::string name;
  std::string command;
  bool refused;
};
class ApproveGuardTest : public ::testing::TestWithParam<GuardRow> {};

TEST_P(ApproveGuardTest, Decides) {
  EXPECT_EQ(ContainsApproveCommand(GetParam().command), GetParam().refused) << GetParam().command;
  std::optional<Error> e = CheckApproveCommand(GetParam().command);
  EXPECT_EQ(e.has_value(), GetParam().refused);
  if (e.has_value()) {
    EXPECT_EQ(e->WireCode(), "approve-command");
    EXPECT_EQ(e->message, kApproveCommandMessage);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Refused, ApproveGuardTest,
    ::testing::Values(
        GuardRow{"plain_allow_once", "/approve abc123 allow-once", true},
        GuardRow{"allow_always", "/approve abc123 allow-always", true},
        GuardRow{"always", "/approve abc123 always", true},
        GuardRow{"deny", "/approve abc123 deny", true},
        GuardRow{"upper_case", "/APPROVE ABC DENY", true},
        GuardRow{"mixed_case_decision", "/Approve abc Allow-Once", true},
        GuardRow{"bot_suffix", "/approve@mybot abc always", true},
        GuardRow{"surrounding_space", "   /approve abc allow-always   ", true},
        GuardRow{"tabs", "/approve\tabc\tdeny", true},
        GuardRow{"word_boundary_punct", "/approve abc deny.", true},
        GuardRow{"and_chain", "echo hi && /approve abc deny", true},
        GuardRow{"or_chain", "false || /approve abc deny", true},
        GuardRow{"semicolon", "echo hi; /approve abc deny", true},
        GuardRow{"semicolon_no_space", "echo hi;/approve abc deny", true},
        GuardRow{"pipe", "echo hi | /approve abc deny", true},
        GuardRow{"newline", "echo hi\n/approve abc deny", true},
        GuardRow{"background", "sleep 1 & /approve abc deny", true},
        GuardRow{"first_of_chain", "/approve abc deny; echo done", true},
        GuardRow{"env", "env /approve abc deny", true},
        GuardRow{"env_path", "/usr/bin/env /approve abc deny", true},
        GuardRow{"env_assign", "env -i FOO=1 BAR=2 /approve abc deny", true},
        GuardRow{"env_unset", "env -u HOME /approve abc deny", true},
        GuardRow{"env_dashdash", "env -- /approve abc deny", true},
        GuardRow{"env_split_string", "env -S '/approve abc deny'", true},
        GuardRow{"env_split_string_eq", "env --split-string='/approve abc deny'", true},
        GuardRow{"env_split_attached", "env '-S/approve abc deny'", true},
        GuardRow{"assignment_prefix", "FOO=bar /approve abc deny", true},
        GuardRow{"command", "command /approve abc deny", true},
        GuardRow{"command_p", "command -p /approve abc deny", true},
        GuardRow{"builtin", "builtin /approve abc deny", true},
        GuardRow{"exec", "exec /approve abc deny", true},
        GuardRow{"exec_a", "exec -a name /approve abc deny", true},
        GuardRow{"sudo", "sudo /approve abc deny", true},
        GuardRow{"sudo_user", "sudo -u root /approve abc deny", true},
        GuardRow{"sudo_flags", "sudo -n -E -- /approve abc deny", true},
        GuardRow{"prefix_stack", "sudo env FOO=1 command /approve abc deny", true},
        GuardRow{"sh_c", "sh -c '/approve abc deny'", true},
        GuardRow{"bash_lc", "bash -lc \"/approve abc deny\"", true},
        GuardRow{"zsh_ic", "zsh -ic '/approve abc deny'", true},
        GuardRow{"dash_xc", "dash -xc '/approve abc deny'", true},
        GuardRow{"ksh", "ksh -c '/approve abc deny'", true},
        GuardRow{"fish", "fish -c '/approve abc deny'", true},
        GuardRow{"fish_command_eq", "fish --command='/approve abc deny'", true},
        GuardRow{"shell_path", "/bin/bash -c '/approve abc deny'", true},
        GuardRow{"shell_options_before_c", "bash -euxo pipefail -c '/approve abc deny'", true},
        GuardRow{"payload_chain", "bash -c 'echo hi && /approve abc deny'", true},
        GuardRow{"nested_shells", "sh -c \"bash -lc '/approve abc deny'\"", true},
        GuardRow{"nested_escaped", "sh -c \"sh -c \\\"/approve abc deny\\\"\"", true},
        GuardRow{"env_then_shell", "sudo env FOO=1 sh -c '/approve abc deny'", true},
        GuardRow{"quoted_command_word", "'/approve' abc deny", true},
        GuardRow{"quoted_id", "/approve \"abc\" deny", true},
        GuardRow{"escaped_slash", "\\/approve abc deny", true},
        GuardRow{"subshell", "(/approve abc deny)", true},
        GuardRow{"group", "{ /approve abc deny; }", true},
        GuardRow{"command_substitution", "echo $(/approve abc deny)", true},
        GuardRow{"backticks", "echo `/approve abc deny`", true},
        GuardRow{"if_then", "if true; then /approve abc deny; fi", true},
        GuardRow{"negated", "! /approve abc deny", true},
        GuardRow{"redirect_after", "/approve abc deny 2>/dev/null", true},
        GuardRow{"redirect_before", "2>/dev/null /approve abc deny", true},
        GuardRow{"line_continuation", "/approve abc \\\ndeny", true},
        GuardRow{"unterminated_quote_fallback", "echo 'x && /approve abc deny", true},
        GuardRow{"unterminated_in_payload", "sh -c \"/approve abc deny", true}),
    [](const ::testing::TestParamInfo<GuardRow>& row_info) { return row_info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    Allowed, ApproveGuardTest,
    ::testing::Values(GuardRow{"echo_argument", "echo /approve abc deny", false},
                      GuardRow{"printf_argument", "printf '%s\\n' '/approve abc deny'", false},
                      GuardRow{"grep_pattern", "grep -r '/approve abc deny' .", false},
                      GuardRow{"git_message", "git commit -m '/approve abc deny'", false},
                      GuardRow{"quoted_whole_echo", "echo 'sh -c /approve abc deny'", false},
                      GuardRow{"no_decision", "/approve abc", false},
                      GuardRow{"unknown_decision", "/approve abc maybe", false},
                      GuardRow{"decision_prefix_only", "/approve abc denyx", false},
                      GuardRow{"approved_word", "/approved abc deny", false},
                      GuardRow{"approvex", "/approvex abc deny", false},
                      GuardRow{"alone", "/approve", false},
                      GuardRow{"path_argument", "ls /approve", false},
                      GuardRow{"path_like", "cat /approve/abc/deny", false},
                      GuardRow{"script_not_payload", "bash script.sh /approve abc deny", false},
                      GuardRow{"comment", "true # /approve abc deny", false},
                      GuardRow{"empty", "", false},
                      GuardRow{"heredoc_word", "cat <<< '/approve abc deny'", false},
                      GuardRow{"redirect_target", "echo x > /approve abc deny", false},
                      GuardRow{"sh_without_c", "sh -x script.sh", false},
                      GuardRow{"sh_c_other", "sh -c 'ls -la'", false},
                      GuardRow{"env_payload_other", "env -S 'echo /approve abc deny'", false},
                      GuardRow{"relative_approve", "./approve abc deny", false},
                      GuardRow{"bot_empty", "/approve@ abc deny", false}),
    [](const ::testing::TestParamInfo<GuardRow>& row_info) { return row_info.param.name; });

TEST(ApproveGuard, DeepNestingFallsBackToScanning) {
  std::string cmd = "/approve abc deny";
  for (int i = 0; i < 12; ++i) {
    std::string quoted = "'";
    for (char c : cmd) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted += "'";
    cmd = "sh -c " + quoted;
  }
  EXPECT_TRUE(ContainsApproveCommand(cmd));
}

}  // namespace
}  // namespace sandrun::policy

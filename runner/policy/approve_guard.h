// The `/approve` guard (reference §1.2 step 9, SPEC §3.12): a command may not try to answer an
// approval through the shell. A candidate matches
//   ^/approve(@\S+)?\s+\S+\s+(allow-once|allow-always|always|deny)\b   (case-insensitive)
// Candidates are the simple commands of every chain/pipeline segment (&&, ||, ;, |, &, newline,
// subshell and command-substitution boundaries), after leading `NAME=value` assignments,
// reserved words (`!`, `{`, `then`, `do`, ...), and the prefixes `env [opts] [NAME=value]...`
// (including `env -S <payload>`, checked recursively), `command`, `builtin`, `exec` and `sudo
// [opts]`; the `-c` payloads of `sh|bash|dash|zsh|ksh|fish|ash` are checked recursively.
//
// This is not the shell analyser (a later issue): it is a small tokenizer (quotes, backslashes,
// comments, operators) that errs towards refusing. When the text cannot be tokenized
// (unterminated quote), or nesting is too deep, every token boundary of the raw text is checked.
// `echo /approve abc deny` is fine: the /approve text is an argument, not a command.
#pragma once

#include <optional>
#include <string_view>

#include "runner/policy/gate_types.h"

namespace sandrun::policy {

// true when `command` would run an `/approve <id> <decision>` command.
bool ContainsApproveCommand(std::string_view command);

// The refusal (code approve-command) when ContainsApproveCommand, else nullopt.
std::optional<Error> CheckApproveCommand(std::string_view command);

inline constexpr char kApproveCommandMessage[] =
    "exec cannot run /approve commands. Show the /approve command to the user as chat text, or "
    "route it through the approval command handler instead of shell execution.";

}  // namespace sandrun::policy

// Safe builtins (reference §10): `cd true pwd : [ test` satisfy a segment without an allowlist
// entry, and stay shell builtins in the rewritten command. That is safe only while the shell
// cannot evaluate one of their arguments as code, so a use with such an argument is not safe
// (it needs approval like any other miss, and counts as inline eval). Pure string logic.
//
// Pattern of use (argv of one analysed segment, argv[0] a safe builtin):
//   if (auto e = SafeBuiltinEvaluation(argv)) miss(e->why); else satisfied("safeBuiltins");
//
// What evaluates (checked with bash 5.2, dash 0.5.12 and busybox 1.35 on Debian 12; zsh, ksh
// and mksh by their manuals):
//   - `test -v NAME[SUB]` / `[ -v NAME[SUB] ]`: bash (and ksh, zsh) evaluate SUB as arithmetic,
//     which runs $(...) in it and evaluates the values of the variables it names, so
//     `test -v 'a[$(cmd)]'` and, with X='a[$(cmd)]' in the environment, `test -v 'b[X]'` run
//     cmd. dash and busybox have no -v.
//   - Integer operands of -eq -ne -lt -le -gt -ge: bash's test builtin reads them as plain
//     integers (only [[ evaluates them), but zsh, ksh and mksh evaluate them as arithmetic, and
//     the gateway shell ($SHELL) or a `zsh -c` payload may be one of those. The same for the
//     descriptor operand of -t.
// Refused, fail closed (for test and [; the final `]` of `[` is not an operand):
//   - any argument shaped NAME[...] (an array element, in whatever position);
//   - an argument after -v that is not a plain name [A-Za-z_][A-Za-z0-9_]*;
//   - an argument before or after -eq -ne -lt -le -gt -ge, or after -t, that is not a decimal
//     integer literal [+-]?[0-9]+.
// cd true pwd and : evaluate nothing: their arguments are words (the analyser already refused
// every expansion), and what a `cd` changes cannot swap the programs that run after it (the
// rewritten command names each by its absolute path).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandrun::policy {

// cd true pwd : [ test (reference §10): the names.
bool IsSafeBuiltin(std::string_view word);

struct BuiltinEvaluation {
  std::string what;  // the inline-eval description: "test -v operand", "[ -eq operand", ...
  std::string why;   // the miss: which argument, and what the shell would do with it
};

// nullopt when no argument of `argv` (argv[0] a safe builtin) can be evaluated as code.
std::optional<BuiltinEvaluation> SafeBuiltinEvaluation(const std::vector<std::string>& argv);

// The other builtins of bash, dash, zsh and ksh (`.`, source, trap, export, read, alias, ...):
// a command word that names one and resolves to no file runs the shell's own command, which an
// allowlist entry (even `*`, which matches unresolved commands) never authorises.
bool IsShellBuiltin(std::string_view word);

// For argv[0] a shell builtin: the inline-eval description when the shell would run code given
// in its arguments ("trap inline command": trap eval fc bind complete compgen mapfile readarray
// let source . alias enable, or any argument shaped NAME[...], whose subscript read export
// declare unset ... evaluate as arithmetic), nullopt otherwise.
std::optional<std::string> ShellBuiltinInlineEval(const std::vector<std::string>& argv);

}  // namespace sandrun::policy

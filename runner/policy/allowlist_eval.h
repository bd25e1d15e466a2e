// Evaluating a command against an allowlist (reference §5.5, §5.7, §4.4 step 5; SPEC §6.1-6.5):
// the shell analysis, every segment resolved and satisfied by the allowlist, a safe bin, a safe
// builtin or a trusted skill bin; the rewritten command that runs when all are satisfied; the
// inline-eval hits; the patterns allow-always would persist. Pure apart from the file probes in
// ResolveContext.
//
// Never satisfied automatically, whatever the entries say (each an allowlist miss, reported in
// `inline_eval` as well, and persisted by allow-always only as the exact command):
//   - a safe builtin whose arguments the shell could evaluate (safe_builtins.h:
//     `test -v 'a[$(cmd)]'`);
//   - a program using an option, subcommand or mode that runs commands (exec_options.h:
//     `git -c alias.x='!cmd' x`, `tar --to-command=cmd`, `vim`), when `exec_options` is set.
// What runs is rewritten: every command word that resolved is replaced by its absolute path, and
// a path word that did not resolve (matched by its cwd-resolved path) by that absolute path, so
// a `cd` (or CDPATH) earlier in the command cannot make it name another file.
// Shells (sh, bash, dash, busybox sh, any link to one) are never satisfied by their own entry:
// `sh -c 'PAYLOAD'` is satisfied when every segment of the payload is, and then runs as the
// rewritten payload in a subshell, `(/usr/bin/ls && /usr/bin/echo hi)`, without the shell.
// Every other shell form is a miss, or refused outright (SegmentEvaluation::refused).
//
// Pattern of use:
//   AllowlistInputs in{.entries = &resolved.allowlist, .safe_bins = &bins, .resolve = rc};
//   AllowlistEvaluation e = EvaluateAllowlist(command, in);
//   if (e.satisfied) run(e.rewritten);
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/config/approvals_file.h"
#include "runner/policy/command_resolution.h"
#include "runner/policy/exec_options.h"
#include "runner/policy/safe_bins.h"
#include "runner/policy/safe_builtins.h"
#include "runner/policy/shell_analysis.h"

namespace sandrun::policy {

struct AllowlistInputs {
  const std::vector<config::AllowlistEntry>* entries = nullptr;  // may be null: no entries
  const SafeBinSettings* safe_bins = nullptr;                    // may be null: no safe bins
  bool auto_allow_skills = false;
  std::vector<std::string> skill_bin_dirs;        // trusted skill bin dirs (absolute)
  const ExecOptionTable* exec_options = nullptr;  // may be null: no program is listed
  ResolveContext resolve;
};

struct SegmentEvaluation {
  std::vector<std::string> argv;  // as parsed
  std::string resolved_path;      // the policy target (realpath); "" when unresolved
  // "allowlist" | "safeBins" | "safeBuiltins" | "skills" | "" (not satisfied)
  std::string satisfied_by;
  std::optional<size_t> entry;  // the matching allowlist entry (index into inputs.entries)
  std::string blocked;          // why it can never be satisfied automatically
  // Why it is refused outright in allowlist mode, whatever an operator or an entry would say (a
  // shell behind a wrapper, given by path or as a login shell: reference §10 denies them).
  std::string refused;
  std::string miss;      // why it is not satisfied (blocked, unresolved, no match, ...)
  bool expands = false;  // a glob, brace or ~ word: always needs approval
  std::optional<std::string> inline_eval;   // "python3 -c", "awk inline program", ...
  std::optional<std::string> exec_option;   // "git -c", "vim (runs commands itself)", ...
  bool shell_wrapper = false;               // a shell: judged by its -c payload only
  std::vector<std::string> rewritten_argv;  // commands replaced by their resolved paths
  // A satisfied shell wrapper: its payload rewritten, which runs as `(payload)` in its place.
  std::string rewritten_payload;
  // allow-always: the patterns this segment would persist (its realpath; the parts' for a
  // sh -c wrapper; none for a shell, interpreter, builtin, blocked or unresolved command).
  std::vector<std::string> always_patterns;
  // For allow-always: nothing derivable from this segment (forces the exact-command entry).
  bool needs_exact_entry = false;
};

struct AllowlistEvaluation {
  bool analysis_ok = false;
  std::string analysis_reason;  // the analyser's category when !analysis_ok
  std::vector<ShellChainPart> parts;
  std::vector<SegmentEvaluation> segments;  // every pipeline segment of every part, in order
  // Analysis ok, every segment satisfied and none expands.
  bool satisfied = false;
  // The first segment's `refused` (a deny in allowlist mode); "" when none is.
  std::string refused;
  // The command, or a shell payload in it, has a heredoc or a here-string: under
  // strictInlineEval a deny, since it can feed code to an interpreter (reference §10).
  bool heredoc = false;
  std::vector<std::string> inline_eval;  // hits, in segment order (shell-wrapper payloads too)
  std::string rewritten;                 // the command that runs when satisfied ("" otherwise)
  // Every segment matched an entry whose source is "allow-always", or the exact-command entry
  // for this command exists (reference §4.4 step 3).
  bool durable = false;
  std::vector<size_t> used_entries;  // entries that matched (bookkeeping)
  // What allow-always persists: path patterns, or one "=command:<hash>" entry when some segment
  // yields none. Empty when nothing may be persisted (inline eval is handled by the caller).
  std::vector<std::string> always_patterns;
};

AllowlistEvaluation EvaluateAllowlist(std::string_view command, const AllowlistInputs& inputs);

}  // namespace sandrun::policy

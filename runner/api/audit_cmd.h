// `sandrun audit` (SPEC §2.2): OpenClaw's `security audit` warnings for the exec policy. It reads
// config.json, the approvals file, the built-in safe-bin profiles and the exec-option table
// (profiles/exec-options), changes nothing, and reports what makes the policy weaker than it
// looks:
//
//   where                                   id (severity warn unless marked info)
//   <scope>.safeBins                        safe-bin-jq, safe-bin-interpreter, safe-bin-unprofiled
//   <scope>.safeBinTrustedDirs              safe-bin-trusted-dir-relative,
//                                           safe-bin-trusted-dir-writable
//   <scope>.security                        security-full-gateway (info)
//   exec-approvals.json                     allowlist-wildcard, shell-allowlisted,
//     agents.<id>.allowlist[i]              interpreter-allowlisted-without-strict-inline-eval,
//                                           exec-option-program-allowlisted
//   exec-approvals.json                     approvals-file-permissions, approvals-file-owner,
//                                           approvals-file-corrupt, approvals-file-unreadable
//   <prefix>tools.elevated.*                elevated-default-full, elevated-allow-from-any
//   <prefix>sandbox.docker.*                sandbox-cap-drop, sandbox-network, sandbox-unconfined,
//                                           sandbox-writable-root (info)
//   tenants.<id>.hostExecution              tenant-host-execution
//
// where <scope> is "tools.exec" (the global level) or "agents.<id>.tools.exec", and <prefix> is
// "", "agents.<id>.", "tenants.<t>." or "tenants.<t>.agents.<id>." (audit_sandbox_checks.h).
//
// Pattern of use (tests build the input by hand; the CLI loads it from disk):
//   AuditInput in{.config = &cfg, .approvals = &file, .approvals_mode = 0600u,
//                 .builtin_profiles = &profiles};
//   for (const AuditFinding& f : AuditExecPolicy(in)) ...
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runner/api/cli_context.h"
#include "runner/config/approvals_file.h"
#include "runner/config/config.h"
#include "runner/policy/exec_options.h"
#include "runner/policy/safe_bins.h"

namespace sandrun::api {

struct AuditFinding {
  std::string id;        // stable kebab-case id (the table above)
  std::string severity;  // "warn" | "info"
  std::string where;     // "tools.exec.safeBins", "exec-approvals.json agents.main.allowlist[2]"
  std::string message;   // what is wrong and how to fix it
  bool operator==(const AuditFinding&) const = default;
};

// Everything the audit looks at. Pure data: nothing here touches the disk, except through
// `trusted_dir_mode` when it is set.
struct AuditInput {
  const config::Config* config = nullptr;              // null: the built-in defaults
  const config::ApprovalsFile* approvals = nullptr;    // null: no file (or it could not be used)
  std::string approvals_path = "exec-approvals.json";  // named in messages
  std::optional<unsigned> approvals_mode;              // st_mode & 07777, when the file exists
  bool approvals_owned_by_us = true;
  std::string approvals_error;       // the file exists but does not parse: the parser's message
  std::string approvals_read_error;  // the file exists but cannot be read (a symlink, not a
                                     // regular file, an I/O error): why
  const std::map<std::string, policy::SafeBinProfile>* builtin_profiles = nullptr;  // null: none
  // profiles/exec-options (programs that run commands through their options); null: none.
  const policy::ExecOptionTable* exec_options = nullptr;
  // The mode (st_mode & 07777) of an existing directory named in safeBinTrustedDirs, following
  // symlinks; nullopt when it is missing or not a directory. Unset: the world-writable check
  // is skipped, which keeps AuditExecPolicy pure (relative entries are still reported; the
  // config loader already refuses them, so that check matters only for settings built in code).
  std::function<std::optional<unsigned>(const std::string& dir)> trusted_dir_mode;
};

// The findings, in a fixed order: the approvals file itself; then per scope (the global level,
// then each agent of config.agents by id) its safeBins and safeBinTrustedDirs; then each
// allowlist section of the approvals file by agent id ("*" first); then the security=full notes;
// then the host-access and container findings of AuditHostAndSandbox (audit_sandbox_checks.h).
//
// Scopes and sections:
//   - safeBins / safeBinTrustedDirs are checked at the global level and for every agent of
//     config.agents (their settings are already merged over the global ones); an agent repeats
//     no finding the global level already reported for the same entry.
//   - safeBins entries are normalised as sandrun uses them (trimmed, lowercased; absent key: the
//     defaults cut uniq head tail tr wc). jq -> safe-bin-jq; an interpreter-like name or a shell
//     (policy::IsInterpreterLike / IsShellName) -> safe-bin-interpreter; a name with neither a
//     built-in profile nor a tools.exec.safeBinProfiles entry -> safe-bin-unprofiled. Each of
//     these entries is ignored by sandrun, and the message says so.
//   - Every allowlist entry of every section (including "*"): a pattern that matches every
//     command ("*", "**", "/**", "/*/**", ...: judged by matching probe paths) ->
//     allowlist-wildcard, and nothing else for that entry. Otherwise a pattern covering a shell
//     (its basename without * ? [ ] is a shell, or it matches /bin/sh, /usr/bin/bash, ...) ->
//     shell-allowlisted, whatever strictInlineEval says (strictInlineEval does not look inside
//     `sh -c` payloads, and an allowlisted shell satisfies `bash -c '<anything>'`); a pattern
//     covering an interpreter (IsInterpreterLike of the pattern, or it matches /usr/bin/python3,
//     /usr/bin/node, ...) -> interpreter-allowlisted-without-strict-inline-eval when
//     tools.exec.strictInlineEval is off for the section's agent (for "*": at the global level
//     or for any agent of config.agents). A pattern covering a program of `exec_options` (its
//     basename without * ? [ ] is a name or alias there, or it matches /usr/bin/<name>, /bin/
//     or /usr/local/bin/<name>, or a bare name) -> exec-option-program-allowlisted, whatever
//     strictInlineEval says (git -c alias.x='!cmd', tar --to-command, vim: such uses are never
//     satisfied by the entry). "=command:" entries are exact and never reported.
//   - security-full-gateway (info), for "main", every agent of config.agents and every agent
//     section of the approvals file: the effective security (tools.exec mode/security, lowered
//     by the approvals file's policy for that agent as the exec path does) is full while the
//     agent's commands run on the gateway (host gateway, or host auto with sandbox.mode off; with
//     non-main, the main session).
//   - The approvals file: mode & 077 -> approvals-file-permissions; not owned by us ->
//     approvals-file-owner; `approvals_error` -> approvals-file-corrupt; `approvals_read_error`
//     -> approvals-file-unreadable.
std::vector<AuditFinding> AuditExecPolicy(const AuditInput& in);

// Text: one line per finding, "sandrun audit: WARN <where>: <message>" (INFO for notes), then
// "sandrun audit: N warnings, M notes" (or "sandrun audit: no findings").
std::string FormatAuditText(const std::vector<AuditFinding>& findings);
// JSON: {"findings":[{"id","severity","where","message"}],"warnings":N} and a newline.
std::string FormatAuditJson(const std::vector<AuditFinding>& findings);

// `sandrun audit [--json]`. Loads the config (--config, or $SANDRUN_HOME/config.json), the
// approvals file read-only (lstat + open(O_NOFOLLOW) + read + config::ParseApprovals: a corrupt
// file is reported, never moved aside; audit changes nothing on disk), the built-in safe-bin
// profiles and exec-option table, stats the safeBinTrustedDirs, and prints the findings on stdout
// (config and approvals normalisation warnings go to stderr). Exit codes: 0 when no finding is a
// warning (notes allowed), 1 when at least one is, 2 when the input is unusable (no state dir, a
// config file that does not load, built-in profiles or the exec-option table that do not load).
int RunAuditCommand(const GlobalOptions& global, bool json);

}  // namespace sandrun::api

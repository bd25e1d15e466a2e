// The approvals decision on gateway and node (reference §4.3-§4.4, SPEC §6.5): the effective
// policy from tools.exec and the approvals file, the allowlist evaluation, strictInlineEval, and
// the verdict: run (the rewritten command when the allowlist is satisfied), ask an operator, or
// deny. `sandrun policy check` and the exec path both call EvaluateApprovals; neither copies it.
// strictInlineEval counts every hit of AllowlistEvaluation::inline_eval: OpenClaw's inline
// programs, safe builtins whose arguments would be evaluated (safe_builtins.h) and programs
// running commands through their options (exec_options.h); the latter two are allowlist misses
// even without strictInlineEval (allowlist_eval.h).
//
// Pattern of use:
//   ApprovalInputs in = ...;                       // settings, resolved approvals file, probes
//   ApprovalVerdict v = EvaluateApprovals(decision, request.command, in);
//   switch (v.verdict) { case kAllow: run(v.command); case kAsk: pending(v); case kDeny: ... }
//   On a timeout (or with no approval route): FallbackOutcome f = ResolveAskFallback(v);
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runner/config/approvals_file.h"
#include "runner/config/settings.h"
#include "runner/policy/allowlist_eval.h"
#include "runner/policy/exec_options.h"
#include "runner/policy/gate.h"
#include "runner/policy/safe_bins.h"

namespace sandrun::policy {

struct ApprovalInputs {
  const config::AgentSettings* settings = nullptr;
  // The approvals file resolved for the agent with tools.exec's security/ask as fallbacks.
  config::ResolvedApprovals approvals;
  // Built-in safe-bin profiles (profiles/safe-bins/default.json); custom ones come from settings.
  const std::map<std::string, SafeBinProfile>* builtin_safe_bin_profiles = nullptr;
  // Programs that run commands through their options (exec_options.h); null: the built-in
  // profiles/exec-options/default.json (BuiltinExecOptionTable). When that cannot be loaded the
  // verdict is a deny ("invalid-config"): nothing runs on a policy that could not be read.
  const ExecOptionTable* exec_options = nullptr;
  ResolveContext resolve;  // PATH and cwd of the command's environment
  // Analyse and resolve even when nothing depends on it (security=full, ask=off, no strict
  // inline eval): `policy check` shows the analysis; exec skips the work.
  bool analyse_always = false;
};

enum class Verdict { kAllow, kAsk, kDeny };
const char* VerdictName(Verdict v);  // allow | ask | deny

struct ApprovalVerdict {
  Verdict verdict = Verdict::kDeny;
  std::string code;    // for kDeny: the tool error code ("denied")
  std::string reason;  // deny: the message; ask: why approval is needed; allow: why it may run
  config::Security security = config::Security::kDeny;  // min(tools.exec, file)
  config::Ask ask = config::Ask::kOff;                  // max(tools.exec, file)
  config::Security ask_fallback = config::Security::kDeny;
  AllowlistEvaluation eval;
  std::string command;                         // what runs when allowed or approved
  std::vector<std::string> warnings;           // "Warning: strict inline-eval mode requires ..."
  bool inline_eval_required = false;           // strictInlineEval hit (or an unanalysable command)
  std::vector<std::string> allowed_decisions;  // for kAsk: allow-once [allow-always] deny
  // What allow-always persists (empty: nothing; then it acts as allow-once).
  std::vector<std::string> always_patterns;
};

ApprovalVerdict EvaluateApprovals(const Decision& decision, const std::string& command,
                                  const ApprovalInputs& inputs);

// No decision arrived (timeout, or no approval route): askFallback decides (reference §4.4).
struct FallbackOutcome {
  bool approved = false;
  std::string command;  // when approved: what runs (the rewritten command under allowlist)
  std::string
      reason;  // when not approved: "approval-timeout" | "approval-timeout (allowlist-miss)"
};
FallbackOutcome ResolveAskFallback(const ApprovalVerdict& verdict);

// The effective safe-bin settings of an agent (tools.exec.safeBins/-TrustedDirs/-Profiles over
// the built-in profiles).
SafeBinSettings SafeBinSettingsFor(const config::ExecSettings& exec,
                                   const std::map<std::string, SafeBinProfile>& builtin);

}  // namespace sandrun::policy

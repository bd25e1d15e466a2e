// The whole decision for one exec call, as one pure function (in the spirit of sandbox2's
// `PolicyBuilder ... TryBuild()`): every input is gathered beforehand by a loader (the config,
// the approvals file, the login PATH, the seccomp profile, the facts in GateContext), then
// DecideExec returns the verdict, the finished plan, the command that would run (rewritten under
// an allowlist), what allow-always would persist and what askFallback would do. Nothing after it
// changes the policy outcome: the runtime only acts on the verdict (it asks the reviewer on
// needs-review, hands ask to an operator or to askFallback), and `sandrun policy check` prints
// the same verdict without running anything.
//
// Pattern of use:
//   DecisionInputs in = <loaded>;                      // see runner/api/exec_inputs.h
//   ExecDecision d = DecideExec(request, in);
//   switch (d.verdict) {
//     case kDeny:        refuse(d.refusal->WireCode(), d.refusal->message);
//     case kNeedsReview: ask the reviewer; allow once, deny, or treat as kAsk
//     case kAsk:         an operator decides (broker), else d.fallback decides
//     case kAllow:       run d.gated->plan with d.command
//   }
//
// Order: tool policy (exec) -> the gate's refusals (gate.h) -> the plan (BuildPlan: sandbox
// settings, workdir) -> the script preflight (gateway below full/off) -> the approvals flow
// (approval_flow.h: allowlist, approvals file, inline eval) -> mode auto's reviewer eligibility.
// The preflight is the one step that reads files (the scripts the command names).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runner/config/approvals_file.h"
#include "runner/config/settings.h"
#include "runner/policy/approval_flow.h"
#include "runner/policy/exec_request.h"
#include "runner/policy/gate.h"
#include "runner/policy/tool_policy.h"
#include "sandbox/base/result.h"

namespace sandrun::policy {

// What DecideExec reads besides the request. ctx.settings and ctx.caller must be set.
struct DecisionInputs {
  GateContext ctx;
  ToolPolicyLayers tools;  // the global and the agent's tool policy
  // The approvals file resolved for the agent (config::ResolveApprovals with tools.exec's
  // security/ask), for gateway/node calls; nullopt: not loaded (sandbox calls, refused calls).
  std::optional<config::ResolvedApprovals> approvals;
  // Built-in safe-bin profiles; null when the allowlist cannot matter (security=full, ask=off).
  const std::map<std::string, SafeBinProfile>* safe_bin_profiles = nullptr;
  const ExecOptionTable* exec_options = nullptr;  // null: the built-in table
  bool analyse_always = false;  // `policy check`: analyse even when nothing depends on it
};

enum class ExecVerdict { kAllow, kDeny, kAsk, kNeedsReview };
const char* ExecVerdictName(ExecVerdict v);  // allow | deny | ask | needs-review

struct ExecDecision {
  ExecVerdict verdict = ExecVerdict::kDeny;
  Decision decision;                // where it runs (filled in even when refused)
  bool background_allowed = false;  // the tool policy allows `process` for this call
  std::optional<GatedPlan> gated;   // the plan, once BuildPlan succeeded
  std::optional<Error> refusal;     // kDeny: the wire code and OpenClaw's message
  // Why: the refusal's message, why approval is needed, or why it may run.
  std::string reason;
  // What runs when allowed, or when an ask is approved (the rewritten command under an
  // allowlist, else the command as requested).
  std::string command;
  // The approvals flow's verdict (gateway/node), with the analysis and the allowlist matches.
  std::optional<ApprovalVerdict> approvals;
  // kAsk / kNeedsReview: the decisions an operator may give and what allow-always persists
  // (empty: allow-always acts as allow-once).
  std::vector<std::string> allowed_decisions;
  std::vector<std::string> always_patterns;
  // kAsk / kNeedsReview: what askFallback does when no operator can answer (the one-shot CLI,
  // or an approval that timed out).
  FallbackOutcome fallback;
};

ExecDecision DecideExec(const ExecRequest& request, const DecisionInputs& in);

// Whether mode auto's reviewer may decide an ask: single commands it can analyse whole.
bool ReviewerEligible(const ApprovalVerdict& verdict);

// An approval was needed, nobody can give it and askFallback refused: OpenClaw's headless text,
// the effective policy and how to fix it.
std::string HeadlessDenial(const ApprovalVerdict& verdict, const std::string& reason);

}  // namespace sandrun::policy

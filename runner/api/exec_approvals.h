// The approvals flow of one exec call, between the gate's plan and the executor (SPEC §6.5):
// gathers the approvals file, the safe-bin profiles and the command's PATH/cwd for
// policy::EvaluateApprovals, keeps the allowlist's bookkeeping, persists allow-always, asks the
// mode-auto reviewer, and renders the approval-pending result and the headless refusal.
//
// Pattern of use (RunExecTool):
//   SANDRUN_ASSIGN_OR_RETURN(CallApprovals a, EvaluateCallApprovals(in));
//   switch (a.verdict.verdict) { kAllow: plan.command = a.verdict.command; RecordApprovalUse(..);
//                                kDeny: refuse; kAsk: broker or headless fallback }
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runner/config/approvals_file.h"
#include "runner/config/settings.h"
#include "runner/policy/approval_flow.h"
#include "runner/policy/exec_request.h"
#include "runner/policy/gate.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

// profiles/safe-bins/default.json, loaded once per process (a failure is not cached).
Result<const std::map<std::string, policy::SafeBinProfile>*> BuiltinSafeBinProfiles();

struct CallApprovals {
  policy::ApprovalVerdict verdict;
  config::ResolvedApprovals approvals;
  std::vector<std::string> warnings;  // from the approvals file (normalisation, permissions)
};

// After an allowed run: lastUsedAt / lastUsedCommand / lastResolvedPath of the entries that
// matched (reference §4.4 step 9), in the tenant's approvals file (config::ApprovalsPath).
// Best effort: a failure is returned for a warning.
Status RecordApprovalUse(const std::string& state_dir, const std::string& tenant,
                         const CallApprovals& approvals, const std::string& command);

// allow-always: adds `patterns` (source "allow-always") to agents.<agent>.allowlist of the
// tenant's approvals file.
Status PersistAllowAlways(const std::string& state_dir, const std::string& tenant,
                          const std::string& agent, const std::vector<std::string>& patterns);

enum class ReviewerAnswer { kAllow, kDeny, kAsk };
struct ReviewerResult {
  ReviewerAnswer answer = ReviewerAnswer::kAsk;
  std::string note;  // why it fell back to a human (timeout, exit code, unknown answer)
};
// {"command","rewritten","host","cwd","agentId","sessionKey","security","ask","reason",
//  "segments":[{"argv","resolvedPath"}],"inlineEval":[...]}
std::string ReviewerPlanJson(const policy::ApprovalVerdict& verdict, const std::string& host,
                             const std::string& cwd, const policy::Caller& caller);
// Runs `reviewer.command` with `plan_json` on stdin; its first stdout line decides: allow, deny
// or ask (case-insensitive). Anything else, a non-zero exit or the timeout means ask.
ReviewerResult RunReviewer(const config::ReviewerSettings& reviewer, const std::string& plan_json);

struct PendingApprovalView {
  std::string id;
  int64_t expires_at_ms = 0;
  std::string host;  // gateway | node
  std::string command;
  std::string cwd;
  std::vector<std::string> allowed_decisions;
  std::vector<std::string> warnings;
};
std::string ApprovalSlug(const std::string& id);  // id[0:8]
// OpenClaw's approval-pending result (reference §1.5), with sandrun's approve command added.
std::string RenderApprovalPending(const PendingApprovalView& view);

}  // namespace sandrun::api

#include "runner/policy/exec_decision.h"

#include <string>
#include <utility>
#include <vector>

#include "runner/policy/host_resolution.h"
#include "runner/policy/preflight.h"

namespace sandrun::policy {

const char* ExecVerdictName(ExecVerdict v) {
  switch (v) {
    case ExecVerdict::kAllow:
      return "allow";
    case ExecVerdict::kDeny:
      return "deny";
    case ExecVerdict::kAsk:
      return "ask";
    case ExecVerdict::kNeedsReview:
      return "needs-review";
  }
  return "deny";
}

bool ReviewerEligible(const ApprovalVerdict& v) {
  if (!v.eval.analysis_ok || v.eval.parts.size() != 1 || v.eval.segments.size() != 1) {
    return false;
  }
  const SegmentEvaluation& s = v.eval.segments[0];
  return !s.shell_wrapper && s.blocked.empty();
}

std::string HeadlessDenial(const ApprovalVerdict& v, const std::string& reason) {
  // Only fixes that would change the answer, and never a setting that is already in force.
  std::vector<std::string> fixes = {
      "start `sandrun serve` so an operator can answer (`sandrun approvals approve <id> "
      "allow-once`)"};
  if (v.inline_eval_required) {
    fixes.push_back(
        "run the program without inline code (strictInlineEval asks for it whatever the "
        "allowlist or ask say)");
  } else {
    if (v.security == config::Security::kAllowlist && v.eval.analysis_ok) {
      fixes.push_back("add an allowlist entry (`sandrun approvals allowlist add <pattern>`)");
    }
    // ask=off would not help: under an allowlist it turns a miss into a denial, and under
    // security=full only ask=always asks.
    if (v.ask == config::Ask::kAlways) fixes.push_back("set tools.exec.ask=on-miss");
    if (v.security != config::Security::kFull) fixes.push_back("set tools.exec.security=full");
  }
  std::string text = std::string(
                         "exec denied: Headless runs cannot wait for interactive exec approval.\n"
                         "Effective host exec policy: security=") +
                     SecurityName(v.security) + " ask=" + AskName(v.ask) +
                     " askFallback=" + SecurityName(v.ask_fallback) +
                     "\nWhy approval is needed: " + v.reason + " (" + reason + ").\nFix: ";
  for (size_t i = 0; i < fixes.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == fixes.size() ? ", or " : ", ") + fixes[i];
  }
  return text + ".";
}

namespace {

std::string EnvValue(const std::map<std::string, std::string>& env, const char* key) {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

}  // namespace

ExecDecision DecideExec(const ExecRequest& request, const DecisionInputs& in) {
  ExecDecision d;
  d.command = request.command;
  if (in.ctx.settings == nullptr) {
    d.refusal =
        Error::Refusal("invalid-config", "internal: the decision was made without settings.");
    d.reason = d.refusal->message;
    return d;
  }
  const config::AgentSettings& settings = *in.ctx.settings;
  d.background_allowed = IsToolAllowed(in.tools, kToolProcess);
  d.decision = Decide(settings, request, in.ctx.caller);
  auto deny = [&d](Error e) {
    d.verdict = ExecVerdict::kDeny;
    d.reason = e.message;
    d.refusal = std::move(e);
    return std::move(d);
  };
  // Tool policy first (SPEC §6b): a denied exec runs nothing, wherever it would have gone.
  if (auto denied = CheckToolAllowed(in.tools, kToolExec)) return deny(*denied);
  if (!d.decision.allowed()) return deny(*d.decision.refusal);
  auto gated = BuildPlan(d.decision, request, in.ctx);
  if (!gated) return deny(std::move(gated).error());
  d.gated = std::move(gated).value();
  exec::Plan& plan = d.gated->plan;
  // Script preflight (reference §3.5) where OpenClaw runs it: gateway runs below full/off.
  if (PreflightApplies(d.gated->decision)) {
    if (auto refused = ScriptPreflight(request.command, plan.cwd)) {
      return deny(*refused);
    }
  }
  if (!d.gated->decision.approvals_apply) {
    d.verdict = ExecVerdict::kAllow;
    d.reason = "sandboxed: allowlists and approvals apply to gateway and node only";
    return d;
  }
  if (!in.approvals) {
    return deny(Error::Refusal("invalid-config",
                               "internal: the approvals file was not loaded for a host command."));
  }
  // SPEC §6.5: allowlist, approvals file and inline eval decide what (if anything) runs.
  ApprovalInputs ai;
  ai.settings = &settings;
  ai.approvals = *in.approvals;
  ai.builtin_safe_bin_profiles = in.safe_bin_profiles;
  ai.exec_options = in.exec_options;
  ai.resolve.path = EnvValue(plan.env, "PATH");
  ai.resolve.cwd = plan.cwd;
  ai.resolve.home = EnvValue(in.ctx.host_env, "HOME");
  ai.analyse_always = in.analyse_always;
  ApprovalVerdict v = EvaluateApprovals(d.gated->decision, request.command, ai);
  plan.warnings.insert(plan.warnings.end(), v.warnings.begin(), v.warnings.end());
  d.reason = v.reason;
  d.command = v.command;
  switch (v.verdict) {
    case Verdict::kDeny:
      d.verdict = ExecVerdict::kDeny;
      d.refusal = Error::Refusal(v.code, v.reason);
      break;
    case Verdict::kAllow:
      d.verdict = ExecVerdict::kAllow;
      break;
    case Verdict::kAsk:
      d.allowed_decisions = v.allowed_decisions;
      d.always_patterns = v.always_patterns;
      d.fallback = ResolveAskFallback(v);
      d.verdict = settings.exec.mode == config::ExecMode::kAuto &&
                          !settings.exec.reviewer.command.empty() && ReviewerEligible(v)
                      ? ExecVerdict::kNeedsReview
                      : ExecVerdict::kAsk;
      break;
  }
  d.approvals = std::move(v);
  return d;
}

}  // namespace sandrun::policy

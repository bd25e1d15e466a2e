#include "runner/policy/approval_flow.h"

#include <algorithm>

#include "runner/policy/host_resolution.h"

namespace sandrun::policy {
namespace {

config::Security MinSecurity(config::Security a, config::Security b) { return std::min(a, b); }
config::Ask MaxAsk(config::Ask a, config::Ask b) { return std::max(a, b); }

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kAllow:
      return "allow";
    case Verdict::kAsk:
      return "ask";
    case Verdict::kDeny:
      return "deny";
  }
  return "deny";
}

SafeBinSettings SafeBinSettingsFor(const config::ExecSettings& exec,
                                   const std::map<std::string, SafeBinProfile>& builtin) {
  std::map<std::string, CustomSafeBinProfile> custom;
  for (const auto& [bin, p] : exec.safe_bin_profiles) {
    CustomSafeBinProfile c;
    c.min_positional = static_cast<double>(p.min_positional);
    if (p.max_positional) c.max_positional = static_cast<double>(*p.max_positional);
    c.allowed_value_flags = p.allowed_value_flags;
    c.allowed_flags = p.allowed_flags;
    c.denied_flags = p.denied_flags;
    custom.emplace(bin, std::move(c));
  }
  return MakeSafeBinSettings(exec.safe_bins, exec.safe_bin_trusted_dirs, builtin, custom);
}

ApprovalVerdict EvaluateApprovals(const Decision& decision, const std::string& command,
                                  const ApprovalInputs& in) {
  ApprovalVerdict v;
  // reference §4.3: the file may only tighten what tools.exec says.
  v.security = MinSecurity(decision.effective.security, in.approvals.security);
  v.ask = MaxAsk(decision.effective.ask, in.approvals.ask);
  v.ask_fallback = MinSecurity(v.security, in.approvals.ask_fallback);
  v.command = command;
  if (v.security == config::Security::kDeny) {
    v.verdict = Verdict::kDeny;
    v.code = "denied";
    v.reason =
        std::string("exec denied: host=") + HostName(decision.effective_host) + " security=deny";
    return v;
  }

  const config::ExecSettings& exec = in.settings->exec;
  if (!in.analyse_always && v.security == config::Security::kFull && v.ask == config::Ask::kOff &&
      !exec.strict_inline_eval) {
    v.verdict = Verdict::kAllow;  // nothing below could change the answer
    v.reason = "security=full ask=off";
    return v;
  }
  const ExecOptionTable* exec_options = in.exec_options;
  if (exec_options == nullptr) {
    Result<const ExecOptionTable*> builtin = BuiltinExecOptionTable();
    if (!builtin) {
      v.verdict = Verdict::kDeny;
      v.code = "invalid-config";
      v.reason = builtin.error().ToString();
      return v;
    }
    exec_options = *builtin;
  }
  static const std::map<std::string, SafeBinProfile> kNone;
  const SafeBinSettings bins = SafeBinSettingsFor(
      exec, in.builtin_safe_bin_profiles ? *in.builtin_safe_bin_profiles : kNone);
  AllowlistInputs ai;
  ai.entries = &in.approvals.allowlist;
  ai.safe_bins = &bins;
  ai.auto_allow_skills = in.approvals.auto_allow_skills;
  ai.skill_bin_dirs = exec.skill_bin_dirs;
  ai.exec_options = exec_options;
  ai.resolve = in.resolve;
  v.eval = EvaluateAllowlist(command, ai);

  const bool allowlist_mode = v.security == config::Security::kAllowlist;
  const bool satisfied = allowlist_mode && v.eval.satisfied;
  const bool durable = v.eval.durable;
  auto deny = [&v](std::string reason) {
    v.verdict = Verdict::kDeny;
    v.code = "denied";
    v.reason = std::move(reason);
    return std::move(v);
  };
  // Refused whatever an operator would say: forms OpenClaw denies (reference §10).
  if (allowlist_mode && !v.eval.refused.empty()) return deny("exec denied: " + v.eval.refused);
  if (exec.strict_inline_eval && v.eval.heredoc) {
    return deny(
        "exec denied: strict inline-eval mode refuses heredocs and here-strings (they can feed "
        "code to an interpreter)");
  }
  // Nobody is asked under ask=off: a command the analysis cannot read is a miss, named by what
  // the analysis refused (strictInlineEval does not turn it into a question).
  if (allowlist_mode && v.ask == config::Ask::kOff && !v.eval.analysis_ok) {
    return deny("exec denied: allowlist miss: the command cannot be analysed (" +
                v.eval.analysis_reason + ")");
  }
  if (exec.strict_inline_eval) {
    if (!v.eval.analysis_ok) {
      v.inline_eval_required = true;
      v.warnings.push_back(
          "Warning: strict inline-eval mode requires explicit approval for a command it cannot "
          "analyse (" +
          v.eval.analysis_reason + ").");
    }
    for (const std::string& hit : v.eval.inline_eval) {
      v.inline_eval_required = true;
      v.warnings.push_back("Warning: strict inline-eval mode requires explicit approval for " +
                           hit + ".");
    }
  }
  const bool miss = !v.eval.analysis_ok || !satisfied;
  const bool requires_approval =
      v.ask == config::Ask::kAlways ||
      (!durable && v.ask == config::Ask::kOnMiss && allowlist_mode && miss) ||
      v.inline_eval_required;
  if (satisfied) v.command = v.eval.rewritten;

  if (!requires_approval) {
    if (allowlist_mode && !satisfied && !durable) return deny("exec denied: allowlist miss");
    v.verdict = Verdict::kAllow;
    v.reason = satisfied ? "allowlist satisfied"
               : durable
                   ? "approved before (allow-always)"
                   : std::string("security=") + SecurityName(v.security) + " ask=" + AskName(v.ask);
    return v;
  }

  v.verdict = Verdict::kAsk;
  if (v.inline_eval_required) {
    v.reason = "strict inline-eval mode requires explicit approval";
  } else if (v.ask == config::Ask::kAlways) {
    v.reason = "ask=always requires approval every time";
  } else if (!v.eval.analysis_ok) {
    v.reason = "the command cannot be analysed (" + v.eval.analysis_reason + ")";
  } else {
    v.reason = "allowlist miss";
    for (const SegmentEvaluation& s : v.eval.segments) {
      if (s.expands) {
        v.reason = "a glob, brace or ~ word needs approval";
        break;
      }
      if (s.satisfied_by.empty()) {
        v.reason = "allowlist miss: " + s.miss;
        break;
      }
    }
  }
  // allow-always never persists an inline eval, and means nothing under ask=always.
  const bool always_offered =
      v.ask != config::Ask::kAlways && !v.inline_eval_required && !v.eval.always_patterns.empty();
  if (always_offered) v.always_patterns = v.eval.always_patterns;
  v.allowed_decisions = always_offered
                            ? std::vector<std::string>{"allow-once", "allow-always", "deny"}
                            : std::vector<std::string>{"allow-once", "deny"};
  return v;
}

FallbackOutcome ResolveAskFallback(const ApprovalVerdict& v) {
  FallbackOutcome f;
  if (v.inline_eval_required) {
    f.reason = "approval-timeout";  // a fallback never approves an inline eval
    return f;
  }
  switch (v.ask_fallback) {
    case config::Security::kFull:
      f.approved = true;
      f.command = v.command;
      return f;
    case config::Security::kDeny:
      f.reason = "approval-timeout";
      return f;
    case config::Security::kAllowlist:
      if (v.eval.analysis_ok && v.eval.satisfied) {
        f.approved = true;
        f.command = v.eval.rewritten;
      } else {
        f.reason = "approval-timeout (allowlist-miss)";
      }
      return f;
  }
  return f;
}

}  // namespace sandrun::policy

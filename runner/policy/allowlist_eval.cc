#include "runner/policy/allowlist_eval.h"

#include <algorithm>

#include "runner/policy/env_policy.h"
#include "runner/policy/inline_eval.h"
#include "sandbox/base/strings.h"

namespace sandrun::policy {
namespace {

// sh -c "a && b" payloads are evaluated part by part to this depth (reference §5.5).
constexpr int kMaxShellWrapperDepth = 3;
constexpr std::string_view kExactCommandPrefix = "=command:";

std::string DirName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string StripTrailingSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// The parts with every word replaced by the segment's rewritten argv.
std::vector<ShellChainPart> RewriteParts(std::vector<ShellChainPart> parts,
                                         const std::vector<SegmentEvaluation>& segments) {
  size_t n = 0;
  for (ShellChainPart& part : parts) {
    for (ShellSegment& seg : part.pipeline) {
      const SegmentEvaluation& s = segments[n++];
      for (size_t i = 0; i < seg.words.size() && i < s.rewritten_argv.size(); ++i) {
        seg.words[i].text = s.rewritten_argv[i];
      }
    }
  }
  return parts;
}

class Evaluator {
 public:
  Evaluator(const AllowlistInputs& in, AllowlistEvaluation* out) : in_(in), out_(out) {
    resolve_ = in.resolve;
    if (resolve_.path_entries.empty()) resolve_.path_entries = SplitPathList(resolve_.path);
    if (resolve_.scan == nullptr) resolve_.scan = &scan_;
    if (in.entries != nullptr) {
      patterns_.reserve(in.entries->size());
      for (const config::AllowlistEntry& e : *in.entries) {
        // The exact-command entries are looked up by hash, never matched as globs.
        patterns_.push_back(std::string_view(e.pattern).starts_with(kExactCommandPrefix)
                                ? std::string()
                                : e.pattern);
      }
    }
  }

  // Evaluates every segment of `parts`, appending to `segments`; true when all are satisfied.
  bool EvaluateParts(const std::vector<ShellChainPart>& parts, int depth,
                     std::vector<SegmentEvaluation>* segments) {
    bool all = true;
    for (const ShellChainPart& part : parts) {
      for (const ShellSegment& seg : part.pipeline) {
        SegmentEvaluation s = EvaluateSegment(seg, depth);
        if (s.satisfied_by.empty() || s.expands) all = false;
        segments->push_back(std::move(s));
      }
    }
    return all;
  }

 private:
  SegmentEvaluation EvaluateSegment(const ShellSegment& seg, int depth) {
    SegmentEvaluation s;
    s.argv = seg.Argv();
    s.expands = seg.Expands();
    s.rewritten_argv = s.argv;
    if (s.argv.empty()) {
      s.miss = s.blocked = "empty command";
      s.needs_exact_entry = true;
      return s;
    }
    if (!seg.assignments.empty()) {
      s.miss = s.blocked = "variable assignments before the command change its environment";
      s.needs_exact_entry = true;
      s.inline_eval = DetectInlineEval(s.argv);
      if (s.inline_eval) out_->inline_eval.push_back(*s.inline_eval);
      return s;
    }
    if (IsSafeBuiltin(s.argv[0])) {
      if (std::optional<BuiltinEvaluation> e = SafeBuiltinEvaluation(s.argv)) {
        // The builtin would run code from its arguments: an inline eval, never automatic.
        s.miss = e->why;
        s.inline_eval = e->what;
        out_->inline_eval.push_back(e->what);
        s.needs_exact_entry = true;
        return s;
      }
      s.satisfied_by = "safeBuiltins";
      return s;
    }
    SegmentTarget t = ResolveSegment(s.argv, resolve_);
    s.resolved_path = t.policy.real_path;
    for (const auto& [index, resolution] : t.commands) {
      if (resolution.resolved()) {
        s.rewritten_argv[index] = resolution.resolved_path;
      } else if (!resolution.cwd_path.empty()) {
        // An unresolved path (matched by its cwd-resolved path): absolute too, so that a `cd`
        // before it cannot make it name another file.
        s.rewritten_argv[index] = resolution.cwd_path;
      }
    }
    if (!t.effective_argv.empty()) {
      s.inline_eval = DetectInlineEval(t.effective_argv);
      if (s.inline_eval) out_->inline_eval.push_back(*s.inline_eval);
    }
    if (!t.blocked.empty()) {
      s.miss = s.blocked = t.blocked;
      s.needs_exact_entry = true;
      return s;
    }
    if (in_.exec_options != nullptr && !t.effective_argv.empty()) {
      if (std::optional<ExecOptionHit> hit =
              DetectExecOption(*in_.exec_options, t.effective_argv, t.execution.real_path)) {
        // The program would run a command it was told to: the allowlist entry (or safe-bin
        // profile) authorises the program, not that command.
        s.exec_option = hit->description;
        // Listed once when the inline-eval check named the same form (find -exec).
        if (!s.inline_eval || *s.inline_eval != hit->description) {
          out_->inline_eval.push_back(hit->description);
        }
        s.miss = hit->description + ": " + hit->why + "; needs approval";
        s.needs_exact_entry = true;
        return s;
      }
    }
    const std::string exec_name =
        t.effective_argv.empty() ? std::string() : CommandName(t.effective_argv[0]);

    if (auto index = MatchAllowlist(patterns_, t.policy.Target(), in_.resolve.home)) {
      s.satisfied_by = "allowlist";
      s.entry = *index;
      out_->used_entries.push_back(*index);
    } else if (in_.safe_bins != nullptr && t.execution.resolved() &&
               CheckSafeBinUsage(*in_.safe_bins, t.execution.real_path, t.effective_argv).ok) {
      s.satisfied_by = "safeBins";
    } else if (in_.auto_allow_skills && t.policy.via_path && t.policy.resolved() &&
               IsSkillDir(DirName(t.policy.real_path))) {
      s.satisfied_by = "skills";
    } else if (IsShellName(exec_name) && depth < kMaxShellWrapperDepth &&
               t.effective_argv.size() >= 3 && t.effective_argv[1] == "-c") {
      if (!IsPosixShellName(exec_name)) {
        // fish and csh quote differently: the analysis and the rewritten payload (POSIX
        // quoting) would not mean to them what they mean here.
        s.shell_wrapper = true;
        s.miss = exec_name + " does not read its -c payload as POSIX sh; needs approval";
      } else {
        EvaluateShellWrapper(t.effective_argv[2], depth, &s);
      }
      // What runs is the payload rewritten too (resolved paths, quoted words): after a `cd` or
      // with a relative PATH entry the inner shell would otherwise find other programs than
      // the ones evaluated here.
      if (!s.satisfied_by.empty()) s.rewritten_argv[t.command_index + 2] = s.rewritten_payload;
    }
    if (s.satisfied_by.empty() && s.miss.empty()) {
      s.miss = t.policy.resolved() ? "no allowlist entry matches " + t.policy.real_path
                                   : "\"" + s.argv[t.command_index] + "\" was not found";
    }
    AlwaysPattern(t, exec_name, &s);
    return s;
  }

  // sh -c "a && b": a payload of several parts is satisfied when each of its segments is; a
  // single command is not evaluated (it needs approval, reference §10).
  void EvaluateShellWrapper(const std::string& payload, int depth, SegmentEvaluation* s) {
    s->shell_wrapper = true;
    ShellAnalysis inner = AnalyzeShellCommand(payload);
    if (!inner.ok) {
      s->miss = "the shell payload cannot be analysed (" + inner.reason + ")";
      return;
    }
    if (inner.parts.size() < 2) {
      s->miss = "a single-command shell payload needs approval";
      return;
    }
    std::vector<SegmentEvaluation> parts;
    bool all = EvaluateParts(inner.parts, depth + 1, &parts);
    if (all) s->rewritten_payload = RenderShellCommand(RewriteParts(inner.parts, parts));
    for (const SegmentEvaluation& p : parts) {
      if (p.expands) s->expands = true;
      if (p.needs_exact_entry) s->needs_exact_entry = true;
      s->always_patterns.insert(s->always_patterns.end(), p.always_patterns.begin(),
                                p.always_patterns.end());
      if (s->miss.empty() && p.satisfied_by.empty()) s->miss = "shell payload: " + p.miss;
    }
    if (all) s->satisfied_by = "allowlist";
  }

  // reference §5.7: the resolved path, never a shell, an interpreter or a blocked wrapper.
  void AlwaysPattern(const SegmentTarget& t, const std::string& exec_name, SegmentEvaluation* s) {
    if (s->shell_wrapper) {
      if (s->always_patterns.empty()) s->needs_exact_entry = true;
      return;
    }
    if (IsShellName(exec_name) || IsInterpreterLike(exec_name) || !t.policy.resolved()) {
      s->needs_exact_entry = true;
      return;
    }
    s->always_patterns = {t.policy.real_path};
  }

  bool IsSkillDir(const std::string& dir) const {
    for (const std::string& d : in_.skill_bin_dirs) {
      if (StripTrailingSlashes(d) == dir) return true;
    }
    return false;
  }

  const AllowlistInputs& in_;
  ResolveContext resolve_;  // in_.resolve with PATH split once
  PathScan scan_;           // PATH directories stat'ed once for this evaluation
  AllowlistEvaluation* out_;
  std::vector<std::string> patterns_;
};

}  // namespace

AllowlistEvaluation EvaluateAllowlist(std::string_view command, const AllowlistInputs& inputs) {
  AllowlistEvaluation out;
  ShellAnalysis analysis = AnalyzeShellCommand(command);
  out.analysis_ok = analysis.ok;
  out.analysis_reason = analysis.reason;
  if (!analysis.ok) return out;
  out.parts = std::move(analysis.parts);

  Evaluator evaluator(inputs, &out);
  out.satisfied = evaluator.EvaluateParts(out.parts, 0, &out.segments);
  if (out.satisfied) out.rewritten = RenderShellCommand(RewriteParts(out.parts, out.segments));

  // Durable: the exact-command entry, or allow-always entries for every segment. (The hash is
  // computed only when some entry or allow-always needs it.)
  std::string exact;
  auto exact_pattern = [&]() -> const std::string& {
    if (exact.empty()) exact = config::ExactCommandPattern(command);
    return exact;
  };
  // A glob, brace or ~ word always needs approval, whatever the entries say.
  bool all_always = !out.segments.empty();
  for (const SegmentEvaluation& s : out.segments) {
    if (s.expands || !s.entry || inputs.entries == nullptr ||
        (*inputs.entries)[*s.entry].source != "allow-always") {
      all_always = false;
    }
  }
  bool has_exact = false;
  if (inputs.entries != nullptr) {
    has_exact = std::any_of(inputs.entries->begin(), inputs.entries->end(),
                            [&](const config::AllowlistEntry& e) {
                              return std::string_view(e.pattern).starts_with(kExactCommandPrefix) &&
                                     e.pattern == exact_pattern();
                            });
  }
  out.durable = all_always || has_exact;

  // allow-always: the segments' paths, or the exact command when one yields nothing.
  bool exact_needed = false;
  for (const SegmentEvaluation& s : out.segments) {
    if (s.needs_exact_entry || s.expands) exact_needed = true;
    for (const std::string& one : s.always_patterns) {
      if (std::find(out.always_patterns.begin(), out.always_patterns.end(), one) ==
          out.always_patterns.end()) {
        out.always_patterns.push_back(one);
      }
    }
  }
  if (exact_needed) out.always_patterns = {exact_pattern()};
  return out;
}

}  // namespace sandrun::policy

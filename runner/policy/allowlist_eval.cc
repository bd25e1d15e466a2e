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

// The parts with every word replaced by the segment's rewritten argv; a satisfied shell
// wrapper becomes its rewritten payload, run as a subshell of the command's own shell.
std::vector<ShellChainPart> RewriteParts(std::vector<ShellChainPart> parts,
                                         const std::vector<SegmentEvaluation>& segments) {
  size_t n = 0;
  for (ShellChainPart& part : parts) {
    for (ShellSegment& seg : part.pipeline) {
      const SegmentEvaluation& s = segments[n++];
      if (s.shell_wrapper && !s.satisfied_by.empty()) {
        seg.group = s.rewritten_payload;
        continue;
      }
      for (size_t i = 0; i < seg.words.size() && i < s.rewritten_argv.size(); ++i) {
        seg.words[i].text = s.rewritten_argv[i];
      }
    }
  }
  return parts;
}

bool IsHeredocCategory(std::string_view reason) {
  return reason == kShellHeredoc || reason == kShellHereString;
}

// `~` or `~/...` with nothing else the shell would expand: once the word is replaced by the
// absolute path it resolved to, what runs no longer expands anything.
bool TildeOnly(const std::string& text) {
  return (text == "~" || text.starts_with("~/")) &&
         text.find_first_of("*?[]{}") == std::string::npos;
}

// How a shell was invoked (sh, bash, dash, ...): its options and where its -c payload is.
struct ShellForm {
  bool login = false;             // -l, --login, or a cluster with l (bash -lc)
  std::optional<size_t> payload;  // the index of the -c payload in argv
  bool canonical = false;         // exactly `sh -c PAYLOAD`
};

ShellForm ParseShellForm(const std::vector<std::string>& argv) {
  ShellForm f;
  bool has_c = false;
  size_t i = 1;
  for (; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || (a[0] != '-' && a[0] != '+')) break;
    if (a == "--login" || a == "-login") {
      f.login = true;
    } else if (a.starts_with("--")) {
      if (a == "--rcfile" || a == "--init-file") ++i;  // their value
    } else {
      bool takes_value = false;
      for (size_t k = 1; k < a.size(); ++k) {
        if (a[0] == '-' && a[k] == 'c') has_c = true;
        if (a[0] == '-' && a[k] == 'l') f.login = true;
        if (a[k] == 'o' || a[k] == 'O') takes_value = true;
      }
      if (takes_value) ++i;
    }
  }
  if (has_c && i < argv.size()) f.payload = i;
  f.canonical = argv.size() == 3 && argv[1] == "-c";
  return f;
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
      // reference §10: `FOO=1 ls` is denied even with ls allowlisted (the call's env is the
      // checked way to set variables).
      s.miss = s.blocked = s.refused =
          "variable assignments before the command (NAME=value cmd) change its environment: "
          "never allowed; set them in the call's env";
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
    std::vector<bool> absolute(s.argv.size(), false);  // command words rewritten to a path
    for (const auto& [index, resolution] : t.commands) {
      if (resolution.resolved()) {
        s.rewritten_argv[index] = resolution.resolved_path;
        absolute[index] = true;
      } else if (!resolution.cwd_path.empty()) {
        // An unresolved path (matched by its cwd-resolved path): absolute too, so that a `cd`
        // before it cannot make it name another file.
        s.rewritten_argv[index] = resolution.cwd_path;
        absolute[index] = true;
      }
    }
    // `~/bin/tool` runs as the path it resolved to: its tilde is not an expansion of what runs.
    s.expands = false;
    for (size_t i = 0; i < seg.words.size(); ++i) {
      if (seg.words[i].expands && !(absolute[i] && TildeOnly(seg.words[i].text))) {
        s.expands = true;
      }
    }
    if (!t.effective_argv.empty()) {
      s.inline_eval = DetectInlineEval(t.effective_argv);
      if (s.inline_eval) out_->inline_eval.push_back(*s.inline_eval);
    }
    if (!t.blocked.empty()) {
      s.miss = s.blocked = t.blocked;
      s.needs_exact_entry = true;
      // Under strictInlineEval an inline program behind a blocked wrapper counts too
      // (`sudo python3 -c ...`, `stdbuf -o0 node -e ...`): the first interpreter-like word
      // after the wrapper is the program it runs (one copy of the rest, however long argv is).
      if (!s.inline_eval) {
        auto program =
            std::find_if(s.argv.begin() + static_cast<std::ptrdiff_t>(t.command_index) + 1,
                         s.argv.end(), [](const std::string& w) { return IsInterpreterLike(w); });
        if (program != s.argv.end()) {
          s.inline_eval = DetectInlineEval(std::vector<std::string>(program, s.argv.end()));
          if (s.inline_eval) out_->inline_eval.push_back(*s.inline_eval);
        }
      }
      NoteExecOption(t, &s);  // busybox tar -I ...: the applet's options count as well
      return s;
    }
    const std::string exec_name =
        t.effective_argv.empty() ? std::string() : CommandName(t.effective_argv[0]);
    // A shell by its name or by what it is (a link to one under another name).
    const std::string shell =
        IsShellName(exec_name) ? exec_name : CommandName(t.execution.real_path);
    if (IsShellName(shell)) {
      // A shell is never satisfied by its own entry: only by its payload (reference §10).
      EvaluateShell(t, shell, depth, &s);
      AlwaysPattern(t, exec_name, &s);
      return s;
    }
    if (NoteExecOption(t, &s)) {
      // The program would run a command it was told to: the allowlist entry (or safe-bin
      // profile) authorises the program, not that command.
      s.needs_exact_entry = true;
      return s;
    }
    if (!t.policy.resolved() && t.wrappers == 0 && IsShellBuiltin(t.effective_argv[0])) {
      // `. x`, `source x`, `trap CODE EXIT`, `export X`: no file, so the shell runs its own
      // command; `*` (which matches unresolved commands) does not authorise the shell's own.
      s.miss = "\"" + t.effective_argv[0] +
               "\" is a shell builtin: allowlist entries authorise programs, not the shell's "
               "own commands";
      s.inline_eval = ShellBuiltinInlineEval(t.effective_argv);
      if (s.inline_eval) out_->inline_eval.push_back(*s.inline_eval);
      s.needs_exact_entry = true;
      return s;
    }
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
    }
    if (s.satisfied_by.empty() && s.miss.empty()) {
      s.miss = t.policy.resolved() ? "no allowlist entry matches " + t.policy.real_path
                                   : "\"" + s.argv[t.command_index] + "\" was not found";
    }
    AlwaysPattern(t, exec_name, &s);
    return s;
  }

  // An option or mode of the program that runs commands (exec_options.h): recorded in `s` (its
  // miss) and among the inline evals; false when there is none.
  bool NoteExecOption(const SegmentTarget& t, SegmentEvaluation* s) {
    if (in_.exec_options == nullptr || t.effective_argv.empty()) return false;
    std::optional<ExecOptionHit> hit =
        DetectExecOption(*in_.exec_options, t.effective_argv, t.execution.real_path);
    if (!hit) return false;
    s->exec_option = hit->description;
    // Listed once when the inline-eval check named the same form (find -exec).
    if (!s->inline_eval || *s->inline_eval != hit->description) {
      out_->inline_eval.push_back(hit->description);
    }
    if (s->miss.empty()) s->miss = hit->description + ": " + hit->why + "; needs approval";
    return true;
  }

  // A shell (sh, bash, busybox sh, a link to one): satisfied only as `sh -c PAYLOAD` whose
  // payload's every segment is satisfied, one segment or many alike; what then runs is the
  // payload rewritten, as a subshell of the command's own shell: the shell itself never runs,
  // so its start-up files, options and quoting cannot change what was evaluated (a deliberate
  // divergence: OpenClaw asks for a single-command payload, SPEC §10). A shell behind a
  // dispatch wrapper, given by path or as a login shell is refused outright (reference §10:
  // denied); one with no analysable payload (a script, stdin, -s, -i, other options) is a miss.
  void EvaluateShell(const SegmentTarget& t, const std::string& shell, int depth,
                     SegmentEvaluation* s) {
    s->shell_wrapper = true;
    const ShellForm form = ParseShellForm(t.effective_argv);
    // The payload is judged wherever the shell sits, so that strictInlineEval sees its inline
    // programs even when the shell itself is refused.
    std::optional<ShellAnalysis> inner;
    std::vector<SegmentEvaluation> parts;
    bool all = false;
    std::string unanalysable;
    if (form.payload) {
      if (depth + 1 >= kMaxShellWrapperDepth) {
        unanalysable = "shell payloads nested more than " +
                       std::to_string(kMaxShellWrapperDepth - 1) + " deep";
      } else {
        inner = AnalyzeShellCommand(t.effective_argv[*form.payload]);
        if (inner->ok) {
          all = EvaluateParts(inner->parts, depth + 1, &parts);
        } else {
          unanalysable = inner->reason;
          if (IsHeredocCategory(inner->reason)) out_->heredoc = true;
        }
      }
      if (!unanalysable.empty()) {
        // The shell evaluates code nobody could read: an inline eval like python3 -c.
        s->inline_eval = shell + " -c";
        out_->inline_eval.push_back(*s->inline_eval);
      }
    }
    for (const SegmentEvaluation& p : parts) {
      if (p.expands) s->expands = true;
      if (s->refused.empty() && !p.refused.empty()) s->refused = "shell payload: " + p.refused;
    }
    const std::string& word = t.argv[t.multiplexed ? t.command_index - 1 : t.command_index];
    if (t.wrappers > 0) {
      s->refused = "a shell behind a wrapper (" + CommandName(t.argv[0]) + " ... " + shell +
                   ") is never allowed; run " + shell + " -c '...' itself";
    } else if (word.find('/') != std::string::npos) {
      s->refused = "a shell given by path (" + word + ") is never allowed; write " +
                   CommandName(word) + " -c '...'";
    } else if (form.login) {
      s->refused = "a login shell (" + shell +
                   " -l) runs its profile's commands first: never allowed; write " + shell +
                   " -c '...'";
    }
    s->needs_exact_entry = true;
    if (!s->refused.empty()) {
      s->miss = s->refused;
      return;
    }
    if (!IsPosixShellName(shell)) {
      // fish and csh quote differently: the analysis (POSIX quoting) would not mean to them
      // what it means here.
      s->miss = shell + " does not read its -c payload as POSIX sh; needs approval";
      return;
    }
    if (!form.canonical) {
      s->miss =
          "a shell with no analysable payload (a script, stdin, -s, -i, options or "
          "arguments after the payload) needs approval; only " +
          shell + " -c '...' is evaluated";
      return;
    }
    if (!unanalysable.empty()) {
      s->miss = "the shell payload cannot be analysed (" + unanalysable + ")";
      return;
    }
    if (t.multiplexed && !MatchAllowlist(patterns_, t.policy.Target(), in_.resolve.home)) {
      s->miss = "no allowlist entry matches " + t.policy.real_path + " (" + word + " " + shell +
                " -c needs the multi-call binary on the allowlist)";
      return;
    }
    s->needs_exact_entry = false;
    for (const SegmentEvaluation& p : parts) {
      if (p.needs_exact_entry) s->needs_exact_entry = true;
      s->always_patterns.insert(s->always_patterns.end(), p.always_patterns.begin(),
                                p.always_patterns.end());
      if (s->miss.empty() && p.satisfied_by.empty()) s->miss = "shell payload: " + p.miss;
    }
    if (!all) return;
    s->satisfied_by = "allowlist";
    s->rewritten_payload = RenderShellCommand(RewriteParts(inner->parts, parts));
  }

  // reference §5.7: the resolved path, never a shell, an interpreter or a blocked wrapper.
  void AlwaysPattern(const SegmentTarget& t, const std::string& exec_name, SegmentEvaluation* s) {
    if (s->shell_wrapper) {
      if (s->always_patterns.empty()) s->needs_exact_entry = true;
      if (s->needs_exact_entry) s->always_patterns.clear();
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
  out.heredoc = IsHeredocCategory(analysis.reason);
  if (!analysis.ok) return out;
  out.parts = std::move(analysis.parts);

  Evaluator evaluator(inputs, &out);
  out.satisfied = evaluator.EvaluateParts(out.parts, 0, &out.segments);
  for (const SegmentEvaluation& s : out.segments) {
    if (out.refused.empty() && !s.refused.empty()) out.refused = s.refused;
  }
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

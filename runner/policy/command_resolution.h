// What one analysed segment runs (reference §5.3, §10): argv[0] resolved to an executable file,
// dispatch wrappers (`env`, `nice`, `nohup`, `time`, `timeout`) unwrapped up to depth 4, and
// wrappers that change who or how a command runs (`sudo`, `doas`, `stdbuf`, `chrt`, ...) blocked.
// Pure apart from the two probes in ResolveContext (injectable for tests).
//
// Pattern of use:
//   ResolveContext rc{.path = plan.env["PATH"], .cwd = plan.cwd, .home = home};
//   SegmentTarget t = ResolveSegment(segment.Argv(), rc);
//   if (!t.blocked.empty()) ...;                 // never satisfied automatically
//   MatchAllowlist(patterns, t.policy.Target(), home);
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/policy/allowlist_pattern.h"
#include "runner/policy/gate_types.h"

namespace sandrun::policy {

// realpath(3) of `path`, "" when it cannot be resolved.
using RealPathFn = std::function<std::string(const std::string& path)>;
std::string SystemRealPath(const std::string& path);

struct ResolveContext {
  std::string path;              // PATH of the command's environment (after the login-PATH merge)
  std::string cwd;               // absolute: where the command runs
  std::string home;              // for a leading ~ in a command word
  IsExecutableFn is_executable;  // empty: StatIsExecutable
  RealPathFn real_path;          // empty: SystemRealPath
};

struct ExecutableResolution {
  std::string raw;            // the word as written
  bool via_path = false;      // a bare name, looked up in PATH
  std::string resolved_path;  // the executable file found ("" when unresolved)
  std::string real_path;      // realpath of resolved_path ("" when unresolved)
  std::string cwd_path;       // a raw path with '/' made absolute against cwd (even unresolved)

  bool resolved() const { return !resolved_path.empty(); }
  // What allowlist patterns are matched against.
  MatchTarget Target() const;
};

// A word containing '/' is a path (~ expanded, relative ones against cwd) and must be an
// executable file; a bare name is looked up in `ctx.path` (relative PATH entries are skipped).
ExecutableResolution ResolveExecutable(const std::string& word, const ResolveContext& ctx);

struct SegmentTarget {
  std::vector<std::string> argv;  // the segment's words
  // Index in argv of the command that finally runs (past unwrapped dispatch wrappers).
  size_t command_index = 0;
  // The command after the wrappers: argv[command_index..].
  std::vector<std::string> effective_argv;
  // What the allowlist is matched against: the effective command, except for a shell applet of
  // busybox/toybox, where it stays the multiplexer (reference §5.3).
  ExecutableResolution policy;
  // What runs: the effective command (the applet's shell for busybox sh ...).
  ExecutableResolution execution;
  // Why this segment can never be satisfied automatically ("" when it can): a blocked wrapper,
  // env with modifiers, wrapper depth, an option of a wrapper this code does not understand.
  std::string blocked;
  // argv[0] of every wrapper and of the command, with their resolutions (for the rewrite).
  std::vector<std::pair<size_t, ExecutableResolution>> commands;
};

inline constexpr int kMaxDispatchWrapperDepth = 4;

SegmentTarget ResolveSegment(const std::vector<std::string>& argv, const ResolveContext& ctx);

// The lowercased basename of a path or name ("/usr/bin/Python3" -> "python3").
std::string CommandName(std::string_view word);

}  // namespace sandrun::policy

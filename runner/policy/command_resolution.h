// What one analysed segment runs (reference §5.3, §10): argv[0] resolved to an executable file,
// dispatch wrappers (`env`, `nice`, `nohup`, `time`, `timeout`) unwrapped up to depth 4, and
// wrappers that change who or how a command runs (`sudo`, `doas`, `stdbuf`, `chrt`, ...) blocked.
// Multi-call binaries (busybox, toybox; by name, or reached through a link whose real path is
// one) are blocked as wrappers, except for a shell applet (`busybox sh ...`), whose payload the
// allowlist evaluation judges: the multiplexer's own entry never covers its other applets.
// Pure apart from the two probes in ResolveContext (injectable for tests).
//
// Pattern of use:
//   ResolveContext rc{.path = plan.env["PATH"], .cwd = plan.cwd, .home = home};
//   SegmentTarget t = ResolveSegment(segment.Argv(), rc);
//   if (!t.blocked.empty()) ...;                 // never satisfied automatically
//   MatchAllowlist(patterns, t.policy.Target(), home);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runner/policy/allowlist_pattern.h"
#include "runner/policy/gate_types.h"

namespace sandrun::policy {

// realpath(3) of `path`, "" when it cannot be resolved.
using RealPathFn = std::function<std::string(const std::string& path)>;
std::string SystemRealPath(const std::string& path);

// Remembers, per process, which names are absent from which PATH directories, keyed by the
// directory's identity and modification time: a directory is stat'ed once per evaluation and
// the failed lookups of earlier evaluations are skipped while it is unchanged (an added,
// removed or renamed entry changes the directory's mtime). Found files are always probed again.
// One PathScan lives for one evaluation (not thread-safe); the store behind it is shared.
class PathScan {
 public:
  // Whether `dir` may hold `name`: false only when an earlier lookup found it absent and the
  // directory has not changed since.
  bool MayContain(const std::string& dir, const std::string& name);
  // Records that `dir` has no executable `name` (as of this evaluation's view of `dir`).
  void RecordAbsent(const std::string& dir, const std::string& name);
  // realpath(3) of a PATH directory, remembered for this evaluation only: a directory's links
  // can be changed by the commands that run between two evaluations, and a stale real path
  // would let an allowlist entry match a file it does not name.
  std::string RealDirectory(const std::string& dir);

 private:
  struct View {
    bool ok = false;
    uint64_t dev = 0, ino = 0;
    int64_t mtime_ns = 0;
  };
  const View& Snapshot(const std::string& dir);
  std::map<std::string, View> views_;
  std::map<std::string, std::string> real_dirs_;
};

struct ResolveContext {
  std::string path;  // PATH of the command's environment (after the login-PATH merge)
  std::string cwd;   // absolute: where the command runs
  std::string home;  // for a leading ~ in a command word
  // `path` already split (SplitPathList), when the caller resolves many words: else split here.
  std::vector<std::string> path_entries;
  // Probes for tests. When both are empty (production) each candidate costs one lstat(2) and
  // the real path is the directory's (remembered per evaluation) plus the name, unless the file
  // is itself a symlink.
  IsExecutableFn is_executable;
  RealPathFn real_path;
  // For many lookups in one evaluation (the allowlist evaluator sets it): see PathScan.
  PathScan* scan = nullptr;
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
  // How many dispatch wrappers were unwrapped before the command (`nice env ls`: 2).
  size_t wrappers = 0;
  // A shell applet of a multi-call binary (`busybox sh -c ...`): argv[command_index - 1] is the
  // multiplexer, `policy` its resolution; `execution` too (what runs is the multiplexer).
  bool multiplexed = false;
};

inline constexpr int kMaxDispatchWrapperDepth = 4;

SegmentTarget ResolveSegment(const std::vector<std::string>& argv, const ResolveContext& ctx);

// The lowercased basename of a path or name ("/usr/bin/Python3" -> "python3").
std::string CommandName(std::string_view word);

}  // namespace sandrun::policy

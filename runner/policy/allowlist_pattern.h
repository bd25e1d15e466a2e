// Allowlist pattern matching (reference §5.4, SPEC §6.2): does an allowlist entry's pattern cover
// one resolved command segment? Pure string logic, no I/O: the caller resolves the command
// (PATH lookup, realpath) and hands the result over as a MatchTarget.
//
// Pattern of use:
//   MatchTarget t{.invoked = "rg", .via_path = true, .resolved_path = "/usr/bin/rg"};
//   std::optional<size_t> hit = MatchAllowlist(patterns, t, home);  // index of the first match
//
// Kinds of pattern (each trimmed of surrounding whitespace first; empty ones never match):
//   "*"               exactly a lone star: every segment, even one whose path did not resolve.
//   path glob         contains '/', '\' or '~': glob-matched (GlobMatchPath) against the real
//                     path, or, for an unresolved raw path such as "./build/x", against the
//                     cwd-resolved path. A leading "~" is the runner's $HOME.
//   bare-name glob    anything else ("rg", "git*"): matches only commands invoked through PATH
//                     that resolved (newer OpenClaw), glob-matched against the name as typed;
//                     never "./rg" or "/usr/bin/rg".
// Matching is case-sensitive (POSIX) and never uses std::regex: a hand-written two-pointer
// matcher, O(len(pattern) * len(path)) at worst, no allocation.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandrun::policy {

// One command segment as the matcher sees it.
struct MatchTarget {
  std::string invoked;        // argv[0] as typed ("rg", "./rg", "/usr/bin/rg")
  bool via_path = false;      // a bare name looked up in PATH (no '/' in `invoked`)
  std::string resolved_path;  // realpath of the executable, "" if it did not resolve
  std::string cwd_path;       // unresolved raw path containing '/': the cwd-resolved path, else ""
};

// Anchored glob match of a whole path:
//   "**"  any run of characters, '/' included (a run of three or more stars counts as "**")
//   "*"   any run of characters except '/'
//   "?"   exactly one character except '/'
// Every other character is literal, including [ ] ( ) + . ^ $ { }. A backslash in either string
// counts as '/' (OpenClaw normalises Windows separators). Case-sensitive.
bool GlobMatchPath(std::string_view pattern, std::string_view path);

// "~" -> home, "~/x" (or "~\x") -> home + "/x"; anything else (including "~user/x") unchanged.
// Trailing slashes of `home` are dropped. With an empty `home` the pattern is returned
// unchanged, so "~/bin/x" can never turn into "/bin/x".
std::string ExpandPatternHome(std::string_view pattern, const std::string& home);

// True for a pattern that is matched as a path glob (contains '/', '\' or '~').
bool IsPathPattern(std::string_view pattern);

// Index in `patterns` of the first pattern that matches `t`, nullopt if none does. `home` is the
// runner's $HOME (for "~"). Allocates only to expand a leading "~".
std::optional<size_t> MatchAllowlist(const std::vector<std::string>& patterns, const MatchTarget& t,
                                     const std::string& home);

}  // namespace sandrun::policy

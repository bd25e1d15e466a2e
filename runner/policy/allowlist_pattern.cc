#include "runner/policy/allowlist_pattern.h"

namespace sandrun::policy {
namespace {

constexpr size_t kNone = std::string_view::npos;

// OpenClaw replaces backslashes by '/' before matching; doing it per character keeps the
// matcher allocation-free.
char Norm(char c) { return c == '\\' ? '/' : c; }

std::string_view TrimView(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\v\f";
  size_t b = s.find_first_not_of(kSpace);
  if (b == kNone) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

}  // namespace

// Two-pointer wildcard matching with two kinds of star. A '*' cannot cross '/', so between two
// "**" every '/' of the text must meet a literal '/' of the pattern: inside such a chunk the
// classic "remember only the last star" backtracking is exact, and when that star would have to
// swallow a '/', the chunk cannot match from here and the last "**" swallows one more character
// instead. Choosing the earliest end for each chunk is optimal because the "**" after it absorbs
// anything. No recursion, no allocation.
bool GlobMatchPath(std::string_view pattern, std::string_view path) {
  size_t p = 0;
  size_t t = 0;
  size_t star_p = kNone;   // pattern index just after the last '*' of the current chunk
  size_t star_t = 0;       // text index that '*' has covered up to
  size_t dstar_p = kNone;  // pattern index just after the last "**"
  size_t dstar_t = 0;
  while (t < path.size()) {
    if (p < pattern.size()) {
      char pc = Norm(pattern[p]);
      if (pc == '*') {
        size_t q = p;
        while (q < pattern.size() && pattern[q] == '*') ++q;
        if (q - p >= 2) {
          dstar_p = q;
          dstar_t = t;
          star_p = kNone;
        } else {
          star_p = q;
          star_t = t;
        }
        p = q;
        continue;
      }
      char tc = Norm(path[t]);
      if (pc == '?' ? tc != '/' : pc == tc) {
        ++p;
        ++t;
        continue;
      }
    }
    if (star_p != kNone && Norm(path[star_t]) != '/') {
      t = ++star_t;
      p = star_p;
      continue;
    }
    if (dstar_p != kNone) {
      star_p = kNone;
      t = ++dstar_t;
      p = dstar_p;
      continue;
    }
    return false;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string ExpandPatternHome(std::string_view pattern, const std::string& home) {
  if (home.empty() || pattern.empty() || pattern[0] != '~') return std::string(pattern);
  if (pattern.size() > 1 && pattern[1] != '/' && pattern[1] != '\\') return std::string(pattern);
  std::string_view h = home;
  while (h.size() > 1 && h.back() == '/') h.remove_suffix(1);
  if (pattern.size() == 1) return std::string(h);
  std::string out;
  if (h != "/") out.assign(h);  // "/" + "/x" would give "//x"
  out.append(pattern.substr(1));
  return out;
}

bool IsPathPattern(std::string_view pattern) { return pattern.find_first_of("/\\~") != kNone; }

std::optional<size_t> MatchAllowlist(const std::vector<std::string>& patterns, const MatchTarget& t,
                                     const std::string& home) {
  // Bare names count as "invoked through PATH" only when nothing path-like was typed.
  const bool bare_invocation =
      t.via_path && !t.resolved_path.empty() && t.invoked.find_first_of("/\\") == std::string::npos;
  const std::string& path = t.resolved_path.empty() ? t.cwd_path : t.resolved_path;
  for (size_t i = 0; i < patterns.size(); ++i) {
    std::string_view pattern = TrimView(patterns[i]);
    if (pattern.empty()) continue;
    if (pattern == "*") return i;
    if (IsPathPattern(pattern)) {
      if (path.empty()) continue;
      bool hit = pattern[0] == '~' ? GlobMatchPath(ExpandPatternHome(pattern, home), path)
                                   : GlobMatchPath(pattern, path);
      if (hit) return i;
    } else if (bare_invocation && GlobMatchPath(pattern, t.invoked)) {
      return i;
    }
  }
  return std::nullopt;
}

}  // namespace sandrun::policy

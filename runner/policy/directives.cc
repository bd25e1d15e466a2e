#include "runner/policy/directives.h"

#include <cstddef>

#include "runner/policy/host_resolution.h"
#include "sandbox/base/strings.h"

namespace sandrun::policy {
namespace {

// ASCII whitespace, as the header says (JS's \s also knows Unicode spaces; messages that put
// a no-break space before a directive simply do not carry one here).
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool EqualsNoCaseAt(std::string_view text, size_t pos, std::string_view lower_word) {
  if (text.size() - pos < lower_word.size()) return false;
  for (size_t i = 0; i < lower_word.size(); ++i) {
    char c = text[pos + i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower_word[i]) return false;
  }
  return true;
}

// The position of the first `(?:^|\s)<name>(?=$|\s|:)` match's `<name>` (the slash), or npos.
// `name` is lower case. The leftmost regex match is the one with the leftmost name, since the
// optional leading whitespace is a single character right before it.
size_t FindDirective(std::string_view text, std::string_view name) {
  for (size_t pos = 0; pos < text.size(); ++pos) {
    if (text[pos] != '/') continue;
    if (pos > 0 && !IsSpace(text[pos - 1])) continue;
    if (!EqualsNoCaseAt(text, pos, name)) continue;
    const size_t end = pos + name.size();
    if (end == text.size() || IsSpace(text[end]) || text[end] == ':') return pos;
  }
  return std::string_view::npos;
}

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

// Whitespace, an optional ':', whitespace: where the arguments begin.
size_t SkipArgPrefix(std::string_view s, size_t i) {
  i = SkipSpace(s, i);
  if (i < s.size() && s[i] == ':') i = SkipSpace(s, i + 1);
  return i;
}

// The run of non-whitespace at `i` (empty at the end).
std::string_view TokenAt(std::string_view s, size_t i) {
  size_t end = i;
  while (end < s.size() && !IsSpace(s[end])) ++end;
  return s.substr(i, end - i);
}

// `a + " " + b`, every whitespace run one space, trimmed.
std::string CollapseJoin(std::string_view a, std::string_view b) {
  std::string out;
  out.reserve(a.size() + b.size() + 1);
  bool pending_space = false;
  auto append = [&](std::string_view part) {
    for (char c : part) {
      if (IsSpace(c)) {
        pending_space = true;
        continue;
      }
      if (pending_space && !out.empty()) out.push_back(' ');
      pending_space = false;
      out.push_back(c);
    }
  };
  append(a);
  pending_space = true;
  append(b);
  return out;
}

}  // namespace

ExecDirective ParseExecDirective(std::string_view text) {
  ExecDirective d;
  const size_t start = FindDirective(text, "/exec");
  if (start == std::string_view::npos) {
    d.cleaned = Trim(text);
    return d;
  }
  d.found = true;
  // OpenClaw finds the slash with a case-sensitive indexOf("/exec") in the case-insensitive
  // match, which is off by one for `/EXEC`; the slash is where the token begins, whatever case.
  const size_t args = start + 5;
  size_t i = SkipArgPrefix(text, args);
  size_t consumed = i;
  bool any = false;
  while (i < text.size()) {
    const std::string_view token = TokenAt(text, i);
    if (token.empty()) break;
    const size_t split = token.find_first_of("=:");
    if (split == std::string_view::npos || split == 0) break;
    const std::string key = Lower(token.substr(0, split));
    const std::string value = Trim(token.substr(split + 1));
    if (key == "host") {
      std::optional<Host> h = ParseHost(value);
      d.host = h ? std::optional<std::string>(HostName(*h)) : std::nullopt;
      if (!h) d.invalid_host = value;
    } else if (key == "security") {
      std::optional<config::Security> s = ParseSecurity(value);
      d.security = s ? std::optional<std::string>(SecurityName(*s)) : std::nullopt;
      if (!s) d.invalid_security = value;
    } else if (key == "ask") {
      std::optional<config::Ask> a = ParseAsk(value);
      d.ask = a ? std::optional<std::string>(AskName(*a)) : std::nullopt;
      if (!a) d.invalid_ask = value;
    } else if (key == "node") {
      d.node = value.empty() ? std::nullopt : std::optional<std::string>(value);
      if (value.empty()) d.invalid_node = value;
    } else {
      break;  // an unknown key ends the directive; the token stays in the text
    }
    any = true;
    i = SkipSpace(text, i + token.size());
    consumed = i;
  }
  d.bare = !any;
  d.cleaned = CollapseJoin(text.substr(0, start), text.substr(consumed));
  return d;
}

ElevatedDirective ParseElevatedDirective(std::string_view text) {
  ElevatedDirective d;
  const size_t start = FindDirective(text, "/elevated");
  if (start == std::string_view::npos) {
    d.cleaned = Trim(text);
    return d;
  }
  d.found = true;
  const size_t i = SkipArgPrefix(text, start + 9);
  const std::string_view word = TokenAt(text, i);
  if (word.empty()) {
    d.bare = true;
  } else {
    const std::string lower = Lower(word);
    if (lower == "on" || lower == "off" || lower == "ask" || lower == "full") {
      d.level = lower;
    } else {
      d.invalid = std::string(word);
    }
  }
  d.cleaned = CollapseJoin(text.substr(0, start), text.substr(i + word.size()));
  return d;
}

Directives ParseDirectives(std::string_view text) {
  Directives d;
  d.exec = ParseExecDirective(text);
  d.elevated = ParseElevatedDirective(d.exec.cleaned);
  d.cleaned = d.elevated.cleaned;
  return d;
}

}  // namespace sandrun::policy

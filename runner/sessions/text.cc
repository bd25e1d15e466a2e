#include "runner/sessions/text.h"

#include <string.h>

#include <vector>

#include "sandbox/base/strings.h"

namespace sandrun::sessions {
namespace {

constexpr std::string_view kSpace = " \t\r\n\v\f";

// Byte offset of the code point `n` characters into `s` (s.size() if fewer).
size_t OffsetOfChar(std::string_view s, size_t n) {
  size_t i = 0;
  while (i < s.size() && n > 0) {
    ++i;
    while (i < s.size() && IsUtf8Continuation(s[i])) ++i;
    --n;
  }
  return i;
}

std::string StripQuotes(std::string_view value) {
  std::string t = Trim(value);
  if (t.size() >= 2 &&
      ((t.front() == '"' && t.back() == '"') || (t.front() == '\'' && t.back() == '\''))) {
    return t.substr(1, t.size() - 2);
  }
  return t;
}

bool IsSpace(char c) { return kSpace.find(c) != std::string_view::npos; }

// OpenClaw's tokenizeCommand: /(?:[^\s"']+|"(?:\\.|[^"])*"|'(?:\\.|[^'])*')+/g
std::vector<std::string> Tokenize(std::string_view command) {
  std::vector<std::string> tokens;
  size_t i = 0;
  // The end of a quoted part starting at `at`, or npos when it is not closed.
  auto quoted_end = [&](size_t at) -> size_t {
    char q = command[at];
    size_t j = at + 1;
    while (j < command.size()) {
      if (command[j] == '\\' && j + 1 < command.size()) {
        j += 2;
      } else if (command[j] == q) {
        return j + 1;
      } else {
        ++j;
      }
    }
    return std::string_view::npos;
  };
  while (i < command.size()) {
    size_t start = i;
    size_t j = i;
    for (;;) {
      if (j >= command.size()) break;
      char c = command[j];
      if (c == '"' || c == '\'') {
        size_t e = quoted_end(j);
        if (e == std::string_view::npos) break;
        j = e;
      } else if (!IsSpace(c)) {
        ++j;
      } else {
        break;
      }
    }
    if (j == start) {
      i = start + 1;  // whitespace or an unclosed quote: not part of any token
      continue;
    }
    std::string token = StripQuotes(command.substr(start, j - start));
    if (!token.empty()) tokens.push_back(std::move(token));
    i = j;
  }
  return tokens;
}

}  // namespace

std::string TrimEnd(std::string_view s) {
  size_t e = s.find_last_not_of(kSpace);
  return e == std::string_view::npos ? std::string() : std::string(s.substr(0, e + 1));
}

size_t CountChars(std::string_view s) {
  size_t n = 0;
  for (char c : s) {
    if (!IsUtf8Continuation(c)) ++n;
  }
  return n;
}

std::string LastChars(std::string_view s, size_t n) {
  size_t total = CountChars(s);
  if (total <= n) return std::string(s);
  return std::string(s.substr(OffsetOfChar(s, total - n)));
}

std::string TruncateMiddle(std::string_view s, size_t max) {
  size_t total = CountChars(s);
  if (total <= max) return std::string(s);
  size_t half = max >= 3 ? (max - 3) / 2 : 0;
  std::string head(s.substr(0, OffsetOfChar(s, half)));
  std::string tail(s.substr(OffsetOfChar(s, total - half)));
  return head + "..." + tail;
}

std::string DeriveSessionName(std::string_view command) {
  std::vector<std::string> tokens = Tokenize(command);
  if (tokens.empty()) return "";
  const std::string& verb = tokens[0];
  const std::string* target = nullptr;
  for (size_t i = 1; i < tokens.size() && target == nullptr; ++i) {
    if (tokens[i].rfind('-', 0) != 0) target = &tokens[i];
  }
  if (target == nullptr && tokens.size() > 1) target = &tokens[1];
  if (target == nullptr) return verb;
  return StripQuotes(verb) + " " + TruncateMiddle(StripQuotes(*target), 48);
}

std::string FormatDurationCompact(int64_t ms) {
  if (ms < 0) return "n/a";
  if (ms < 1000) return std::to_string(ms) + "ms";
  int64_t seconds = ms / 1000;
  if (seconds < 60) return std::to_string(seconds) + "s";
  auto two = [](int64_t v) { return (v < 10 ? "0" : "") + std::to_string(v); };
  int64_t minutes = seconds / 60;
  if (minutes < 60) return std::to_string(minutes) + "m" + two(seconds % 60) + "s";
  return std::to_string(minutes / 60) + "h" + two(minutes % 60) + "m";
}

std::string CompactNotifyOutput(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (IsSpace(c)) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  if (CountChars(out) <= 180) return out;
  return out.substr(0, OffsetOfChar(out, 179)) + "\xE2\x80\xA6";  // "…"
}

std::string PadRight(std::string_view s, size_t width) {
  std::string out(s);
  size_t n = CountChars(s);
  if (n < width) out.append(width - n, ' ');
  return out;
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string EndReason(Phase phase, const std::string& exit_signal, int64_t timeout_ms) {
  if (phase == Phase::kTimedOut) {
    int64_t seconds = timeout_ms > 0 ? (timeout_ms + 999) / 1000 : 0;
    return "Command timed out after " + std::to_string(seconds) + " seconds";
  }
  if (phase == Phase::kFailed && !exit_signal.empty()) {
    return "Command aborted by signal " + exit_signal;
  }
  return "";
}

}  // namespace sandrun::sessions

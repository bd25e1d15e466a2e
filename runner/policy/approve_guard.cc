#include "runner/policy/approve_guard.h"

#include <cctype>
#include <string>
#include <vector>

namespace sandrun::policy {
namespace {

constexpr int kMaxDepth = 8;

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
char LowerChar(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (LowerChar(s[i]) != prefix[i]) return false;
  }
  return true;
}

// ^/approve(@\S+)?\s+\S+\s+(allow-once|allow-always|always|deny)\b, case-insensitive.
bool MatchApproveAt(std::string_view s) {
  if (!StartsWithNoCase(s, "/approve")) return false;
  size_t p = 8;
  const size_t n = s.size();
  if (p < n && s[p] == '@') {
    size_t q = ++p;
    while (p < n && !IsSpace(s[p])) ++p;
    if (p == q) return false;
  }
  if (p >= n || !IsSpace(s[p])) return false;
  while (p < n && IsSpace(s[p])) ++p;
  size_t id_start = p;
  while (p < n && !IsSpace(s[p])) ++p;
  if (p == id_start || p >= n) return false;
  while (p < n && IsSpace(s[p])) ++p;
  std::string_view rest = s.substr(p);
  for (std::string_view decision : {"allow-once", "allow-always", "always", "deny"}) {
    if (StartsWithNoCase(rest, decision) &&
        (rest.size() == decision.size() || !IsWordChar(rest[decision.size()]))) {
      return true;
    }
  }
  return false;
}

// Fallback for text the tokenizer cannot handle: try every position that starts a token.
bool RawScan(std::string_view s) {
  for (size_t p = 0; p < s.size(); ++p) {
    if (s[p] != '/') continue;
    if (p > 0) {
      char prev = s[p - 1];
      if (IsWordChar(prev) || prev == '/' || prev == '.' || prev == '-' || prev == '@') continue;
    }
    if (MatchApproveAt(s.substr(p))) return true;
  }
  return false;
}

struct Token {
  bool op = false;  // an operator (segment boundary) or a redirection marker
  std::string text;
};

constexpr char kRedirect[] = "<redirect>";

// Words and operators of POSIX-ish shell text. nullopt on an unterminated quote or escape.
std::optional<std::vector<Token>> Tokenize(std::string_view s) {
  std::vector<Token> out;
  std::string word;
  bool in_word = false;
  auto flush = [&] {
    if (in_word) out.push_back({false, word});
    word.clear();
    in_word = false;
  };
  auto emit_op = [&](std::string text) {
    flush();
    out.push_back({true, std::move(text)});
  };
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      flush();
      ++i;
    } else if (c == '\n') {
      emit_op("\n");
      ++i;
    } else if (c == '#' && !in_word) {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '\\') {
      if (i + 1 >= n) return std::nullopt;
      if (s[i + 1] != '\n') {  // backslash-newline is a line continuation
        word += s[i + 1];
        in_word = true;
      }
      i += 2;
    } else if (c == '\'') {
      size_t close = s.find('\'', i + 1);
      if (close == std::string_view::npos) return std::nullopt;
      word.append(s.substr(i + 1, close - i - 1));
      in_word = true;
      i = close + 1;
    } else if (c == '"') {
      size_t j = i + 1;
      while (j < n && s[j] != '"') {
        if (s[j] == '\\' && j + 1 < n &&
            std::string_view("\\\"$`\n").find(s[j + 1]) != std::string_view::npos) {
          if (s[j + 1] != '\n') word += s[j + 1];
          j += 2;
        } else {
          word += s[j++];
        }
      }
      if (j >= n) return std::nullopt;
      in_word = true;
      i = j + 1;
    } else if (c == '$' && i + 1 < n && s[i + 1] == '(') {
      emit_op("$(");
      i += 2;
    } else if (c == '`') {
      emit_op("`");
      ++i;
    } else if (c == '&' || c == '|' || c == ';' || c == '(' || c == ')') {
      std::string text(1, c);
      if (i + 1 < n && (c == '&' || c == '|' || c == ';') &&
          (s[i + 1] == c || (c == '|' && s[i + 1] == '&') || (c == ';' && s[i + 1] == '&'))) {
        text += s[i + 1];
      }
      emit_op(text);
      i += text.size();
    } else if (c == '<' || c == '>') {
      // An unquoted all-digit word right before the operator is its fd number, not a word.
      bool digits = in_word && !word.empty();
      for (char d : word) digits = digits && std::isdigit(static_cast<unsigned char>(d)) != 0;
      if (digits) {
        word.clear();
        in_word = false;
      }
      flush();
      while (i < n && std::string_view("<>&|-").find(s[i]) != std::string_view::npos) ++i;
      out.push_back({true, kRedirect});
    } else {
      word += c;
      in_word = true;
      ++i;
    }
  }
  flush();
  return out;
}

// The simple commands (word lists) between operators; redirection targets are dropped.
std::vector<std::vector<std::string>> SimpleCommands(const std::vector<Token>& tokens) {
  std::vector<std::vector<std::string>> out(1);
  bool skip_next_word = false;
  for (const Token& t : tokens) {
    if (t.op && t.text == kRedirect) {
      skip_next_word = true;
    } else if (t.op) {
      skip_next_word = false;
      if (!out.back().empty()) out.emplace_back();
    } else if (skip_next_word) {
      skip_next_word = false;
    } else {
      out.back().push_back(t.text);
    }
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

bool ContainsImpl(std::string_view text, int depth);

bool IsAssignment(const std::string& w) {
  size_t eq = w.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  if (!(std::isalpha(static_cast<unsigned char>(w[0])) != 0 || w[0] == '_')) return false;
  for (size_t i = 1; i < eq; ++i) {
    if (!IsWordChar(w[i])) return false;
  }
  return true;
}

bool IsReservedWord(const std::string& w) {
  for (std::string_view r :
       {"!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "time", "nohup"}) {
    if (w == r) return true;
  }
  return false;
}

std::string Basename(const std::string& w) {
  size_t slash = w.rfind('/');
  return slash == std::string::npos ? w : w.substr(slash + 1);
}

bool IsShell(const std::string& name) {
  for (std::string_view sh : {"sh", "bash", "dash", "zsh", "ksh", "fish", "ash"}) {
    if (name == sh) return true;
  }
  return false;
}

bool In(const std::string& w, std::initializer_list<std::string_view> list) {
  for (std::string_view item : list) {
    if (w == item) return true;
  }
  return false;
}

// Skips the options of a prefix command (`sudo -u root`, `exec -a name`, `command -p`); the
// options in `value_flags` take the next word as their value. Returns the command position.
size_t SkipOptions(const std::vector<std::string>& w, size_t j,
                   std::initializer_list<std::string_view> value_flags) {
  while (j < w.size()) {
    const std::string& a = w[j];
    if (a == "--") return j + 1;
    if (a.size() < 2 || a[0] != '-') break;
    j += In(a, value_flags) ? size_t{2} : size_t{1};
  }
  return j;
}

// `env [options] [NAME=value]... [command]`: returns the command position, or sets *hit when an
// `-S`/`--split-string` payload holds an /approve command.
size_t SkipEnv(const std::vector<std::string>& w, size_t j, int depth, bool* hit) {
  while (j < w.size()) {
    const std::string& a = w[j];
    std::optional<std::string> payload;
    if (a == "--") return j + 1;
    if (a == "-S" || a == "--split-string") {
      if (j + 1 < w.size()) payload = w[j + 1];
    } else if (a.rfind("--split-string=", 0) == 0) {
      payload = a.substr(15);
    } else if (a.rfind("-S", 0) == 0 && a.size() > 2) {
      payload = a.substr(2);
    }
    if (payload.has_value()) {
      *hit = ContainsImpl(*payload, depth + 1);
      return w.size();  // the payload is the command; the rest are its arguments
    }
    if (a.size() >= 2 && a[0] == '-') {
      j += In(a, {"-u", "-C", "--unset", "--chdir", "--argv0"}) ? size_t{2} : size_t{1};
    } else if (IsAssignment(a) || a == "-") {
      ++j;
    } else {
      break;
    }
  }
  return j;
}

// The inline script of `sh -c <payload>` (any option cluster containing c: -c, -lc, -ic, -xc,
// -euc, ...; fish's --command[=]); nullopt when the shell runs a script file or stdin.
std::optional<std::string> ShellPayload(const std::vector<std::string>& w, size_t j) {
  while (j < w.size()) {
    const std::string& a = w[j];
    if (a == "--" || a == "-") return std::nullopt;
    if (a.rfind("--", 0) == 0) {
      if (a == "--command" || a == "-command") {
        return j + 1 < w.size() ? std::optional<std::string>(w[j + 1]) : std::nullopt;
      }
      if (a.rfind("--command=", 0) == 0) return a.substr(10);
      j += In(a, {"--rcfile", "--init-file", "--init-command", "-C"}) ? size_t{2} : size_t{1};
      continue;
    }
    if (a.size() >= 2 && (a[0] == '-' || a[0] == '+')) {
      std::string cluster = a.substr(1);
      if (cluster.find('c') != std::string::npos) {
        return j + 1 < w.size() ? std::optional<std::string>(w[j + 1]) : std::nullopt;
      }
      const bool takes_value =
          cluster.find('o') != std::string::npos || cluster.find('O') != std::string::npos;
      j += takes_value ? size_t{2} : size_t{1};
      continue;
    }
    return std::nullopt;  // a script path: no inline payload
  }
  return std::nullopt;
}

std::string JoinFrom(const std::vector<std::string>& w, size_t i) {
  std::string out;
  for (size_t k = i; k < w.size(); ++k) {
    if (k > i) out += ' ';
    out += w[k];
  }
  return out;
}

bool CheckSimpleCommand(const std::vector<std::string>& w, int depth) {
  size_t i = 0;
  while (i < w.size()) {
    const std::string& word = w[i];
    if (IsAssignment(word) || IsReservedWord(word)) {
      ++i;
      continue;
    }
    if (MatchApproveAt(JoinFrom(w, i))) return true;
    const std::string name = Basename(word);
    if (name == "env") {
      bool hit = false;
      i = SkipEnv(w, i + 1, depth, &hit);
      if (hit) return true;
    } else if (name == "command") {
      i = SkipOptions(w, i + 1, {});
    } else if (name == "builtin") {
      ++i;
    } else if (name == "exec") {
      i = SkipOptions(w, i + 1, {"-a"});
    } else if (name == "sudo") {
      i = SkipOptions(w, i + 1, {"-u",          "-g",           "-C",
                                 "-D",          "-h",           "-p",
                                 "-R",          "-r",           "-t",
                                 "-T",          "-U",           "--user",
                                 "--group",     "--close-from", "--chdir",
                                 "--host",      "--prompt",     "--chroot",
                                 "--role",      "--type",       "--command-timeout",
                                 "--other-user"});
    } else if (IsShell(name)) {
      std::optional<std::string> payload = ShellPayload(w, i + 1);
      return payload.has_value() && ContainsImpl(*payload, depth + 1);
    } else {
      return false;
    }
  }
  return false;
}

bool ContainsImpl(std::string_view text, int depth) {
  if (depth > kMaxDepth) return RawScan(text);
  std::optional<std::vector<Token>> tokens = Tokenize(text);
  if (!tokens.has_value()) return RawScan(text);
  for (const std::vector<std::string>& cmd : SimpleCommands(*tokens)) {
    if (CheckSimpleCommand(cmd, depth)) return true;
  }
  return false;
}

}  // namespace

bool ContainsApproveCommand(std::string_view command) { return ContainsImpl(command, 0); }

std::optional<Error> CheckApproveCommand(std::string_view command) {
  if (!ContainsApproveCommand(command)) return std::nullopt;
  return Error::Refusal("approve-command", kApproveCommandMessage);
}

}  // namespace sandrun::policy

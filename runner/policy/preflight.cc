#include "runner/policy/preflight.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <vector>

#include "runner/policy/sandbox_spec.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::policy {
namespace {

enum class Interpreter { kNone, kPython, kNode };

constexpr int kMaxPayloadDepth = 4;

Error Refusal(std::string message) { return Error::Refusal("preflight", std::move(message)); }

const char* KindName(Interpreter k) { return k == Interpreter::kPython ? "python" : "node"; }

// OpenClaw's splitShellArgs: whitespace-separated words, '...' and "..." quoting, backslash
// escapes outside quotes. nullopt for an unterminated quote or a trailing backslash.
std::optional<std::vector<std::string>> SplitShellArgs(std::string_view raw) {
  std::vector<std::string> tokens;
  std::string buf;
  bool in_single = false;
  bool in_double = false;
  bool escaped = false;
  for (char ch : raw) {
    if (escaped) {
      buf += ch;
      escaped = false;
    } else if (in_single) {
      if (ch == '\'') {
        in_single = false;
      } else {
        buf += ch;
      }
    } else if (in_double) {
      if (ch == '"') {
        in_double = false;
      } else {
        buf += ch;
      }
    } else if (ch == '\\') {
      escaped = true;
    } else if (ch == '\'') {
      in_single = true;
    } else if (ch == '"') {
      in_double = true;
    } else if (std::isspace(static_cast<unsigned char>(ch)) != 0) {
      if (!buf.empty()) tokens.push_back(std::move(buf));
      buf.clear();
    } else {
      buf += ch;
    }
  }
  if (escaped || in_single || in_double) return std::nullopt;
  if (!buf.empty()) tokens.push_back(std::move(buf));
  return tokens;
}

struct Segment {
  std::optional<std::vector<std::string>> words;
  bool piped = false;  // its stdin is the previous segment's stdout
};

// The command cut at unquoted | || && ; & and newlines, and what makes it "complex".
struct Scan {
  std::vector<Segment> segments;
  bool complex = false;
  bool process_substitution = false;
};

void ScanInto(std::string_view cmd, Scan& scan) {
  std::string cur;
  bool next_piped = false;
  auto cut = [&](bool piped_next) {
    scan.segments.push_back({SplitShellArgs(cur), next_piped});
    cur.clear();
    next_piped = piped_next;
  };
  bool in_single = false;
  bool in_double = false;
  bool escaped = false;
  for (size_t i = 0; i < cmd.size(); ++i) {
    const char c = cmd[i];
    const char next = i + 1 < cmd.size() ? cmd[i + 1] : '\0';
    if (escaped) {
      escaped = false;
    } else if (in_single) {
      in_single = c != '\'';
    } else if (c == '\\') {
      escaped = true;
    } else if (in_double) {
      if (c == '"') in_double = false;
      if (c == '`' || (c == '$' && next == '(')) scan.complex = true;
    } else if (c == '\'') {
      in_single = true;
    } else if (c == '"') {
      in_double = true;
    } else if (c == '`' || (c == '$' && next == '(')) {
      scan.complex = true;
    } else if ((c == '<' || c == '>') && next == '(') {
      scan.complex = true;
      scan.process_substitution = true;
    } else if (c == '|') {
      scan.complex = true;
      if (next == '|') {
        ++i;
        cut(false);
      } else {
        if (next == '&') ++i;
        cut(true);
      }
      continue;
    } else if (c == '&' && next == '&') {
      scan.complex = true;
      ++i;
      cut(false);
      continue;
    } else if (c == '&' && next != '>' && (i == 0 || (cmd[i - 1] != '>' && cmd[i - 1] != '<'))) {
      cut(false);  // a background job: a new command, not "complex" by itself
      continue;
    } else if (c == ';' || c == '\n') {
      scan.complex = true;
      cut(false);
      continue;
    }
    cur += c;
  }
  cut(false);
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsAssignment(const std::string& w) {
  size_t eq = w.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  if (std::isdigit(static_cast<unsigned char>(w[0])) != 0) return false;
  return std::all_of(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(eq), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

// The index of the command word after VAR=x words and an `env` prefix; nullopt if none.
std::optional<size_t> CommandStart(const std::vector<std::string>& w) {
  size_t i = 0;
  while (i < w.size() && IsAssignment(w[i])) ++i;
  if (i < w.size() && Basename(w[i]) == "env") {
    ++i;
    static const std::vector<std::string> kWithValue = {"-C",
                                                        "-S",
                                                        "-u",
                                                        "--argv0",
                                                        "--block-signal",
                                                        "--chdir",
                                                        "--default-signal",
                                                        "--ignore-signal",
                                                        "--split-string",
                                                        "--unset"};
    while (i < w.size() && w[i].size() > 1 && w[i][0] == '-') {
      if (w[i] == "--") {
        ++i;
        break;
      }
      const bool takes_value =
          std::find(kWithValue.begin(), kWithValue.end(), w[i]) != kWithValue.end();
      i += takes_value ? 2 : 1;
    }
    while (i < w.size() && IsAssignment(w[i])) ++i;
  }
  if (i >= w.size()) return std::nullopt;
  return i;
}

Interpreter KindOf(const std::string& word) {
  const std::string name = Basename(word);
  if (name == "python" || name == "python3") return Interpreter::kPython;
  if (name.rfind("python3.", 0) == 0 && name.size() > 8 &&
      std::all_of(name.begin() + 8, name.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    return Interpreter::kPython;
  }
  if (name == "node" || name == "nodejs") return Interpreter::kNode;
  return Interpreter::kNone;
}

bool EndsWithNoCase(const std::string& s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) {
      return false;
    }
  }
  return true;
}

bool IsPyFile(const std::string& s) { return EndsWithNoCase(s, ".py"); }
bool IsJsFile(const std::string& s) {
  return EndsWithNoCase(s, ".js") || EndsWithNoCase(s, ".mjs") || EndsWithNoCase(s, ".cjs");
}

// A word that names a script, possibly glued to punctuation ("a.py)", "<x.js").
bool HasScriptHint(const std::string& word) {
  std::string w = word;
  while (!w.empty() && std::string_view(")]};'\"`|&>").find(w.back()) != std::string_view::npos) {
    w.pop_back();
  }
  return IsPyFile(w) || IsJsFile(w);
}

// The script files `w[start]` (an interpreter) would run.
std::vector<std::string> ScriptTargets(const std::vector<std::string>& w, size_t start,
                                       Interpreter kind) {
  std::vector<std::string> targets;
  size_t i = start + 1;
  if (kind == Interpreter::kPython) {
    for (; i < w.size(); ++i) {
      const std::string& a = w[i];
      if (a == "--") {
        ++i;
        break;
      }
      if (a == "--check-hash-based-pycs") {
        ++i;
        continue;
      }
      if (a.rfind("--", 0) == 0) continue;
      if (a.size() > 1 && a[0] == '-') {
        for (size_t j = 1; j < a.size(); ++j) {
          if (a[j] == 'c' || a[j] == 'm') return targets;  // a program or module, no file
          if (a[j] == 'W' || a[j] == 'X' || a[j] == 'Q') {
            if (j + 1 == a.size()) ++i;  // the value is the next word
            break;
          }
        }
        continue;
      }
      break;
    }
    if (i < w.size() && IsPyFile(w[i])) targets.push_back(w[i]);
    return targets;
  }
  bool entry = true;
  static const std::vector<std::string> kPreload = {"-r", "--require", "--import"};
  static const std::vector<std::string> kEval = {"-e", "-p", "--eval", "--print", "-pe"};
  static const std::vector<std::string> kWithValue = {
      "--loader",  "--experimental-loader", "-C", "--conditions", "--input-type", "--title",
      "--env-file"};
  auto in = [](const std::vector<std::string>& list, const std::string& a) {
    return std::find(list.begin(), list.end(), a) != list.end();
  };
  for (; i < w.size(); ++i) {
    const std::string& a = w[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (in(kPreload, a)) {
      if (i + 1 < w.size() && IsJsFile(w[i + 1])) targets.push_back(w[i + 1]);
      ++i;
      continue;
    }
    bool preload_eq = false;
    for (const char* p : {"--require=", "--import="}) {
      if (a.rfind(p, 0) == 0) {
        std::string v = a.substr(std::string_view(p).size());
        if (IsJsFile(v)) targets.push_back(v);
        preload_eq = true;
      }
    }
    if (preload_eq) continue;
    if (in(kEval, a)) {
      entry = false;
      ++i;
      continue;
    }
    if (a.rfind("--eval=", 0) == 0 || a.rfind("--print=", 0) == 0) {
      entry = false;
      continue;
    }
    if (in(kWithValue, a)) {
      ++i;
      continue;
    }
    if (a.size() > 1 && a[0] == '-') continue;
    break;
  }
  if (entry && i < w.size() && IsJsFile(w[i])) targets.push_back(w[i]);
  return targets;
}

// Whether an interpreter invocation counts for the complex-invocation rule: not info-only, not
// an inline program.
bool CountsAsInvocation(const std::vector<std::string>& w, size_t start, Interpreter kind) {
  for (size_t i = start + 1; i < w.size(); ++i) {
    const std::string& a = w[i];
    if (a == "--") break;
    if (a == "--version" || a == "--help" || a == "-h") return false;
    if (kind == Interpreter::kPython) {
      if (a == "-V" || a == "-VV") return false;
      if (a.size() > 1 && a[0] == '-' && a[1] != '-' && a.find('c') != std::string::npos) {
        return false;
      }
    } else {
      if (a == "-v" || a == "-c" || a == "--check") return false;
      if (a == "-e" || a == "-p" || a == "--eval" || a == "--print" || a == "-pe" ||
          a.rfind("--eval=", 0) == 0 || a.rfind("--print=", 0) == 0) {
        return false;
      }
    }
    if (a.empty() || a[0] != '-') break;  // the script and its own arguments
  }
  return true;
}

// sh/bash/... -c PAYLOAD: the payload, if this segment is one.
std::optional<std::string> ShellPayload(const std::vector<std::string>& w, size_t start) {
  static const std::vector<std::string> kShells = {"sh", "bash", "dash", "fish", "ksh", "zsh"};
  const std::string name = Basename(w[start]);
  if (std::find(kShells.begin(), kShells.end(), name) == kShells.end()) return std::nullopt;
  bool saw_c = false;
  for (size_t i = start + 1; i < w.size(); ++i) {
    const std::string& a = w[i];
    if (a.size() > 1 && a[0] == '-' && a[1] != '-') {
      saw_c = saw_c || a.find('c') != std::string::npos;
      continue;
    }
    if (a.rfind("--", 0) == 0) continue;
    if (saw_c) return a;
    return std::nullopt;
  }
  return std::nullopt;
}

// Scans `cmd` and, recursively, the -c payloads of shells in it.
void ScanDeep(std::string_view cmd, Scan& scan, int depth) {
  const size_t first = scan.segments.size();
  ScanInto(cmd, scan);
  if (depth >= kMaxPayloadDepth) return;
  const size_t end = scan.segments.size();
  for (size_t k = first; k < end; ++k) {
    if (!scan.segments[k].words.has_value()) continue;
    const std::vector<std::string> words = *scan.segments[k].words;
    std::optional<size_t> start = CommandStart(words);
    if (!start) continue;
    if (auto payload = ShellPayload(words, *start)) ScanDeep(*payload, scan, depth + 1);
  }
}

// `$[A-Z_][A-Z0-9_]+`: the first match, as (offset, token).
std::optional<std::pair<size_t, std::string>> FindShellVariable(std::string_view text) {
  auto head = [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; };
  auto tail = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; };
  for (size_t i = 0; i + 2 < text.size(); ++i) {
    if (text[i] != '$' || !head(text[i + 1]) || !tail(text[i + 2])) continue;
    size_t j = i + 2;
    while (j < text.size() && tail(text[j])) ++j;
    return std::make_pair(i, std::string(text.substr(i, j - i)));
  }
  return std::nullopt;
}

// Reads a script the way OpenClaw does: only inside the workdir, regular, small, non-blocking.
std::optional<std::string> ReadScript(const std::string& target, const std::string& workdir) {
  const std::string wd = NormalizePosixPath(workdir);
  const std::string path = NormalizePosixPath(target[0] == '/' ? target : wd + "/" + target);
  if (!PathIsWithin(path, wd)) return std::nullopt;
  char real[PATH_MAX];
  char real_wd[PATH_MAX];
  if (::realpath(path.c_str(), real) == nullptr) return std::nullopt;
  if (::realpath(wd.c_str(), real_wd) == nullptr) return std::nullopt;
  if (!PathIsWithin(real, real_wd)) return std::nullopt;
  UniqueFd fd(::open(real, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  if (static_cast<uint64_t>(st.st_size) > kPreflightMaxScriptBytes) return std::nullopt;
  std::string out(kPreflightMaxScriptBytes + 1, '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kPreflightMaxScriptBytes) return std::nullopt;
  out.resize(got);
  return out;
}

std::optional<Error> CheckScript(const std::string& target, Interpreter kind,
                                 const std::string& workdir) {
  std::optional<std::string> content = ReadScript(target, workdir);
  if (!content) return std::nullopt;
  if (auto hit = FindShellVariable(*content)) {
    const auto& [offset, token] = *hit;
    const size_t line =
        static_cast<size_t>(std::count(
            content->begin(), content->begin() + static_cast<std::ptrdiff_t>(offset), '\n')) +
        1;
    const std::string name = token.substr(1);
    return Refusal(
        "exec preflight: detected likely shell variable injection (" + token + ") in " +
        KindName(kind) + " script: " + Basename(target) + ":" + std::to_string(line) + ".\n" +
        (kind == Interpreter::kPython
             ? "In Python, use os.environ.get(\"" + name + "\") instead of raw " + token + "."
             : "In Node.js, use process.env[\"" + name + "\"] instead of raw " + token + ".") +
        "\n(If this is inside a string literal on purpose, escape it or restructure the code.)");
  }
  if (kind == Interpreter::kNode) {
    std::string_view rest = *content;
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())) != 0) {
        line.remove_prefix(1);
      }
      while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0) {
        line.remove_suffix(1);
      }
      if (line.empty()) continue;
      const bool word_end =
          line.size() == 4 ||
          !(std::isalnum(static_cast<unsigned char>(line[4])) != 0 || line[4] == '_');
      if (line.rfind("NODE", 0) == 0 && word_end) {
        return Refusal("exec preflight: JS file starts with shell syntax (" + std::string(line) +
                       "). This looks like a shell command, not JavaScript.");
      }
      break;
    }
  }
  return std::nullopt;
}

}  // namespace

bool PreflightApplies(const Decision& decision) {
  return decision.allowed() && decision.effective_host == Host::kGateway &&
         !(decision.effective.security == config::Security::kFull &&
           decision.effective.ask == config::Ask::kOff);
}

std::optional<Error> ScriptPreflight(std::string_view command, const std::string& workdir) {
  Scan scan;
  ScanDeep(command, scan, 0);

  // 1-2: the first command's script targets.
  bool has_target = false;
  if (!scan.segments.empty() && scan.segments[0].words.has_value()) {
    const std::vector<std::string>& words = *scan.segments[0].words;
    if (std::optional<size_t> start = CommandStart(words)) {
      const Interpreter kind = KindOf(words[*start]);
      if (kind != Interpreter::kNone) {
        for (const std::string& target : ScriptTargets(words, *start, kind)) {
          has_target = true;
          if (auto refused = CheckScript(target, kind, workdir)) return refused;
        }
      }
    }
  }
  if (has_target || !scan.complex) return std::nullopt;

  // 3: interpreter invocations that cannot be checked.
  bool hint_upstream = false;  // a script hint earlier in the current pipeline
  for (const Segment& segment : scan.segments) {
    if (!segment.piped) hint_upstream = false;
    if (!segment.words.has_value()) continue;
    const std::vector<std::string>& words = *segment.words;
    const bool hint = std::any_of(words.begin(), words.end(), HasScriptHint);
    std::optional<size_t> start = CommandStart(words);
    if (start) {
      const Interpreter kind = KindOf(words[*start]);
      if (kind != Interpreter::kNone && CountsAsInvocation(words, *start, kind) &&
          (hint || hint_upstream || scan.process_substitution)) {
        return Refusal(
            "exec preflight: complex interpreter invocation detected; refusing to run without "
            "script preflight validation. Use a direct `python <file>.py` or `node <file>.js` "
            "command.");
      }
    }
    hint_upstream = hint_upstream || hint;
  }
  return std::nullopt;
}

}  // namespace sandrun::policy

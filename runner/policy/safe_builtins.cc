#include "runner/policy/safe_builtins.h"

#include <algorithm>
#include <span>

namespace sandrun::policy {
namespace {

bool IsNameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

// [A-Za-z_][A-Za-z0-9_]*
bool IsPlainName(std::string_view s) {
  return !s.empty() && IsNameStart(s[0]) && std::all_of(s.begin(), s.end(), IsNameChar);
}

// NAME[ ... : what a shell takes for an array element (the closing bracket is not needed for
// the shell to try).
bool LooksLikeSubscript(std::string_view s) {
  size_t bracket = s.find('[');
  return bracket != std::string_view::npos && IsPlainName(s.substr(0, bracket));
}

// [+-]?[0-9]+
bool IsIntegerLiteral(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsIntegerComparison(std::string_view s) {
  return s == "-eq" || s == "-ne" || s == "-lt" || s == "-le" || s == "-gt" || s == "-ge";
}

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

BuiltinEvaluation Evaluates(std::string_view name, std::string_view what, std::string_view arg,
                            std::string_view shell_does) {
  BuiltinEvaluation e;
  e.what = std::string(name) + " " + std::string(what);
  e.why = std::string(name) + ": " + Quoted(arg) + " " + std::string(shell_does) +
          ", which can run commands; needs approval";
  return e;
}

std::optional<BuiltinEvaluation> TestEvaluation(std::string_view name,
                                                std::span<const std::string> args) {
  if (name == "[" && !args.empty() && args.back() == "]") args = args.first(args.size() - 1);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (LooksLikeSubscript(a)) {
      return Evaluates(name, "array subscript", a,
                       "names an array element: the shell evaluates its subscript as arithmetic");
    }
    const bool has_next = i + 1 < args.size();
    if (a == "-v" && has_next && !IsPlainName(args[i + 1])) {
      return Evaluates(name, "-v operand", args[i + 1],
                       "is not a plain variable name: bash evaluates what -v is given");
    }
    if (a == "-t" && has_next && !IsIntegerLiteral(args[i + 1])) {
      return Evaluates(name, "-t operand", args[i + 1],
                       "is not an integer: zsh and ksh evaluate the -t operand as arithmetic");
    }
    if (IsIntegerComparison(a)) {
      // i - 1 wraps around for i == 0 and is then out of range like i + 1 at the end.
      for (size_t j : {i - 1, i + 1}) {
        if (j >= args.size() || IsIntegerLiteral(args[j])) continue;
        return Evaluates(
            name, a + " operand", args[j],
            "is not an integer: zsh and ksh evaluate " + a + " operands as arithmetic");
      }
    }
  }
  return std::nullopt;
}

}  // namespace

bool IsSafeBuiltin(std::string_view word) {
  return word == "cd" || word == "true" || word == "pwd" || word == ":" || word == "[" ||
         word == "test";
}

std::optional<BuiltinEvaluation> SafeBuiltinEvaluation(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  const std::string_view name = argv[0];
  if (name != "test" && name != "[") return std::nullopt;
  return TestEvaluation(name, std::span<const std::string>(argv).subspan(1));
}

namespace {

// bash 5.2 (`enable -a`), dash 0.5.12, zsh 5.9 and ksh93 builtins besides the safe ones.
constexpr std::string_view kShellBuiltins[] = {
    ".",        "alias",      "autoload",  "bg",      "bind",      "bindkey",  "break",
    "builtin",  "caller",     "chdir",     "command", "compgen",   "complete", "compopt",
    "continue", "declare",    "dirs",      "disable", "disown",    "echo",     "emulate",
    "enable",   "eval",       "exec",      "exit",    "export",    "false",    "fc",
    "fg",       "float",      "functions", "getln",   "getopts",   "hash",     "help",
    "history",  "integer",    "jobs",      "kill",    "let",       "limit",    "local",
    "logout",   "mapfile",    "nameref",   "noglob",  "popd",      "print",    "printf",
    "pushd",    "pushln",     "r",         "read",    "readarray", "readonly", "rehash",
    "return",   "sched",      "set",       "setopt",  "shift",     "shopt",    "source",
    "suspend",  "times",      "trap",      "type",    "typeset",   "ulimit",   "umask",
    "unalias",  "unfunction", "unhash",    "unlimit", "unset",     "unsetopt", "vared",
    "wait",     "whence",     "where",     "which",   "zcompile",  "zformat",  "zle",
    "zmodload", "zparseopts", "zstyle"};

// Builtins that run a string they are given as shell code.
constexpr std::string_view kEvaluatingBuiltins[] = {
    "trap",   "eval", "fc",    "bind",   "complete", "compgen",  "mapfile",  "readarray", "let",
    "source", ".",    "alias", "enable", "sched",    "autoload", "zmodload", "emulate",   "r"};

template <size_t N>
bool Listed(const std::string_view (&list)[N], std::string_view word) {
  return std::find(std::begin(list), std::end(list), word) != std::end(list);
}

}  // namespace

bool IsShellBuiltin(std::string_view word) { return Listed(kShellBuiltins, word); }

std::optional<std::string> ShellBuiltinInlineEval(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  if (Listed(kEvaluatingBuiltins, argv[0])) return argv[0] + " inline command";
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i].find('[') != std::string::npos) return argv[0] + " subscript";
  }
  return std::nullopt;
}

}  // namespace sandrun::policy

#include "runner/policy/inline_eval.h"

#include <algorithm>
#include <cctype>
#include <span>

#include "sandbox/base/strings.h"

namespace sandrun::policy {
namespace {

using Names = std::span<const std::string_view>;

enum class Family {
  kNone,
  kPython,
  kNode,
  kAwk,
  kRuby,
  kLua,
  kOsascript,
  kPerl,
  kPhp,
  kFind,
  kMake,
  kSed,
  kXargs,
};

struct NamedFamily {
  std::string_view name;
  Family family;
};

// Reference §5.7: the interpreter-like names, which are also the rows of §5.8.
constexpr NamedFamily kFamilies[] = {
    {"python", Family::kPython}, {"python2", Family::kPython}, {"python3", Family::kPython},
    {"pypy", Family::kPython},   {"pypy3", Family::kPython},   {"node", Family::kNode},
    {"nodejs", Family::kNode},   {"bun", Family::kNode},       {"deno", Family::kNode},
    {"awk", Family::kAwk},       {"gawk", Family::kAwk},       {"mawk", Family::kAwk},
    {"nawk", Family::kAwk},      {"ruby", Family::kRuby},      {"perl", Family::kPerl},
    {"php", Family::kPhp},       {"lua", Family::kLua},        {"osascript", Family::kOsascript},
    {"find", Family::kFind},     {"make", Family::kMake},      {"gmake", Family::kMake},
    {"sed", Family::kSed},       {"gsed", Family::kSed},       {"xargs", Family::kXargs},
};

// Shells by their base name (ShellBase strips version and build suffixes: ksh93, zsh5,
// bash-static, mksh-static). The first group reads -c payloads as POSIX sh; the second are
// shells of other languages (never POSIX: a payload is not analysable for them).
constexpr std::string_view kPosixShells[] = {"sh",    "bash",  "zsh",  "dash", "ksh",  "mksh",
                                             "ash",   "rbash", "yash", "posh", "lksh", "oksh",
                                             "loksh", "pdksh", "hush", "sash", "rksh", "bosh"};
constexpr std::string_view kOtherShells[] = {"fish", "csh",   "tcsh", "rc",   "es",    "elvish",
                                             "nu",   "xonsh", "pwsh", "ion",  "murex", "oil",
                                             "osh",  "ysh",   "scsh", "closh"};

char LowerChar(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsLowered(std::string_view token, std::string_view lower) {
  if (token.size() != lower.size()) return false;
  for (size_t i = 0; i < token.size(); ++i) {
    if (LowerChar(token[i]) != lower[i]) return false;
  }
  return true;
}

bool StartsLowered(std::string_view token, std::string_view lower) {
  return token.size() >= lower.size() && EqualsLowered(token.substr(0, lower.size()), lower);
}

std::string_view TrimView(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\v\f";
  size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

std::string_view Basename(std::string_view path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

Family LookupFamily(std::string_view lower) {
  for (const NamedFamily& f : kFamilies) {
    if (f.name == lower) return f.family;
  }
  return Family::kNone;
}

// `lower` is a lowercased basename; "python3.11" and "perl5.36.0" count as their family.
Family FamilyOf(std::string_view lower) {
  Family f = LookupFamily(lower);
  if (f != Family::kNone) return f;
  size_t end = lower.find_last_not_of("0123456789.");
  if (end == std::string_view::npos || end + 1 == lower.size()) return Family::kNone;
  return LookupFamily(lower.substr(0, end + 1));
}

// ---- 1. OpenClaw's flag table ---------------------------------------------------------------

struct FlagSpec {
  Family family;
  Names exact;         // compared with the lowercased token
  Names prefixes;      // lowercased token starts with
  Names raw_exact;     // case-sensitive
  Names raw_prefixes;  // case-sensitive
  bool scan_past_double_dash = false;
};

constexpr std::string_view kPythonExact[] = {"-c"};
constexpr std::string_view kNodeExact[] = {"-e", "--eval", "-p", "--print"};
constexpr std::string_view kAwkExact[] = {"-e", "--source"};
constexpr std::string_view kAwkPrefixes[] = {"--source="};
constexpr std::string_view kDashE[] = {"-e"};
constexpr std::string_view kPhpExact[] = {"-r"};
constexpr std::string_view kFindExact[] = {"-exec", "-execdir", "-ok", "-okdir"};
constexpr std::string_view kMakeExact[] = {"-f", "--file", "--makefile", "--eval"};
constexpr std::string_view kMakePrefixes[] = {"-f", "--file=", "--makefile=", "--eval="};
constexpr std::string_view kMakeRaw[] = {"-E"};

constexpr FlagSpec kFlagSpecs[] = {
    {Family::kPython, kPythonExact, {}, {}, {}},
    {Family::kNode, kNodeExact, {}, {}, {}},
    {Family::kAwk, kAwkExact, kAwkPrefixes, {}, {}},
    {Family::kRuby, kDashE, {}, {}, {}},
    {Family::kLua, kDashE, {}, {}, {}},
    {Family::kOsascript, kDashE, {}, {}, {}},
    {Family::kPerl, kDashE, {}, {}, {}},  // "-E" lowercases to "-e": reported "perl -e"
    {Family::kPhp, kPhpExact, {}, {}, {}},
    {Family::kFind, kFindExact, {}, {}, {}, true},
    {Family::kMake, kMakeExact, kMakePrefixes, kMakeRaw, kMakeRaw},
    {Family::kSed, {}, {}, kDashE, kDashE},
};

// "--source=" is reported as "--source".
std::string_view FlagName(std::string_view prefix) {
  return prefix.ends_with('=') ? prefix.substr(0, prefix.size() - 1) : prefix;
}

std::string Describe(std::string_view exe, std::string_view what) {
  std::string out(exe);
  out += ' ';
  out += what;
  return out;
}

std::optional<std::string> ScanFlagTable(const FlagSpec& spec, std::string_view exe,
                                         const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string_view tok = TrimView(argv[i]);
    if (tok.empty()) continue;
    if (tok == "--") {
      if (spec.scan_past_double_dash) continue;
      break;
    }
    for (std::string_view f : spec.exact) {
      if (EqualsLowered(tok, f)) return Describe(exe, f);
    }
    for (std::string_view f : spec.raw_exact) {
      if (tok == f) return Describe(exe, f);
    }
    for (std::string_view f : spec.prefixes) {
      if (StartsLowered(tok, f)) return Describe(exe, FlagName(f));
    }
    for (std::string_view f : spec.raw_prefixes) {
      if (tok.starts_with(f)) return Describe(exe, FlagName(f));
    }
  }
  return std::nullopt;
}

// ---- 2. OpenClaw's positional carriers -------------------------------------------------------

struct CarrierSpec {
  Family family;
  Names file_flags;   // the program comes from a file: not inline
  Names value_flags;  // consume the next token
  std::string_view what;
};

constexpr std::string_view kAwkFileFlags[] = {"-f", "--file"};
constexpr std::string_view kAwkValueFlags[] = {"-f", "--file",   "-F", "--field-separator",
                                               "-v", "--assign", "-i", "--include",
                                               "-l", "--load",   "-W"};
constexpr std::string_view kXargsValueFlags[] = {
    "-a",          "--arg-file", "-d",         "--delimiter", "-E",          "-I", "-L",
    "--max-lines", "-n",         "--max-args", "-P",          "--max-procs", "-s", "--max-chars"};
constexpr std::string_view kSedFileFlags[] = {"-f", "--file"};
constexpr std::string_view kSedValueFlags[] = {"-f", "--file", "-l", "--line-length"};

constexpr CarrierSpec kCarriers[] = {
    {Family::kAwk, kAwkFileFlags, kAwkValueFlags, "inline program"},
    {Family::kXargs, {}, kXargsValueFlags, "inline command"},
    {Family::kSed, kSedFileFlags, kSedValueFlags, "inline program"},
};

bool In(Names names, std::string_view s) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

// Tokens stay untrimmed here: " -F" is awk's program, not an option.
std::optional<std::string> ScanCarrier(const CarrierSpec& spec, std::string_view exe,
                                       const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string_view tok = argv[i];
    if (tok.empty()) continue;
    if (tok == "--") {
      if (i + 1 < argv.size()) return Describe(exe, spec.what);
      return std::nullopt;
    }
    if (In(spec.file_flags, tok)) return std::nullopt;
    if (In(spec.value_flags, tok)) {
      ++i;
      continue;
    }
    if (tok[0] == '-') continue;
    return Describe(exe, spec.what);
  }
  return std::nullopt;
}

// ---- 3. forms OpenClaw misses ----------------------------------------------------------------

// The first of `hits` in the short cluster `tok` ("-Ic"), unless a flag of `stops` (one that
// takes the rest of the cluster as its value) comes first. '\0' when none.
char ClusterHit(std::string_view tok, std::string_view hits, std::string_view stops) {
  if (tok.size() < 2 || tok[0] != '-' || tok[1] == '-') return '\0';
  for (size_t j = 1; j < tok.size(); ++j) {
    if (hits.find(tok[j]) != std::string_view::npos) return tok[j];
    if (stops.find(tok[j]) != std::string_view::npos) return '\0';
  }
  return '\0';
}

// "--<abbrev>[=...]" where abbrev is a prefix of `full` of at least `min` characters (GNU
// getopt_long accepts unambiguous abbreviations).
bool LongAbbrev(std::string_view tok, std::string_view full, size_t min) {
  if (!tok.starts_with("--")) return false;
  std::string_view name = tok.substr(2);
  name = name.substr(0, name.find('='));
  return name.size() >= min && full.starts_with(name);
}

// awk -W source=...: `value` is what -W was given.
bool IsAwkSourceOption(std::string_view value) {
  std::string_view name = value.substr(0, value.find('='));
  return name.size() >= 2 && std::string_view("source").starts_with(name);
}

std::optional<std::string> ScanExtensions(Family family, std::string_view exe,
                                          const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string_view tok = TrimView(argv[i]);
    if (tok.empty()) continue;
    if (tok == "--") break;
    switch (family) {
      case Family::kPython:
        if (ClusterHit(tok, "c", "mWX") != '\0') return Describe(exe, "-c");
        break;
      case Family::kNode:
        if (StartsLowered(tok, "--eval=")) return Describe(exe, "--eval");
        if (StartsLowered(tok, "--print=")) return Describe(exe, "--print");
        if (char c = ClusterHit(tok, "ep", ""); c != '\0') {
          return Describe(exe, c == 'e' ? "-e" : "-p");
        }
        break;
      case Family::kAwk:
        if (tok.size() > 2 && tok.starts_with("-e")) return Describe(exe, "-e");
        if (LongAbbrev(tok, "source", 2)) return Describe(exe, "--source");
        if (tok.starts_with("-W")) {
          std::string_view value = tok.substr(2);
          if (value.empty() && i + 1 < argv.size()) value = TrimView(argv[i + 1]);
          if (IsAwkSourceOption(value)) return Describe(exe, "--source");
        }
        break;
      case Family::kRuby:
        if (ClusterHit(tok, "e", "CIrFixEKW") != '\0') return Describe(exe, "-e");
        break;
      case Family::kLua:
      case Family::kOsascript:
        if (tok.size() > 2 && tok.starts_with("-e")) return Describe(exe, "-e");
        break;
      case Family::kPerl:
        if (ClusterHit(tok, "eE", "IMmxidDCV") != '\0') return Describe(exe, "-e");
        break;
      case Family::kPhp:
        if (tok.size() > 2 && StartsLowered(tok, "-r")) return Describe(exe, "-r");
        break;
      case Family::kMake:
        if (char c = ClusterHit(tok, "fE", "CIoWOjl"); c != '\0') {
          return Describe(exe, c == 'f' ? "-f" : "-E");
        }
        if (LongAbbrev(tok, "file", 1)) return Describe(exe, "--file");
        if (LongAbbrev(tok, "makefile", 1)) return Describe(exe, "--makefile");
        if (LongAbbrev(tok, "eval", 1)) return Describe(exe, "--eval");
        break;
      case Family::kSed:
        if (ClusterHit(tok, "e", "fli") != '\0') return Describe(exe, "-e");
        if (LongAbbrev(tok, "expression", 1)) return Describe(exe, "--expression");
        break;
      case Family::kFind:
      case Family::kXargs:
      case Family::kNone:
        return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> DetectInlineEval(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  const std::string exe = Lower(Basename(TrimView(argv[0])));
  const Family family = FamilyOf(exe);
  if (family == Family::kNone) return std::nullopt;
  for (const FlagSpec& spec : kFlagSpecs) {
    if (spec.family != family) continue;
    if (auto hit = ScanFlagTable(spec, exe, argv)) return hit;
  }
  for (const CarrierSpec& spec : kCarriers) {
    if (spec.family != family) continue;
    if (auto hit = ScanCarrier(spec, exe, argv)) return hit;
  }
  return ScanExtensions(family, exe, argv);
}

bool IsInterpreterLike(std::string_view name) {
  std::string base;
  for (char c : Basename(name)) {
    if (c != '*' && c != '?' && c != '[' && c != ']') base += LowerChar(c);
  }
  return FamilyOf(base) != Family::kNone;
}

namespace {

// "ksh93" -> "ksh", "bash-static" -> "bash", "zsh-5.9" -> "zsh": the lowercased basename without
// a trailing -static/.static and without trailing version digits and dots.
std::string ShellBase(std::string_view name) {
  std::string base = Lower(Basename(name));
  for (std::string_view suffix : {"-static", ".static"}) {
    if (base.size() > suffix.size() && base.ends_with(suffix)) {
      base.resize(base.size() - suffix.size());
    }
  }
  while (base.size() > 1 && (std::isdigit(static_cast<unsigned char>(base.back())) ||
                             base.back() == '.' || base.back() == '-')) {
    base.pop_back();
  }
  return base;
}

}  // namespace

bool IsPosixShellName(std::string_view name) {
  const std::string base = ShellBase(name);
  return std::find(std::begin(kPosixShells), std::end(kPosixShells), base) !=
         std::end(kPosixShells);
}

bool IsShellName(std::string_view name) {
  const std::string base = ShellBase(name);
  return IsPosixShellName(base) || std::find(std::begin(kOtherShells), std::end(kOtherShells),
                                             base) != std::end(kOtherShells);
}

}  // namespace sandrun::policy

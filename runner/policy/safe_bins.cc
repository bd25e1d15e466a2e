#include "runner/policy/safe_bins.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "runner/policy/inline_eval.h"
#include "sandbox/base/strings.h"
#include "sandbox/harden/profile_file.h"

namespace sandrun::policy {
namespace {

using harden::ProfileFile;
using harden::SchemaChecker;

constexpr std::string_view kKind = "safe-bins";
constexpr int64_t kMaxLimit = 1000000;

// ---- argument checks --------------------------------------------------------------------------

bool HasGlob(std::string_view s) { return s.find_first_of("*?[]") != std::string_view::npos; }

bool IsPathLike(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\n\r\v\f");
  if (b == std::string_view::npos) return false;
  s.remove_prefix(b);
  if (s.starts_with("./") || s.starts_with("../") || s.starts_with("~") || s.starts_with("/")) {
    return true;
  }
  // A Windows drive path: "C:\x" or "C:/x".
  bool letter = s.size() >= 3 && ((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z'));
  return letter && s[1] == ':' && (s[2] == '\\' || s[2] == '/');
}

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// "" when `value` is a safe literal, else why not: "<what><flag> "<value>" has ...". Builds a
// string only on refusal (the accepted path allocates nothing).
std::string LiteralProblem(std::string_view value, std::string_view what,
                           std::string_view flag = {}) {
  const char* problem = HasGlob(value)      ? " has a glob character"
                        : IsPathLike(value) ? " looks like a path"
                                            : nullptr;
  if (problem == nullptr) return "";
  return std::string(what) + std::string(flag) + " " + Quoted(value) + problem;
}

bool IsLong(std::string_view flag) { return flag.size() > 2 && flag.starts_with("--"); }

bool HasShort(const std::vector<std::string>& flags, char c) {
  return std::any_of(flags.begin(), flags.end(), [c](const std::string& f) {
    return f.size() == 2 && f[0] == '-' && f[1] == c;
  });
}

bool HasExact(const std::vector<std::string>& flags, std::string_view name) {
  return std::find(flags.begin(), flags.end(), name) != flags.end();
}

enum class FlagKind { kUnknown, kAmbiguous, kDenied, kValue, kBoolean };

struct LongFlag {
  FlagKind kind = FlagKind::kUnknown;
  std::string_view canonical;
};

// `name` is "--xyz" without any "=value". Exact first, then a GNU-style prefix (at least three
// characters, "--" included) that names exactly one known flag. A flag listed twice (custom
// profiles are not checked for that) takes the strictest reading: denied, then boolean (its next
// token is then checked and counted as an argument), then value.
LongFlag ResolveLong(std::string_view name, const SafeBinProfile& p) {
  const std::pair<const std::vector<std::string>*, FlagKind> lists[] = {
      {&p.denied_flags, FlagKind::kDenied},
      {&p.allowed_flags, FlagKind::kBoolean},
      {&p.allowed_value_flags, FlagKind::kValue},
  };
  for (const auto& [list, kind] : lists) {
    if (HasExact(*list, name)) return {kind, name};
  }
  LongFlag found;
  if (name.size() < 3) return found;
  for (const auto& [list, kind] : lists) {
    for (const std::string& f : *list) {
      if (!IsLong(f) || f.size() <= name.size() || !std::string_view(f).starts_with(name)) continue;
      if (found.kind == FlagKind::kUnknown) {
        found = {kind, f};
      } else if (found.canonical != f) {
        return {FlagKind::kAmbiguous, {}};
      }
    }
  }
  return found;
}

bool IsNeverSafeBin(std::string_view name) {
  return name == "jq" || IsInterpreterLike(name) || IsShellName(name);
}

// ---- the loader -------------------------------------------------------------------------------

bool IsBinName(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '+' ||
           c == '-';
  });
}

// "-x" (one character, not '-') or "--name" (no '=', no whitespace, no control characters).
bool IsFlagShape(std::string_view f) {
  auto plain = [](char c) { return c > ' ' && c != '=' && c != 0x7f; };
  if (f.size() == 2) return f[0] == '-' && f[1] != '-' && plain(f[1]);
  return IsLong(f) && std::all_of(f.begin() + 2, f.end(), plain);
}

Result<SafeBinProfile> ParseOneProfile(const SchemaChecker& check, const rapidjson::Value& v,
                                       const std::string& at) {
  SANDRUN_RETURN_IF_ERROR(check.Keys(
      v, at,
      {"minPositional", "maxPositional", "allowedValueFlags", "allowedFlags", "deniedFlags"}));
  SafeBinProfile p;
  if (check.Optional(v, "minPositional") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(p.min_positional, check.Int(v, at, "minPositional", 0, kMaxLimit));
  }
  if (check.Optional(v, "maxPositional") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(int64_t max, check.Int(v, at, "maxPositional", 0, kMaxLimit));
    if (max < p.min_positional) {
      return check.Fail(SchemaChecker::Join(at, "maxPositional"),
                        "must not be below minPositional");
    }
    p.max_positional = max;
  }
  const std::pair<const char*, std::vector<std::string>*> lists[] = {
      {"allowedValueFlags", &p.allowed_value_flags},
      {"allowedFlags", &p.allowed_flags},
      {"deniedFlags", &p.denied_flags},
  };
  for (const auto& [key, out] : lists) {
    if (check.Optional(v, key) == nullptr) continue;
    SANDRUN_ASSIGN_OR_RETURN(*out, check.StringArray(v, at, key));
    const std::string where = SchemaChecker::Join(at, key);
    for (size_t i = 0; i < out->size(); ++i) {
      const std::string& f = (*out)[i];
      if (!IsFlagShape(f)) {
        return check.Fail(SchemaChecker::Index(where, i),
                          Quoted(f) + " is not a flag (expected \"-x\" or \"--name\")");
      }
      for (const auto& [other_key, other] : lists) {
        if (other == out || !HasExact(*other, f)) continue;
        return check.Fail(SchemaChecker::Index(where, i),
                          Quoted(f) + " is also listed in " + other_key);
      }
    }
  }
  return p;
}

Result<std::map<std::string, SafeBinProfile>> FromFile(const ProfileFile& file) {
  SchemaChecker check(file.path);
  SANDRUN_RETURN_IF_ERROR(check.Keys(file.doc, "", {"name", "description", "profiles"}));
  SANDRUN_ASSIGN_OR_RETURN(const rapidjson::Value* profiles,
                           check.Required(file.doc, "", "profiles"));
  SANDRUN_RETURN_IF_ERROR(check.IsObject(*profiles, "profiles"));
  std::map<std::string, SafeBinProfile> out;
  for (const auto& m : profiles->GetObject()) {
    std::string bin(m.name.GetString(), m.name.GetStringLength());
    const std::string at = SchemaChecker::Join("profiles", bin);
    if (!IsBinName(bin)) {
      return check.Fail(at, "not a bin name (lowercase letters, digits and . _ + -)");
    }
    if (IsNeverSafeBin(bin)) {
      return check.Fail(at, bin == "jq" ? "jq is never a safe bin (it reads the environment and "
                                          "loads code from files)"
                                        : "interpreters and shells are never safe bins");
    }
    SANDRUN_ASSIGN_OR_RETURN(out[bin], ParseOneProfile(check, m.value, at));
  }
  return out;
}

// ---- settings ---------------------------------------------------------------------------------

std::vector<std::string> NormalizeFlags(const std::vector<std::string>& flags) {
  std::vector<std::string> out;
  for (const std::string& f : flags) {
    std::string t = Trim(f);
    if (!t.empty()) out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Truncated toward zero; nullopt when absent, not finite or negative.
std::optional<int64_t> NormalizeLimit(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return std::nullopt;
  double t = std::trunc(*v);
  if (t < 0) return std::nullopt;
  if (t >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(t);
}

// Lexical normalisation of an absolute directory; nullopt for a relative or empty one.
std::optional<std::string> NormalizeAbsoluteDir(std::string_view raw) {
  std::string dir = Trim(raw);
  if (dir.empty() || dir[0] != '/') return std::nullopt;
  std::vector<std::string_view> parts;
  std::string_view rest = dir;
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  if (parts.empty()) return std::string("/");
  std::string out;
  for (std::string_view part : parts) {
    out += '/';
    out += part;
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

}  // namespace

Result<std::map<std::string, SafeBinProfile>> LoadSafeBinProfiles(const std::string& profiles_dir,
                                                                  const std::string& name) {
  SANDRUN_ASSIGN_OR_RETURN(ProfileFile file, harden::ReadProfileFile(profiles_dir, kKind, name));
  return FromFile(file);
}

Result<std::map<std::string, SafeBinProfile>> ParseSafeBinProfiles(
    std::string_view text, const std::string& path, const std::string& expected_name) {
  SANDRUN_ASSIGN_OR_RETURN(ProfileFile file, harden::ParseProfileText(text, path, expected_name));
  return FromFile(file);
}

SafeBinProfile NormalizeCustomProfile(const CustomSafeBinProfile& raw) {
  SafeBinProfile p;
  p.min_positional = NormalizeLimit(raw.min_positional).value_or(0);
  p.max_positional = NormalizeLimit(raw.max_positional);
  if (p.max_positional && *p.max_positional < p.min_positional) {
    p.max_positional = p.min_positional;
  }
  p.allowed_value_flags = NormalizeFlags(raw.allowed_value_flags);
  p.allowed_flags = NormalizeFlags(raw.allowed_flags);
  p.denied_flags = NormalizeFlags(raw.denied_flags);
  return p;
}

std::map<std::string, SafeBinProfile> MergeSafeBinProfiles(
    std::map<std::string, SafeBinProfile> builtin,
    const std::map<std::string, CustomSafeBinProfile>& custom) {
  for (const auto& [name, raw] : custom) {
    std::string key = Lower(Trim(name));
    if (!key.empty()) builtin[key] = NormalizeCustomProfile(raw);
  }
  return builtin;
}

std::vector<std::string> DefaultSafeBins() { return {"cut", "uniq", "head", "tail", "tr", "wc"}; }

std::vector<std::string> DefaultSafeBinTrustedDirs() { return {"/bin", "/usr/bin"}; }

std::vector<std::string> NormalizeSafeBinNames(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names) {
    std::string key = Lower(Trim(n));
    if (!key.empty() && std::find(out.begin(), out.end(), key) == out.end()) {
      out.push_back(std::move(key));
    }
  }
  return out;
}

std::vector<std::string> ResolveSafeBinTrustedDirs(const std::vector<std::string>& extra) {
  std::vector<std::string> out = DefaultSafeBinTrustedDirs();
  for (const std::string& d : extra) {
    std::optional<std::string> dir = NormalizeAbsoluteDir(d);
    if (dir && std::find(out.begin(), out.end(), *dir) == out.end()) out.push_back(*dir);
  }
  return out;
}

SafeBinSettings MakeSafeBinSettings(const std::optional<std::vector<std::string>>& bins,
                                    const std::vector<std::string>& extra_trusted_dirs,
                                    std::map<std::string, SafeBinProfile> builtin,
                                    const std::map<std::string, CustomSafeBinProfile>& custom) {
  SafeBinSettings s;
  s.bins = NormalizeSafeBinNames(bins.value_or(DefaultSafeBins()));
  s.trusted_dirs = ResolveSafeBinTrustedDirs(extra_trusted_dirs);
  s.profiles = MergeSafeBinProfiles(std::move(builtin), custom);
  return s;
}

std::string ValidateSafeBinArgv(const std::vector<std::string>& args, const SafeBinProfile& p,
                                std::string_view bin) {
  return ValidateSafeBinArgv(std::span<const std::string>(args), p, bin);
}

std::string ValidateSafeBinArgv(std::span<const std::string> args, const SafeBinProfile& p,
                                std::string_view bin) {
  int64_t positional = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view tok = args[i];
    if (tok.empty() || tok == "-") continue;
    if (tok == "--") {
      for (size_t j = i + 1; j < args.size(); ++j) {
        std::string_view rest = args[j];
        if (rest.empty() || rest == "-") continue;
        if (std::string problem = LiteralProblem(rest, "argument"); !problem.empty()) {
          return problem;
        }
        ++positional;
      }
      break;
    }
    if (tok[0] != '-') {
      if (std::string problem = LiteralProblem(tok, "argument"); !problem.empty()) return problem;
      ++positional;
      continue;
    }
    if (tok.starts_with("--")) {
      size_t eq = tok.find('=');
      std::string_view name = tok.substr(0, eq);
      LongFlag flag = ResolveLong(name, p);
      switch (flag.kind) {
        case FlagKind::kUnknown:
          return "unknown flag " + Quoted(name);
        case FlagKind::kAmbiguous:
          return "ambiguous flag " + Quoted(name);
        case FlagKind::kDenied:
          return "flag " + Quoted(flag.canonical) + " is denied";
        case FlagKind::kBoolean:
          if (eq != std::string_view::npos) {
            return "flag " + Quoted(flag.canonical) + " takes no value";
          }
          continue;
        case FlagKind::kValue:
          break;
      }
      std::string_view value;
      if (eq != std::string_view::npos) {
        value = tok.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      }
      if (value.empty()) return "flag " + Quoted(flag.canonical) + " needs a value";
      std::string problem = LiteralProblem(value, "value of ", flag.canonical);
      if (!problem.empty()) return problem;
      continue;
    }
    // A short cluster "-abc".
    for (size_t j = 1; j < tok.size(); ++j) {
      const char c = tok[j];
      const std::string flag{'-', c};
      if (HasShort(p.denied_flags, c)) return "flag " + Quoted(flag) + " is denied";
      if (HasShort(p.allowed_flags, c)) continue;
      if (!HasShort(p.allowed_value_flags, c)) {
        return "unknown flag " + Quoted(flag) + (tok.size() > 2 ? " in " + Quoted(tok) : "");
      }
      std::string_view value = tok.substr(j + 1);
      if (value.empty() && i + 1 < args.size()) value = args[++i];
      if (value.empty()) return "flag " + Quoted(flag) + " needs a value";
      std::string problem = LiteralProblem(value, "value of ", flag);
      if (!problem.empty()) return problem;
      break;
    }
  }
  if (positional < p.min_positional) {
    return "too few positional arguments (" + std::to_string(positional) + ", at least " +
           std::to_string(p.min_positional) + ")";
  }
  if (p.max_positional && positional > *p.max_positional) {
    return "too many positional arguments (" + std::to_string(positional) + ", at most " +
           std::to_string(*p.max_positional) + ")";
  }
  // Semantic rules: these read programs (or the environment) from their arguments.
  const std::string_view base = bin.substr(bin.find_last_of('/') + 1);
  for (std::string_view never : {"jq", "awk", "gawk", "mawk", "nawk", "sed", "gsed"}) {
    if (EqualsIgnoreCase(base, never)) return std::string(never) + " is never a safe bin";
  }
  return "";
}

SafeBinVerdict CheckSafeBinUsage(const SafeBinSettings& s, const std::string& resolved_path,
                                 const std::vector<std::string>& argv) {
  if (resolved_path.empty() || resolved_path[0] != '/') {
    return {false, "no resolved absolute path"};
  }
  const size_t slash = resolved_path.find_last_of('/');
  std::string name = Lower(std::string_view(resolved_path).substr(slash + 1));
  if (name.empty()) return {false, "no executable name in " + Quoted(resolved_path)};
  if (std::none_of(s.bins.begin(), s.bins.end(),
                   [&](const std::string& b) { return EqualsIgnoreCase(b, name); })) {
    return {false, name + " is not in safeBins"};
  }
  std::string_view dir = std::string_view(resolved_path).substr(0, slash == 0 ? 1 : slash);
  bool trusted = std::any_of(s.trusted_dirs.begin(), s.trusted_dirs.end(), [&](const auto& d) {
    std::string_view t = d;
    while (t.size() > 1 && t.back() == '/') t.remove_suffix(1);
    return !t.empty() && t == dir;
  });
  if (!trusted) {
    return {false, Quoted(resolved_path) + " is not in a trusted safe-bin directory"};
  }
  auto profile = s.profiles.find(name);
  if (profile == s.profiles.end()) {
    return {false, name +
                       " has no safe-bin profile; use allowlist or define "
                       "tools.exec.safeBinProfiles." +
                       name};
  }
  if (IsNeverSafeBin(name)) {
    return {false, name + (name == "jq" ? " is never a safe bin"
                                        : " is an interpreter or a shell: never a safe bin")};
  }
  std::span<const std::string> args(argv);
  if (!args.empty()) args = args.subspan(1);
  std::string reason = ValidateSafeBinArgv(args, profile->second, name);
  if (!reason.empty()) return {false, name + ": " + reason};
  return {true, ""};
}

}  // namespace sandrun::policy

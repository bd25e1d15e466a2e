#include "runner/policy/env_strip.h"

#include "sandbox/base/strings.h"
#include "sandbox/harden/profile_file.h"

namespace sandrun::policy {
namespace {

constexpr std::string_view kKind = "env";

char UpperAscii(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

bool ValidPattern(std::string_view p) {
  if (p.empty() || p.find_first_not_of('*') == std::string_view::npos) return false;
  for (char c : p) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '*';
    if (!ok) return false;
  }
  return true;
}

Result<EnvStripProfile> FromFile(const harden::ProfileFile& file) {
  harden::SchemaChecker check(file.path);
  SANDRUN_RETURN_IF_ERROR(check.Keys(file.doc, "", {"name", "description", "strip"}));
  EnvStripProfile profile;
  profile.path = file.path;
  SANDRUN_ASSIGN_OR_RETURN(std::vector<std::string> strip,
                           check.StringArray(file.doc, "", "strip"));
  for (size_t i = 0; i < strip.size(); ++i) {
    if (!ValidPattern(strip[i])) {
      return check.Fail(
          harden::SchemaChecker::Index("strip", i),
          "\"" + strip[i] + "\" is not a variable name pattern ([A-Za-z0-9_*], not '*' alone)");
    }
    std::string upper;
    for (char c : strip[i]) upper += UpperAscii(c);
    profile.strip.push_back(std::move(upper));
  }
  return profile;
}

}  // namespace

bool ValueHoldsUrlCredentials(std::string_view value) {
  // scheme "://" userinfo-with-':' "@": the password of a proxy, index or database URL.
  for (size_t at = value.find("://"); at != std::string_view::npos;
       at = value.find("://", at + 3)) {
    size_t start = at + 3;
    size_t end = value.find_first_of("/?#@ \t\n", start);
    if (end == std::string_view::npos || value[end] != '@') continue;
    if (value.substr(start, end - start).find(':') != std::string_view::npos) return true;
  }
  return false;
}

Result<EnvStripProfile> LoadEnvStripProfile(const std::string& profiles_dir,
                                            const std::string& name) {
  SANDRUN_ASSIGN_OR_RETURN(harden::ProfileFile file,
                           harden::ReadProfileFile(profiles_dir, kKind, name));
  return FromFile(file);
}

Result<EnvStripProfile> ParseEnvStripProfile(std::string_view text, const std::string& path,
                                             const std::string& expected_name) {
  SANDRUN_ASSIGN_OR_RETURN(harden::ProfileFile file,
                           harden::ParseProfileText(text, path, expected_name));
  return FromFile(file);
}

bool EnvPatternMatches(std::string_view pattern, std::string_view key) {
  // Iterative wildcard match with one backtrack point (the last '*'): linear in practice.
  size_t p = 0, k = 0, star = std::string_view::npos, mark = 0;
  while (k < key.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = k;
    } else if (p < pattern.size() && UpperAscii(pattern[p]) == UpperAscii(key[k])) {
      ++p;
      ++k;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      k = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::map<std::string, std::string> StripInheritedSecrets(
    const std::map<std::string, std::string>& env, const std::vector<std::string>& strip,
    const std::vector<std::string>& passthrough) {
  auto any = [](const std::vector<std::string>& patterns, const std::string& key) {
    for (const std::string& p : patterns) {
      if (EnvPatternMatches(Trim(p), key)) return true;
    }
    return false;
  };
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : env) {
    const bool secret = any(strip, key) || ValueHoldsUrlCredentials(value);
    if (secret && !any(passthrough, key)) continue;
    out.emplace(key, value);
  }
  return out;
}

}  // namespace sandrun::policy

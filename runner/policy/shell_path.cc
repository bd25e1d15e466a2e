#include "runner/policy/shell_path.h"

#include <set>
#include <utility>

#include "sandbox/base/strings.h"
#include "sandbox/executors/path_search.h"

namespace sandrun::policy {
namespace {

// OpenClaw's mergePathPrepend: `first`, then `existing`'s entries, each kept once.
std::string MergeEntries(const std::vector<std::string_view>& first, std::string_view existing) {
  std::set<std::string_view> seen;
  std::string merged;
  auto add = [&](std::string_view entry) {
    if (!seen.insert(entry).second) return;
    if (!merged.empty()) merged += ':';
    merged += entry;
  };
  for (std::string_view entry : first) add(entry);
  for (std::string_view entry : exec::PathEntries(existing)) add(entry);
  return merged;
}

}  // namespace

PathLookup PathLookupIn(std::string path_value) {
  return [path = std::move(path_value)](std::string_view name) {
    return exec::FindExecutable(name, path);
  };
}

std::string SelectShell(const char* shell_env, const PathLookup& lookup) {
  const std::string trimmed = Trim(shell_env == nullptr ? std::string() : std::string(shell_env));
  std::string_view shell = trimmed;
  auto find = [&](std::string_view name) { return lookup ? lookup(name) : std::string(); };
  if (shell.empty()) {
    std::string sh = find("sh");
    return sh.empty() ? "/bin/sh" : sh;
  }
  size_t slash = shell.rfind('/');
  std::string_view base = slash == std::string_view::npos ? shell : shell.substr(slash + 1);
  if (base == "fish") {
    // fish is not a POSIX shell: `-c` scripts written for sh would misbehave.
    if (std::string bash = find("bash"); !bash.empty()) return bash;
    if (std::string sh = find("sh"); !sh.empty()) return sh;
    return std::string(shell);
  }
  if (slash == std::string_view::npos) {
    if (std::string resolved = find(shell); !resolved.empty()) return resolved;
  }
  return std::string(shell);
}

std::string MergePath(std::string_view login_path, std::string_view base_path,
                      const std::vector<std::string>& prepend_entries) {
  std::string path(base_path);
  std::vector<std::string_view> login = exec::PathEntries(login_path);
  if (!login.empty()) path = MergeEntries(login, path);
  std::vector<std::string_view> prepend;
  for (const auto& entry : prepend_entries) {
    // "a:b" would be two directories once joined anyway; split it so each is deduplicated.
    for (std::string_view part : exec::PathEntries(entry)) prepend.push_back(part);
  }
  if (!prepend.empty()) path = MergeEntries(prepend, path);
  return path;
}

}  // namespace sandrun::policy

#include "sandbox/executors/path_search.h"

#include <sys/stat.h>
#include <unistd.h>

namespace sandrun::exec {
namespace {

constexpr std::string_view kWhitespace = " \t\n\r\f\v";

std::string_view Trim(std::string_view s) {
  size_t begin = s.find_first_not_of(kWhitespace);
  if (begin == std::string_view::npos) return {};
  size_t end = s.find_last_not_of(kWhitespace);
  return s.substr(begin, end - begin + 1);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::vector<std::string_view> PathEntries(std::string_view path) {
  std::vector<std::string_view> entries;
  while (true) {
    size_t colon = path.find(':');
    std::string_view entry = Trim(path.substr(0, colon));
    if (!entry.empty()) entries.push_back(entry);
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  return entries;
}

std::string FindExecutable(std::string_view name, std::string_view path_value) {
  if (name.empty()) return {};
  if (name.find('/') != std::string_view::npos) {
    std::string path(name);
    return IsExecutableFile(path) ? path : std::string();
  }
  for (std::string_view dir : PathEntries(path_value)) {
    std::string candidate(dir);
    if (candidate.back() != '/') candidate += '/';
    candidate += name;
    if (IsExecutableFile(candidate)) return candidate;
  }
  return {};
}

}  // namespace sandrun::exec

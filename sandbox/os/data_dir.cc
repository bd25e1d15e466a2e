#include "sandbox/os/data_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>

namespace sandrun {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

const char* DataKindName(DataKind kind) {
  return kind == DataKind::kProfiles ? "profiles" : "images";
}

const char* DataKindVariable(DataKind kind) {
  return kind == DataKind::kProfiles ? "SANDRUN_PROFILES_DIR" : "SANDRUN_IMAGES_DIR";
}

std::string ExecutablePath() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0 || buf[0] != '/') return "";
  return std::string(buf, static_cast<size_t>(n));
}

DataDir FindDataDirFrom(DataKind kind, const char* env_value, const std::string& executable,
                        const std::string& source_dir) {
  const std::string name = DataKindName(kind);
  if (env_value != nullptr && *env_value != '\0') {
    return DataDir{env_value, DataDir::Source::kEnvironment, DataKindVariable(kind)};
  }
  if (!executable.empty() && executable.front() == '/') {
    // <prefix>/bin/sandrun -> <prefix>/share/sandrun; lexically, since the executable's path is
    // already real (no links to resolve on the way up).
    const std::filesystem::path bin_dir = std::filesystem::path(executable).parent_path();
    const std::string share = (bin_dir.parent_path() / "share" / "sandrun").lexically_normal();
    if (IsDirectory(share)) {
      return DataDir{share + "/" + name, DataDir::Source::kInstalled, executable};
    }
  }
  return DataDir{source_dir + "/" + name, DataDir::Source::kSourceTree, source_dir};
}

DataDir FindDataDir(DataKind kind) {
  return FindDataDirFrom(kind, std::getenv(DataKindVariable(kind)), ExecutablePath(),
                         SANDRUN_SOURCE_DIR);
}

Status CheckDataDir(const DataDir& dir) {
  if (IsDirectory(dir.path)) return Status();
  return Error(ErrorCode::kNotFound, dir.path + " (" + DescribeSource(dir) + ") is missing");
}

std::string DataDirFix(DataKind kind) {
  return std::string("reinstall sandrun (cmake --install or the .deb), or set ") +
         DataKindVariable(kind) + " to a copy of the source tree's " + DataKindName(kind) + "/";
}

std::string DescribeSource(const DataDir& dir) {
  switch (dir.source) {
    case DataDir::Source::kEnvironment:
      return "from $" + dir.origin;
    case DataDir::Source::kInstalled:
      return "installed next to " + dir.origin;
    case DataDir::Source::kSourceTree:
      return "the source tree " + dir.origin;
  }
  return "";
}

}  // namespace sandrun

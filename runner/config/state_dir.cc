#include "runner/config/state_dir.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "sandbox/os/file.h"
#include "sandbox/os/random.h"

namespace sandrun::config {

Result<std::string> StateDirPath() {
  if (const char* home = std::getenv("SANDRUN_HOME"); home && *home) {
    std::string path(home);
    if (path.front() != '/') {
      return Error(ErrorCode::kInvalidArgument,
                   "SANDRUN_HOME must be an absolute path (got \"" + path + "\")");
    }
    return path;
  }
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') {
    const passwd* pw = ::getpwuid(::geteuid());
    if (pw == nullptr || pw->pw_dir == nullptr) {
      return Error(ErrorCode::kNotFound, "neither SANDRUN_HOME nor HOME is set");
    }
    home = pw->pw_dir;
  }
  return std::string(home) + "/.sandrun";
}

Status EnsureStateDir(const std::string& path) {
  SANDRUN_RETURN_IF_ERROR(EnsureDirectory(path, 0700));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error::FromErrno(errno, "stat " + path);
  if (st.st_uid != ::geteuid()) {
    return Error(ErrorCode::kConflict, path + " is owned by uid " + std::to_string(st.st_uid) +
                                           ", not by the current user (uid " +
                                           std::to_string(::geteuid()) + ")");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    return Error(ErrorCode::kConflict, path + " has mode " + mode +
                                           ": other users could read or change sandrun's state; "
                                           "run: chmod 700 " +
                                           path);
  }
  return Ok();
}

Result<std::string> LoadOrCreateInstanceId(const std::string& state_dir) {
  std::string path = state_dir + "/instance-id";
  auto existing = ReadFile(path, 4096);
  if (existing) {
    std::string id = *existing;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    bool valid = id.size() >= 8;
    for (char c : id) valid = valid && std::isxdigit(static_cast<unsigned char>(c));
    if (valid) return id;
    return Error(ErrorCode::kInvalidArgument,
                 path + " is not a hex instance id; remove it to have a new one created");
  }
  if (existing.error().code != ErrorCode::kNotFound) return std::move(existing).error();
  SANDRUN_ASSIGN_OR_RETURN(std::string id, RandomHex(8));
  SANDRUN_RETURN_IF_ERROR(EnsureStateDir(state_dir));
  // Another process may have raced us: link() fails if the file appeared, and then theirs wins.
  std::string tmp = path + ".new-" + std::to_string(::getpid()) + "-" + id;
  SANDRUN_RETURN_IF_ERROR(WriteFileAtomic(tmp, id + "\n", 0600));
  int rc = ::link(tmp.c_str(), path.c_str());
  ::unlink(tmp.c_str());
  if (rc != 0 && errno == EEXIST) return LoadOrCreateInstanceId(state_dir);
  if (rc != 0) return Error::FromErrno(errno, "cannot create " + path);
  return id;
}

}  // namespace sandrun::config

#include "runner/config/state_dir.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "sandbox/os/file.h"

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

}  // namespace sandrun::config

#include "sandbox/os/trusted_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace sandrun {
namespace {

std::string Octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

Status Check(const std::string& path, const struct stat& st, bool directory, std::string_view what,
             const std::string& shown) {
  const uid_t me = ::geteuid();
  const std::string prefix = "refusing " + std::string(what) + " " + shown + ": ";
  const std::string subject = directory ? "its directory " + path : "it";
  if (st.st_uid != me && st.st_uid != 0) {
    return Error(ErrorCode::kInvalidArgument, prefix + subject + " is owned by uid " +
                                                  std::to_string(st.st_uid) + ", not by uid " +
                                                  std::to_string(me) + " or root; fix: chown " +
                                                  std::to_string(me) + " " + path);
  }
  const bool sticky_dir = directory && (st.st_mode & S_ISVTX) != 0;
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky_dir) {
    return Error(ErrorCode::kInvalidArgument, prefix + subject +
                                                  " is writable by group or others (mode " +
                                                  Octal(st.st_mode) + "); fix: chmod go-w " + path);
  }
  return Ok();
}

}  // namespace

Status CheckTrustedFile(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) return Error(ErrorCode::kNotFound, path + " does not exist");
    return Error::FromErrno(err, "stat " + path);
  }
  SANDRUN_RETURN_IF_ERROR(Check(path, st, false, what, path));
  // The directories the name (and, through a symlink, the file) live in: whoever can write one
  // can replace the file.
  auto dir_of = [](const std::string& p) {
    size_t slash = p.find_last_of('/');
    if (slash == std::string::npos) return std::string(".");
    return slash == 0 ? std::string("/") : p.substr(0, slash);
  };
  char resolved[4096];
  const std::string real = ::realpath(path.c_str(), resolved) != nullptr ? resolved : path;
  for (const std::string& dir : {dir_of(path), dir_of(real)}) {
    struct stat dst {};
    if (::stat(dir.c_str(), &dst) != 0) return Error::FromErrno(errno, "stat " + dir);
    SANDRUN_RETURN_IF_ERROR(Check(dir, dst, true, what, path));
  }
  return Ok();
}

}  // namespace sandrun

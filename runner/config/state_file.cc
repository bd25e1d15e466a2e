#include "runner/config/state_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "sandbox/base/clock.h"
#include "sandbox/os/trusted_file.h"

namespace sandrun::config::state_file {
namespace {

constexpr size_t kMaxFileBytes = 16u << 20;

// Renames `from` to `to` unless `to` exists (EEXIST then).
int RenameNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  // A file system without RENAME_NOREPLACE: link() refuses an existing name too.
  if (::link(from.c_str(), to.c_str()) != 0) return -1;
  return ::unlink(from.c_str());
}

// Temp files of writers that crashed before their rename (called with the lock held).
void RemoveStaleTemps(const std::string& path) {
  std::filesystem::path p(path);
  std::string prefix = p.filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(DirectoryOf(path), ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) ::unlink(entry.path().c_str());
  }
}

}  // namespace

std::string DirectoryOf(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

Status CheckDirectory(const std::string& path, std::string_view what, bool missing_ok) {
  std::string dir = DirectoryOf(path);
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT && missing_ok) return Ok();
    return Error::FromErrno(errno, "cannot use the directory of " + path);
  }
  if (S_ISLNK(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument, dir + " is a symlink; refusing to use the " +
                                                  std::string(what) + " " + path +
                                                  " through it (use the real directory)");
  }
  if (!S_ISDIR(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument, dir + " is not a directory");
  }
  return Ok();
}

Result<Disk> Read(const std::string& path, std::string_view what) {
  Disk disk;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return disk;
    return Error::FromErrno(errno, "cannot stat " + path);
  }
  if (S_ISLNK(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument,
                 path + " is a symlink; refusing to read or replace it (make it a regular file)");
  }
  if (!S_ISREG(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument, path + " is not a regular file");
  }
  // Whoever else can write a state file decides what sandrun allows (allowlists, tokens).
  if (Status trusted = CheckTrustedFile(path, what);
      !trusted && trusted.error().code != ErrorCode::kNotFound) {
    return std::move(trusted).error();
  }
  Result<std::string> text = ReadFile(path, kMaxFileBytes);
  if (!text) {
    if (text.error().code == ErrorCode::kNotFound) return disk;  // removed meanwhile
    return std::move(text).error();
  }
  disk.existed = true;
  disk.text = std::move(*text);
  if ((st.st_mode & 0777 & ~static_cast<mode_t>(0600)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    disk.warnings.push_back(path + " has mode " + mode + ", wider than 0600: others may read or " +
                            "change the " + std::string(what) + " (fix: chmod 600 " + path + ")");
    disk.is_private = false;
  }
  if (st.st_uid != ::geteuid()) {
    disk.warnings.push_back(path + " is owned by uid " + std::to_string(st.st_uid) +
                            ", not by the current user (uid " + std::to_string(::geteuid()) + ")");
    disk.is_private = false;
  }
  return disk;
}

Result<FileLock> Lock(const std::string& path) {
  std::string lock_path = path + ".lock";
  struct stat st;
  if (::lstat(lock_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument,
                 lock_path + " is not a regular file; refusing to lock through it");
  }
  return FileLock::Acquire(lock_path);
}

Error MoveAside(const std::string& path, Error parse_error) {
  std::string base = path + ".corrupt-" + std::to_string(UnixMillis());
  std::string aside = base;
  int rc = -1;
  for (int i = 1; i <= 100; ++i) {
    rc = RenameNoReplace(path, aside);
    if (rc == 0 || errno != EEXIST) break;
    aside = base + "-" + std::to_string(i);
  }
  if (rc != 0) {
    Error failed = Error::FromErrno(errno, "cannot move it to " + aside);
    parse_error.message += "; the file was left in place (" + failed.message + ")";
    return parse_error;
  }
  parse_error.code = ErrorCode::kInvalidArgument;
  parse_error.message += "; the file was kept as " + aside + " and a fresh one will be started";
  return parse_error;
}

Status Write(const std::string& path, std::string_view text) {
  RemoveStaleTemps(path);
  AtomicWriteOptions options;
  options.mode = 0600;
  options.durable = true;
  options.sync_directory = true;
  return WriteFileAtomic(path, text, options);
}

}  // namespace sandrun::config::state_file

// Small file helpers with errors as values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun {

// Reads a whole file (at most `max_bytes`).
Result<std::string> ReadFile(const std::string& path, size_t max_bytes = 64u << 20);

// Regular files below `dir`, recursively, as paths relative to `dir`, sorted.
Result<std::vector<std::string>> ListFilesRecursive(const std::string& dir);

// Writes `content` to a temp file in the same directory, fsyncs it when `durable`, and renames
// it over `path` (readers see the old or the new file, never a half-written one).
Status WriteFileAtomic(const std::string& path, std::string_view content, unsigned mode,
                       bool durable = true);

// An exclusive advisory lock (flock) on `path`, created if missing; released on destruction.
class FileLock {
 public:
  static Result<FileLock> Acquire(const std::string& path);
  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  FileLock& operator=(FileLock&&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

// Creates `path` (and parents) with `mode` if missing; if it exists it must be a directory.
Status EnsureDirectory(const std::string& path, unsigned mode);

}  // namespace sandrun

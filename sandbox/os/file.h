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

struct AtomicWriteOptions {
  unsigned mode = 0600;
  bool durable = true;          // fsync the temp file before the rename
  bool sync_directory = false;  // also fsync the directory after it, so the rename survives a crash
};

// Writes `content` to a new temp file "<path>.tmp-<pid>-<n>" in the same directory (created with
// O_EXCL | O_NOFOLLOW and exactly `mode`, so it never reuses or follows anything already there),
// fsyncs it when `durable`, and renames it over `path` (readers see the old or the new file,
// never a half-written one). On failure the temp file is removed and `path` is untouched; a
// crash can leave a "<path>.tmp-*" file behind, which callers serialising their writes with a
// lock may delete.
Status WriteFileAtomic(const std::string& path, std::string_view content,
                       const AtomicWriteOptions& options);
inline Status WriteFileAtomic(const std::string& path, std::string_view content, unsigned mode,
                              bool durable = true) {
  return WriteFileAtomic(path, content, AtomicWriteOptions{mode, durable, false});
}

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

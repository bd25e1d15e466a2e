#include "sandbox/os/file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "sandbox/os/unique_fd.h"

namespace sandrun {

Result<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    Error e = Error::FromErrno(errno, "cannot open " + path);
    if (e.sys_errno == ENOENT) e.code = ErrorCode::kNotFound;
    return e;
  }
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "cannot read " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return Error(ErrorCode::kIo,
                   path + " is larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  return out;
}

Result<std::vector<std::string>> ListFilesRecursive(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> out;
  std::filesystem::recursive_directory_iterator it(dir, ec), end;
  if (ec) return Error(ErrorCode::kNotFound, "cannot list " + dir + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return Error(ErrorCode::kIo, "cannot list " + dir + ": " + ec.message());
    if (it->is_regular_file()) {
      out.push_back(std::filesystem::relative(it->path(), dir).string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status WriteFileAtomic(const std::string& path, std::string_view content,
                       const AtomicWriteOptions& options) {
  // Unique per process and per call: threads of one process write concurrently too. A name left
  // by a crashed process with a recycled pid is skipped (O_EXCL), never truncated or followed.
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  UniqueFd fd;
  for (int attempt = 0; !fd.valid(); ++attempt) {
    tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    fd.reset(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    static_cast<mode_t>(options.mode)));
    if (!fd.valid() && (errno != EEXIST || attempt >= 100)) {
      return Error::FromErrno(errno, "cannot create " + tmp);
    }
  }
  ::fchmod(fd.get(), static_cast<mode_t>(options.mode));  // the umask must not widen or narrow it
  while (!content.empty()) {
    ssize_t n = ::write(fd.get(), content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = Error::FromErrno(errno, "cannot write " + tmp);
      ::unlink(tmp.c_str());
      return e;
    }
    content.remove_prefix(static_cast<size_t>(n));
  }
  if (options.durable && ::fsync(fd.get()) != 0) {
    Error e = Error::FromErrno(errno, "cannot fsync " + tmp);
    ::unlink(tmp.c_str());
    return e;
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = Error::FromErrno(errno, "cannot rename " + tmp + " to " + path);
    ::unlink(tmp.c_str());
    return e;
  }
  if (options.sync_directory) {
    std::string dir = std::filesystem::path(path).parent_path().string();
    UniqueFd dir_fd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd.valid() || ::fsync(dir_fd.get()) != 0) {
      return Error::FromErrno(errno, "cannot fsync directory " + dir);
    }
  }
  return Ok();
}

Result<FileLock> FileLock::Acquire(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Error::FromErrno(errno, "cannot open lock file " + path);
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      Error e = Error::FromErrno(errno, "cannot lock " + path);
      ::close(fd);
      return e;
    }
  }
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

Status EnsureDirectory(const std::string& path, unsigned mode) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Ok();
  std::filesystem::path p(path);
  if (p.has_parent_path() && !std::filesystem::exists(p.parent_path(), ec)) {
    SANDRUN_RETURN_IF_ERROR(EnsureDirectory(p.parent_path().string(), mode));
  }
  if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
    return Error::FromErrno(errno, "cannot create directory " + path);
  }
  if (!std::filesystem::is_directory(path, ec)) {
    return Error(ErrorCode::kConflict, path + " exists and is not a directory");
  }
  return Ok();
}

}  // namespace sandrun

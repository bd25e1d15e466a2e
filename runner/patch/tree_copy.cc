#include "runner/patch/tree_copy.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "sandbox/os/random.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::patch {
namespace {

Status WriteAll(int fd, const char* data, size_t size, const std::string& what) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "cannot write " + what);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Ok();
}

Status CopyContent(int in, int out, const std::string& display) {
  std::unique_ptr<char[]> buf(new char[1 << 16]);
  for (;;) {
    ssize_t n = ::read(in, buf.get(), 1 << 16);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "cannot read the source of " + display);
    }
    if (n == 0) return Ok();
    SANDRUN_RETURN_IF_ERROR(WriteAll(out, buf.get(), static_cast<size_t>(n), display));
  }
}

// The names in directory `fd` (without . and ..), read through a duplicate so `fd` stays usable.
Result<std::vector<std::string>> ListNames(int fd, const std::string& display) {
  int dup = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dup < 0) return Error::FromErrno(errno, "cannot list the source of " + display);
  DIR* dir = ::fdopendir(dup);
  if (dir == nullptr) {
    ::close(dup);
    return Error::FromErrno(errno, "cannot list the source of " + display);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, ::closedir);
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  if (errno != 0) return Error::FromErrno(errno, "cannot list the source of " + display);
  return names;
}

}  // namespace

TreeCopy::TreeCopy(TreeCopyOptions options) : options_(options) {
  // A unique prefix for temp files; O_EXCL keeps a collision from doing harm anyway.
  temp_prefix_ = ".sandrun-cp-" + std::to_string(::getpid()) + "-" +
                 RandomHex(4).value_or(std::string("0")) + "-";
}

void TreeCopy::Own(int fd, int dest_dir_fd) const {
  if (!options_.own_like_parent) return;
  struct stat parent {};
  if (::fstat(dest_dir_fd, &parent) != 0) return;
  // Best effort, as RootedFs::OpenDir: the content matters more than its owner.
  (void)::fchown(fd, parent.st_uid, parent.st_gid);
}

Status TreeCopy::Copy(int src_fd, int dest_dir_fd, const std::string& name,
                      const std::string& display) {
  struct stat st {};
  if (::fstat(src_fd, &st) != 0) return Error::FromErrno(errno, "cannot stat the source");
  return CopyEntry(src_fd, st, dest_dir_fd, name, display, 0);
}

Status TreeCopy::CopyEntry(int src_fd, const struct stat& st, int dest_dir_fd,
                           const std::string& name, const std::string& display, size_t depth) {
  if (S_ISREG(st.st_mode)) return CopyFile(src_fd, dest_dir_fd, name, display);
  if (S_ISDIR(st.st_mode)) return CopyDir(src_fd, dest_dir_fd, name, display, depth);
  return Error(ErrorCode::kInvalidArgument,
               "the source of " + display + " is neither a regular file nor a directory");
}

Status TreeCopy::CopyFile(int src_fd, int dest_dir_fd, const std::string& name,
                          const std::string& display) {
  struct stat cur {};
  if (::fstatat(dest_dir_fd, name.c_str(), &cur, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(cur.st_mode)) {
      return Error(ErrorCode::kInvalidArgument,
                   "cannot overwrite the directory " + display + " with a file");
    }
  } else if (errno != ENOENT) {
    return Error::FromErrno(errno, "cannot stat " + display);
  }
  struct stat st {};
  if (::fstat(src_fd, &st) != 0) return Error::FromErrno(errno, "cannot stat the source");
  const std::string temp = temp_prefix_ + std::to_string(++counter_) + ".tmp";
  UniqueFd out(::openat(dest_dir_fd, temp.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 0777));
  if (!out.valid()) return Error::FromErrno(errno, "cannot create a temp file for " + display);
  Status written = CopyContent(src_fd, out.get(), display);
  if (written) {
    Own(out.get(), dest_dir_fd);
    // renameat replaces a file or a link named `name`, never what a link points to; a directory
    // put there meanwhile makes it fail (EISDIR).
    if (::renameat(dest_dir_fd, temp.c_str(), dest_dir_fd, name.c_str()) != 0) {
      written = Error::FromErrno(errno, "cannot put " + display + " in place");
    }
  }
  if (!written) {
    (void)::unlinkat(dest_dir_fd, temp.c_str(), 0);
    return written;
  }
  ++files_;
  return Ok();
}

Status TreeCopy::CopyDir(int src_fd, int dest_dir_fd, const std::string& name,
                         const std::string& display, size_t depth) {
  if (depth >= options_.max_depth) {
    return Error(ErrorCode::kInvalidArgument, display + ": directories nested deeper than " +
                                                  std::to_string(options_.max_depth));
  }
  struct stat cur {};
  bool made = false;
  if (::fstatat(dest_dir_fd, name.c_str(), &cur, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISDIR(cur.st_mode)) {
      return Error(ErrorCode::kInvalidArgument,
                   S_ISLNK(cur.st_mode)
                       ? display + " is a symbolic link: not followed, not replaced"
                       : "cannot overwrite the non-directory " + display + " with a directory");
    }
  } else if (errno != ENOENT) {
    return Error::FromErrno(errno, "cannot stat " + display);
  } else {
    struct stat src {};
    if (::fstat(src_fd, &src) != 0) return Error::FromErrno(errno, "cannot stat the source");
    // 0700 at least, so the copy can fill it.
    if (::mkdirat(dest_dir_fd, name.c_str(), (src.st_mode & 0777) | 0700) != 0) {
      return Error::FromErrno(errno, "cannot create the directory " + display);
    }
    made = true;
  }
  UniqueFd dir(
      ::openat(dest_dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return Error::FromErrno(errno, "cannot open the directory " + display);
  if (made) {
    Own(dir.get(), dest_dir_fd);
    struct stat st {};
    if (::fstat(dir.get(), &st) == 0) made_.insert({st.st_dev, st.st_ino});
  }
  SANDRUN_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNames(src_fd, display));
  for (const std::string& n : names) {
    const std::string where = display + "/" + n;
    struct stat st {};
    if (::fstatat(src_fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // gone meanwhile
      return Error::FromErrno(errno, "cannot stat the source of " + where);
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
      warnings_.push_back("skipped " + where +
                          (S_ISLNK(st.st_mode) ? ": a symbolic link (never followed)"
                                               : ": neither a regular file nor a directory"));
      continue;
    }
    if (S_ISDIR(st.st_mode) && made_.count({st.st_dev, st.st_ino}) != 0) continue;  // ourselves
    const int flags = S_ISDIR(st.st_mode)
                          ? O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
                          : O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    UniqueFd src(::openat(src_fd, n.c_str(), flags));
    if (!src.valid()) {
      if (errno == ENOENT) continue;
      if (errno == ELOOP || errno == ENOTDIR) {  // swapped for a link or a file meanwhile
        warnings_.push_back("skipped " + where + ": it changed while being copied");
        continue;
      }
      return Error::FromErrno(errno, "cannot open the source of " + where);
    }
    struct stat now {};
    if (::fstat(src.get(), &now) != 0) return Error::FromErrno(errno, "cannot stat " + where);
    if (!S_ISREG(now.st_mode) && !S_ISDIR(now.st_mode)) {
      warnings_.push_back("skipped " + where + ": neither a regular file nor a directory");
      continue;
    }
    SANDRUN_RETURN_IF_ERROR(CopyEntry(src.get(), now, dir.get(), n, where, depth + 1));
  }
  return Ok();
}

}  // namespace sandrun::patch

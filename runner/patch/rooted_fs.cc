#include "runner/patch/rooted_fs.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>

namespace sandrun::patch {
namespace {

// Set once openat2 turned out to be missing (kernels before 5.6): then every open is checked
// after the fact through /proc/self/fd instead (racy, but still refuses what it sees).
std::atomic<bool> g_no_openat2{false};

Error Escape(const std::string& what) {
  Error e(ErrorCode::kInvalidArgument, what + " leads out of the workspace");
  e.sys_errno = EXDEV;
  return e;
}

Result<std::string> FdPath(int fd) {
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  char buf[PATH_MAX + 1];
  ssize_t n = ::readlink(link.c_str(), buf, PATH_MAX);
  if (n < 0) return Error::FromErrno(errno, "cannot read " + link);
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

std::vector<std::string> SplitRel(const std::string& rel) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t slash = rel.find('/', start);
    if (slash == std::string::npos) slash = rel.size();
    if (slash > start) parts.push_back(rel.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

std::string JoinRel(const std::vector<std::string>& parts, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    if (!out.empty()) out += '/';
    out += parts[i];
  }
  return out;
}

Result<RootedFs> RootedFs::Open(const std::string& root, bool confined) {
  std::string dir = confined ? root : "/";
  UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Error::FromErrno(errno, "cannot open the workspace " + dir);
  SANDRUN_ASSIGN_OR_RETURN(std::string real, FdPath(fd.get()));
  return RootedFs(std::move(fd), std::move(real), confined);
}

std::string RootedFs::Display(const std::string& rel) const {
  if (rel.empty()) return root_;
  return (root_ == "/" ? "" : root_) + "/" + rel;
}

int RootedFs::OpenBeneath(const std::string& rel, int flags) const {
  const std::string path = rel.empty() ? "." : rel;
  if (!g_no_openat2.load(std::memory_order_relaxed)) {
    open_how how{};
    how.flags = static_cast<__u64>(static_cast<unsigned>(flags | O_CLOEXEC));
    how.resolve =
        confined_ ? __u64{RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS} : __u64{RESOLVE_NO_MAGICLINKS};
    long fd = ::syscall(SYS_openat2, fd_.get(), path.c_str(), &how, sizeof how);
    if (fd >= 0 || errno != ENOSYS) return static_cast<int>(fd);
    g_no_openat2.store(true, std::memory_order_relaxed);
  }
  int fd = ::openat(fd_.get(), path.c_str(), flags | O_CLOEXEC);
  if (fd < 0 || !confined_) return fd;
  Result<std::string> rel_of = RelOf(fd);
  if (!rel_of) {
    ::close(fd);
    errno = EXDEV;
    return -1;
  }
  return fd;
}

Result<std::string> RootedFs::RelOf(int fd) const {
  SANDRUN_ASSIGN_OR_RETURN(std::string path, FdPath(fd));
  if (!confined_ || root_ == "/") return path.size() > 1 ? path.substr(1) : std::string();
  if (path == root_) return std::string();
  if (path.size() > root_.size() && path.compare(0, root_.size(), root_) == 0 &&
      path[root_.size()] == '/') {
    return path.substr(root_.size() + 1);
  }
  return Escape(path);
}

Result<PathInfo> RootedFs::Resolve(const std::string& rel, bool follow_final) const {
  std::vector<std::string> parts = SplitRel(rel);
  if (parts.empty())
    return Error(ErrorCode::kInvalidArgument, "the path names the workspace itself");
  const std::string name = parts.back();
  parts.pop_back();

  // The deepest existing ancestor of the parent directory.
  size_t depth = parts.size();
  UniqueFd dir;
  for (;;) {
    dir.reset(OpenBeneath(JoinRel(parts, 0, depth), O_PATH | O_DIRECTORY));
    if (dir.valid()) break;
    int err = errno;
    if (err == ENOENT && depth > 0) {
      --depth;
      continue;
    }
    if (err == EXDEV) return Escape(rel);
    if (err == ENOTDIR) {
      return Error(ErrorCode::kInvalidArgument, "a parent of " + rel + " is not a directory");
    }
    if (err == ELOOP) return Error(ErrorCode::kInvalidArgument, rel + ": too many symlinks");
    return Error::FromErrno(err, "cannot open the directory of " + rel);
  }
  SANDRUN_ASSIGN_OR_RETURN(std::string base, RelOf(dir.get()));
  auto join = [](const std::string& a, const std::string& b) {
    return a.empty() ? b : a + "/" + b;
  };

  PathInfo info;
  if (depth < parts.size()) {
    // parts[depth] is missing: a dangling symlink there would be followed later, so refuse it.
    struct stat st {};
    if (::fstatat(dir.get(), parts[depth].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      return Error(ErrorCode::kInvalidArgument, "a parent of " + rel + " is a dangling symlink (" +
                                                    join(base, parts[depth]) + ")");
    }
    info.rel = join(join(base, JoinRel(parts, depth, parts.size())), name);
    return info;
  }
  info.rel = join(base, name);
  if (::fstatat(dir.get(), name.c_str(), &info.st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return info;
    return Error::FromErrno(errno, "cannot stat " + rel);
  }
  if (S_ISLNK(info.st.st_mode) && follow_final) {
    UniqueFd target(OpenBeneath(info.rel, O_PATH));
    if (!target.valid()) {
      if (errno == EXDEV) return Escape(rel + " (a symlink)");
      if (errno == ENOENT) {
        info.type = FileType::kSymlink;  // dangling
        return info;
      }
      if (errno == ELOOP) return Error(ErrorCode::kInvalidArgument, rel + ": too many symlinks");
      return Error::FromErrno(errno, "cannot follow the symlink " + rel);
    }
    if (::fstat(target.get(), &info.st) != 0) return Error::FromErrno(errno, "cannot stat " + rel);
    SANDRUN_ASSIGN_OR_RETURN(info.rel, RelOf(target.get()));
  }
  if (S_ISREG(info.st.st_mode)) {
    info.type = FileType::kRegular;
  } else if (S_ISDIR(info.st.st_mode)) {
    info.type = FileType::kDirectory;
  } else if (S_ISLNK(info.st.st_mode)) {
    info.type = FileType::kSymlink;
  } else {
    info.type = FileType::kOther;
  }
  return info;
}

Result<UniqueFd> RootedFs::Open(const std::string& rel, int flags) const {
  UniqueFd fd(OpenBeneath(rel, flags));
  if (fd.valid()) return fd;
  if (errno == EXDEV) return Escape(rel.empty() ? "." : rel);
  Error e = Error::FromErrno(errno, "cannot open " + (rel.empty() ? std::string(".") : rel));
  if (e.sys_errno == ENOENT) e.code = ErrorCode::kNotFound;
  return e;
}

Result<std::string> RootedFs::ReadFile(const std::string& rel, size_t max_bytes) const {
  UniqueFd fd(OpenBeneath(rel, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) {
    if (errno == EXDEV) return Escape(rel);
    Error e = Error::FromErrno(errno, "cannot open " + rel);
    if (e.sys_errno == ENOENT) e.code = ErrorCode::kNotFound;
    return e;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno(errno, "cannot stat " + rel);
  if (!S_ISREG(st.st_mode))
    return Error(ErrorCode::kInvalidArgument, rel + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return Error(ErrorCode::kInvalidArgument, rel + " is larger than " + std::to_string(max_bytes) +
                                                  " bytes; apply_patch edits smaller files only");
  }
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  for (;;) {
    if (got == out.size()) out.resize(got + 4096);  // the file grew meanwhile
    ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "cannot read " + rel);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (got > max_bytes) {
      return Error(ErrorCode::kInvalidArgument,
                   rel + " is larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  out.resize(got);
  return out;
}

Result<UniqueFd> RootedFs::OpenDir(const std::string& rel, bool create,
                                   std::vector<std::string>* created) const {
  UniqueFd dir(OpenBeneath(rel, O_PATH | O_DIRECTORY));
  if (dir.valid()) return dir;
  if (errno == EXDEV) return Escape(rel);
  if (errno != ENOENT || !create) return Error::FromErrno(errno, "cannot open directory " + rel);
  // Walk down from the root, creating what is missing.
  std::vector<std::string> parts = SplitRel(rel);
  UniqueFd parent(OpenBeneath("", O_PATH | O_DIRECTORY));
  if (!parent.valid()) return Error::FromErrno(errno, "cannot open the workspace");
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string prefix = JoinRel(parts, 0, i + 1);
    UniqueFd next(OpenBeneath(prefix, O_PATH | O_DIRECTORY));
    if (!next.valid()) {
      if (errno == EXDEV) return Escape(prefix);
      if (errno != ENOENT) return Error::FromErrno(errno, "cannot open directory " + prefix);
      if (::mkdirat(parent.get(), parts[i].c_str(), 0777) != 0 && errno != EEXIST) {
        return Error::FromErrno(errno, "cannot create directory " + prefix);
      }
      if (created != nullptr) created->push_back(prefix);
      if (::geteuid() == 0) {
        struct stat st {};
        if (::fstat(parent.get(), &st) == 0) {
          (void)::fchownat(parent.get(), parts[i].c_str(), st.st_uid, st.st_gid,
                           AT_SYMLINK_NOFOLLOW);
        }
      }
      next.reset(OpenBeneath(prefix, O_PATH | O_DIRECTORY));
      if (!next.valid()) {
        if (errno == EXDEV) return Escape(prefix);
        return Error::FromErrno(errno, "cannot open directory " + prefix);
      }
    }
    parent = std::move(next);
  }
  return parent;
}

}  // namespace sandrun::patch

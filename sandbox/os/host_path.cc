#include "sandbox/os/host_path.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace sandrun {
namespace {

std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Error LinkRefused(const std::string& path) {
  Error e = Error::FromErrno(ELOOP, path + " has a symbolic link in it");
  e.message = path + " has a symbolic link in it (links are never followed here)";
  return e;
}

Error OpenError(int err, const std::string& path) {
  if (err == ELOOP) return LinkRefused(path);
  Error e = Error::FromErrno(err, "cannot open " + path);
  if (err == ENOENT) e.code = ErrorCode::kNotFound;
  return e;
}

PathIdentity IdentityOf(const struct stat& st) {
  return PathIdentity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

// One step of the walk: `name` in `dir_fd`, opened as itself (never its link target).
Result<UniqueFd> OpenComponent(int dir_fd, const std::string& name, const std::string& shown,
                               struct stat* st) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return OpenError(errno, shown);
  if (::fstat(fd.get(), st) != 0) return Error::FromErrno(errno, "cannot stat " + shown);
  if (S_ISLNK(st->st_mode)) return LinkRefused(shown);
  return fd;
}

// The walk from "/"; fills `ancestors` when given.
Result<UniqueFd> Walk(const std::string& path, std::vector<PathIdentity>* ancestors,
                      struct stat* last) {
  if (!IsNormalizedAbsolutePath(path)) {
    return Error(ErrorCode::kInvalidArgument,
                 "\"" + path + "\" is not an absolute path without \".\", \"..\" or \"//\"");
  }
  UniqueFd cur(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur.valid()) return Error::FromErrno(errno, "cannot open /");
  if (::fstat(cur.get(), last) != 0) return Error::FromErrno(errno, "cannot stat /");
  std::string shown;
  for (const std::string& name : Components(path)) {
    if (!S_ISDIR(last->st_mode)) return OpenError(ENOTDIR, shown);
    if (ancestors != nullptr) ancestors->push_back(IdentityOf(*last));
    shown += "/" + name;
    SANDRUN_ASSIGN_OR_RETURN(cur, OpenComponent(cur.get(), name, shown, last));
  }
  return cur;
}

long RawOpenat2(int dir_fd, const char* path, const struct open_how* how) {
  return ::syscall(SYS_openat2, dir_fd, path, how, sizeof(*how));
}

}  // namespace

bool HostPathInfo::IsDirectory() const { return S_ISDIR(mode); }
bool HostPathInfo::IsRegularFile() const { return S_ISREG(mode); }

bool IsNormalizedAbsolutePath(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  if (path == "/") return true;
  if (path.back() == '/') return false;
  for (const std::string& c : Components(path)) {
    if (c == "." || c == "..") return false;
  }
  return path.find("//") == std::string::npos;
}

std::string ProcFdPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

Result<UniqueFd> OpenNoSymlinks(const std::string& path) {
  struct stat st {};
  return Walk(path, nullptr, &st);
}

Result<HostPathInfo> InspectFd(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::FromErrno(errno, "cannot stat " + path);
  HostPathInfo info;
  info.path = path;
  info.id = IdentityOf(st);
  info.mode = st.st_mode;
  info.uid = st.st_uid;
  info.gid = st.st_gid;
  info.nlink = st.st_nlink;
  return info;
}

Result<HostPathInfo> InspectHostPath(const std::string& path, UniqueFd* pinned) {
  std::vector<PathIdentity> ancestors;
  struct stat st {};
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd fd, Walk(path, &ancestors, &st));
  SANDRUN_ASSIGN_OR_RETURN(HostPathInfo info, InspectFd(fd.get(), path));
  info.ancestors = std::move(ancestors);
  if (pinned != nullptr) *pinned = std::move(fd);
  return info;
}

Result<UniqueFd> OpenBeneath(int root_fd, const std::string& relative) {
  if (!relative.empty() && !IsNormalizedAbsolutePath("/" + relative)) {
    return Error(ErrorCode::kInvalidArgument, "\"" + relative + "\" is not a plain relative path");
  }
  const std::string rel = relative.empty() ? "." : relative;
  struct open_how how {};
  how.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS;
  long fd = RawOpenat2(root_fd, rel.c_str(), &how);
  if (fd >= 0) {
    UniqueFd out(static_cast<int>(fd));
    struct stat st {};
    if (::fstat(out.get(), &st) != 0) return Error::FromErrno(errno, "cannot stat " + rel);
    if (S_ISLNK(st.st_mode)) return LinkRefused(rel);
    return out;
  }
  if (errno != ENOSYS) return OpenError(errno, rel);
  // No openat2 (Linux < 5.6): the same rules, one component at a time.
  struct stat root_st {};
  if (::fstat(root_fd, &root_st) != 0) return Error::FromErrno(errno, "cannot stat the root");
  UniqueFd cur(::openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur.valid()) return Error::FromErrno(errno, "cannot reopen the root");
  std::string shown;
  for (const std::string& name : Components(relative)) {
    shown += (shown.empty() ? "" : "/") + name;
    struct stat st {};
    SANDRUN_ASSIGN_OR_RETURN(cur, OpenComponent(cur.get(), name, shown, &st));
    if (st.st_dev != root_st.st_dev) return OpenError(EXDEV, shown);
  }
  return cur;
}

Result<UniqueFd> MakeDirAt(int parent_fd, const std::string& name, unsigned mode) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument, "\"" + name + "\" is not a directory name");
  }
  if (::mkdirat(parent_fd, name.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
    return Error::FromErrno(errno, "cannot create directory " + name);
  }
  UniqueFd fd(::openat(parent_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return OpenError(errno, name);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno(errno, "cannot stat " + name);
  if (S_ISLNK(st.st_mode)) {
    return Error(ErrorCode::kConflict, name + " is a symbolic link, not a directory (refused)");
  }
  if (!S_ISDIR(st.st_mode)) return Error(ErrorCode::kConflict, name + " is not a directory");
  return fd;
}

Result<UniqueFd> MakeDirsNoSymlinks(const std::string& path, unsigned mode) {
  if (!IsNormalizedAbsolutePath(path)) {
    return Error(ErrorCode::kInvalidArgument, "\"" + path + "\" is not a normalized absolute path");
  }
  UniqueFd cur(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur.valid()) return Error::FromErrno(errno, "cannot open /");
  std::string shown;
  for (const std::string& name : Components(path)) {
    shown += "/" + name;
    auto next = MakeDirAt(cur.get(), name, mode);
    if (!next) return std::move(next).error().Wrap("creating " + shown);
    cur = std::move(next).value();
  }
  return cur;
}

}  // namespace sandrun

// Host paths resolved without following symbolic links: what the sandbox mounts is the object
// that was checked, never what a link planted in the path points to.
//
// Every function takes an absolute, normalized path ("/a/b", no "." or ".." components, no
// "//") and walks it one component at a time from "/" with O_PATH | O_NOFOLLOW, refusing any
// component that is a symbolic link (ELOOP). Mount points are crossed as usual.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(HostPathInfo info, InspectHostPath("/home/u/proj"));
//   if (info.IsDirectory()) ...            // info.id is the object's identity (st_dev, st_ino)
//   SANDRUN_ASSIGN_OR_RETURN(UniqueFd fd, OpenNoSymlinks("/home/u/proj"));  // pin it
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun {

// A file system object's identity: (st_dev, st_ino). {0, 0} means unknown.
struct PathIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;
  bool known() const { return dev != 0 || ino != 0; }
  friend bool operator==(const PathIdentity& a, const PathIdentity& b) {
    return a.dev == b.dev && a.ino == b.ino;
  }
};

// What a path names, read from the object itself (fstat of the pinned fd).
struct HostPathInfo {
  std::string path;  // the path as resolved (every component a real directory, no link)
  PathIdentity id;
  uint32_t mode = 0;  // st_mode: type and permission bits
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t nlink = 0;
  // The identities of "/", then each directory on the way down, excluding the object itself.
  std::vector<PathIdentity> ancestors;

  bool IsDirectory() const;
  bool IsRegularFile() const;
};

// Opens `path` (O_PATH | O_CLOEXEC | O_NOFOLLOW) following no symbolic link in any component.
// Errors: kInvalidArgument (not absolute/normalized), kNotFound (ENOENT), kSyscall with ELOOP
// ("... is a symbolic link") or the errno of the failing step.
Result<UniqueFd> OpenNoSymlinks(const std::string& path);

// OpenNoSymlinks plus the facts of the object and its ancestors. With `pinned`, the fd of the
// object is handed back too, so a caller can use exactly the object it checked.
Result<HostPathInfo> InspectHostPath(const std::string& path, UniqueFd* pinned = nullptr);

// The facts of an already opened object (`path` is recorded as given; no ancestors).
Result<HostPathInfo> InspectFd(int fd, const std::string& path);

// Opens `relative` ("a/b", no "." or ".." components) below the directory `root_fd` without
// leaving it: no symbolic link, no ".." and no other mount on the way (openat2 RESOLVE_BENEATH
// | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV, or an equivalent walk where openat2 is missing).
// "" opens the root itself again.
Result<UniqueFd> OpenBeneath(int root_fd, const std::string& relative);

// The directory `name` in `parent_fd`, created with `mode` if missing (mkdirat, never through a
// link): an O_PATH | O_DIRECTORY fd of it. An existing `name` that is a symbolic link or not a
// directory is refused (kConflict).
Result<UniqueFd> MakeDirAt(int parent_fd, const std::string& name, unsigned mode);

// Every missing component of `path` created with `mode` (MakeDirAt from "/"): the fd of the last.
Result<UniqueFd> MakeDirsNoSymlinks(const std::string& path, unsigned mode);

// "/proc/self/fd/N": the magic link through which system calls that take a path reach exactly
// the object the fd is open on.
std::string ProcFdPath(int fd);

// Whether `path` is absolute with no ".", ".." or empty components (trailing "/" not allowed
// except for "/" itself).
bool IsNormalizedAbsolutePath(const std::string& path);

}  // namespace sandrun

#include "sandbox/os/mounts.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "sandbox/os/file.h"
#include "sandbox/os/spawn.h"

namespace sandrun {
namespace {

// /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string oct = s.substr(i + 1, 3);
      if (oct.size() == 3 && oct.find_first_not_of("01234567") == std::string::npos) {
        out.push_back(static_cast<char>(std::stoi(oct, nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

Status VerifyFlags(int fd, bool read_only) {
  SANDRUN_ASSIGN_OR_RETURN(MountFlags flags, FdMountFlags(fd));
  if (!flags.nosuid || !flags.nodev || (read_only && !flags.read_only)) {
    return Error(ErrorCode::kInternal, std::string("the mount did not get its flags (nosuid ") +
                                           (flags.nosuid ? "on" : "off") + ", nodev " +
                                           (flags.nodev ? "on" : "off") + ", read-only " +
                                           (flags.read_only ? "on" : "off") + ")");
  }
  return Ok();
}

// `name` in `parent_fd` as itself (a link is refused, not followed). Opened after a mount, the
// lookup crosses into the mount now on it.
Result<UniqueFd> OpenTarget(int parent_fd, const std::string& name) {
  UniqueFd fd(::openat(parent_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return Error::FromErrno(errno, "cannot open the mount point " + name);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno(errno, "cannot stat " + name);
  if (S_ISLNK(st.st_mode)) return Error(ErrorCode::kConflict, name + " is a symbolic link");
  return fd;
}

// Detaches what was just mounted on `name` after a failed check.
void Undo(int parent_fd, const std::string& name) {
  if (auto top = OpenTarget(parent_fd, name); top) {
    (void)::umount2(ProcFdPath(top->get()).c_str(), MNT_DETACH);
  }
}

// Verifies the flags of the mount now on `name`; detaches it when they are wrong.
Status VerifyOnTop(int parent_fd, const std::string& name, bool read_only) {
  auto top = OpenTarget(parent_fd, name);
  Status verified = top ? VerifyFlags(top->get(), read_only) : Status(top.error());
  if (!verified) Undo(parent_fd, name);
  return verified;
}

// Bind, then remount with the flags: for kernels without the new mount API (before 5.12).
Status BindClassic(int source_fd, int parent_fd, const std::string& name, bool read_only) {
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd target, OpenTarget(parent_fd, name));
  if (::mount(ProcFdPath(source_fd).c_str(), ProcFdPath(target.get()).c_str(), nullptr, MS_BIND,
              nullptr) != 0) {
    return Error::FromErrno(errno, "bind mount");
  }
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd top, OpenTarget(parent_fd, name));
  const std::string path = ProcFdPath(top.get());
  unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (read_only ? MS_RDONLY : 0);
  if (::mount(nullptr, path.c_str(), nullptr, flags, nullptr) != 0 ||
      ::mount(nullptr, path.c_str(), nullptr, MS_PRIVATE, nullptr) != 0) {
    Error e = Error::FromErrno(errno, "remounting the bind nosuid,nodev");
    (void)::umount2(path.c_str(), MNT_DETACH);
    return e;
  }
  return Ok();
}

}  // namespace

Result<MountFlags> FdMountFlags(int fd) {
  struct statvfs st {};
  if (::fstatvfs(fd, &st) != 0) return Error::FromErrno(errno, "fstatvfs");
  MountFlags flags;
  flags.nosuid = (st.f_flag & ST_NOSUID) != 0;
  flags.nodev = (st.f_flag & ST_NODEV) != 0;
  flags.read_only = (st.f_flag & ST_RDONLY) != 0;
  return flags;
}

Result<bool> IsMountRoot(int fd) {
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) != 0) {
    return Error::FromErrno(errno, "statx");
  }
  if ((stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) == 0) {
    return Error(ErrorCode::kInternal, "statx does not report mount roots on this kernel");
  }
  return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

Status BindMountHardened(int source_fd, int parent_fd, const std::string& name, bool read_only,
                         bool flagged_first_only) {
  // A detached copy of the source's mount, flagged before it is attached anywhere: no moment
  // exists in which it is visible without nosuid,nodev.
  UniqueFd tree(::open_tree(source_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
  if (!tree.valid()) {
    if (errno != ENOSYS || flagged_first_only) return Error::FromErrno(errno, "open_tree");
    SANDRUN_RETURN_IF_ERROR(BindClassic(source_fd, parent_fd, name, read_only));
  } else {
    struct mount_attr attr {};
    attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (read_only ? MOUNT_ATTR_RDONLY : 0);
    attr.propagation = MS_PRIVATE;
    if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
      if (errno != ENOSYS || flagged_first_only) return Error::FromErrno(errno, "mount_setattr");
      SANDRUN_RETURN_IF_ERROR(BindClassic(source_fd, parent_fd, name, read_only));
    } else {
      SANDRUN_ASSIGN_OR_RETURN(UniqueFd target, OpenTarget(parent_fd, name));
      if (::move_mount(tree.get(), "", target.get(), "",
                       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
        return Error::FromErrno(errno, "move_mount");
      }
    }
  }
  return VerifyOnTop(parent_fd, name, read_only);
}

namespace {

void RemoveTreeAt(int parent, const char* name, int depth) {
  if (::unlinkat(parent, name, 0) == 0 || errno == ENOENT) return;
  if (depth > 32) return;
  const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  if (auto mounted = IsMountRoot(fd); !mounted || *mounted) {
    ::close(fd);
    return;
  }
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return;
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      names.emplace_back(e->d_name);
    }
  }
  for (const auto& n : names) RemoveTreeAt(::dirfd(d), n.c_str(), depth + 1);
  ::closedir(d);
  (void)::unlinkat(parent, name, AT_REMOVEDIR);
}

}  // namespace

void RemoveTreeNoFollow(int parent_fd, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) return;
  RemoveTreeAt(parent_fd, name.c_str(), 0);
}

Status DetachMount(const std::string& path) {
  if (::umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0 && errno != EINVAL &&
      errno != ENOENT) {
    return Error::FromErrno(errno, "cannot unmount " + path);
  }
  return Ok();
}

Status DetachMountFd(int fd) {
  if (::umount2(ProcFdPath(fd).c_str(), MNT_DETACH) != 0) {
    return Error::FromErrno(errno, "cannot unmount");
  }
  return Ok();
}

Result<std::vector<std::string>> MountPointsUnder(const std::string& dir) {
  SANDRUN_ASSIGN_OR_RETURN(std::string text, ReadFile("/proc/self/mountinfo", 64u << 20));
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    // "id parent major:minor root mount-point options ..."
    size_t pos = 0;
    for (int field = 0; field < 4 && pos != std::string::npos; ++field) {
      pos = line.find(' ', pos);
      if (pos != std::string::npos) ++pos;
    }
    if (pos == std::string::npos) continue;
    const std::string point = Unescape(line.substr(pos, line.find(' ', pos) - pos));
    if (point == dir || (point.size() > dir.size() && point.compare(0, dir.size(), dir) == 0 &&
                         (dir == "/" || point[dir.size()] == '/'))) {
      out.push_back(point);
    }
  }
  // Deepest first; a point mounted twice is listed twice (each detach removes one).
  std::stable_sort(out.begin(), out.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return out;
}

std::string FindMkfsExt4() {
  for (const char* path : {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

Status CreateExt4Image(const std::string& path, int64_t size_bytes, uint32_t uid, uint32_t gid) {
  const std::string mkfs = FindMkfsExt4();
  if (mkfs.empty()) {
    return Error(ErrorCode::kNotFound,
                 "mkfs.ext4 not found in /usr/sbin or /sbin (install e2fsprogs)");
  }
  {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) return Error::FromErrno(errno, "cannot create " + path);
    if (::ftruncate(fd.get(), size_bytes) != 0) {
      Error e = Error::FromErrno(errno, "cannot size " + path);
      ::unlink(path.c_str());
      return e;
    }
  }
  // -m 0: no blocks reserved for root (the sandbox user gets the whole limit); lazy init and
  // nodiscard keep the image sparse; -F: it is a file, not a block device.
  const std::string owner = "root_owner=" + std::to_string(uid) + ":" + std::to_string(gid) +
                            ",lazy_itable_init=1,lazy_journal_init=1,nodiscard";
  auto rc = RunToCompletion({mkfs, "-q", "-F", "-m", "0", "-E", owner, path},
                            RunOptions{/*stdout_to_stderr=*/true});
  if (!rc || *rc != 0) {
    ::unlink(path.c_str());
    if (!rc) return std::move(rc).error().Wrap("formatting " + path);
    return Error(ErrorCode::kInternal,
                 mkfs + " " + path + " failed with exit code " + std::to_string(*rc));
  }
  return Ok();
}

namespace {

struct LoopMatch {
  std::string path;  // /dev/loopN
  uint64_t rdev = 0;
};

// The attached loop device backed by the object of `image`, by identity.
LoopMatch FindLoopFor(const struct stat& image) {
  LoopMatch found;
  DIR* dir = ::opendir("/sys/block");
  if (dir == nullptr) return found;
  while (dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind("loop", 0) != 0) continue;
    // Only bound devices have a loop/ directory with a backing file.
    if (::access(("/sys/block/" + name + "/loop/backing_file").c_str(), F_OK) != 0) continue;
    UniqueFd dev(::open(("/dev/" + name).c_str(), O_RDONLY | O_CLOEXEC));
    if (!dev.valid()) continue;
    struct loop_info64 info {};
    if (::ioctl(dev.get(), LOOP_GET_STATUS64, &info) != 0) continue;
    if (info.lo_device != image.st_dev || info.lo_inode != image.st_ino) continue;
    struct stat st {};
    if (::fstat(dev.get(), &st) != 0) continue;
    found = LoopMatch{"/dev/" + name, static_cast<uint64_t>(st.st_rdev)};
    break;
  }
  ::closedir(dir);
  return found;
}

}  // namespace

uint64_t AttachedLoopDevice(int image_fd) {
  struct stat image {};
  if (::fstat(image_fd, &image) != 0) return 0;
  return FindLoopFor(image).rdev;
}

Result<LoopDevice> AttachLoopDevice(int image_fd) {
  struct stat image {};
  if (::fstat(image_fd, &image) != 0) return Error::FromErrno(errno, "cannot stat the image");
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (LoopMatch match = FindLoopFor(image); match.rdev != 0) {
      LoopDevice out;
      out.path = match.path;
      out.fd.reset(::open(out.path.c_str(), O_RDWR | O_CLOEXEC));
      struct loop_info64 info {};
      // Still the same image once we hold it open (it may have been detached meanwhile).
      if (out.fd.valid() && ::ioctl(out.fd.get(), LOOP_GET_STATUS64, &info) == 0 &&
          info.lo_device == image.st_dev && info.lo_inode == image.st_ino) {
        out.rdev = match.rdev;
        return out;
      }
      continue;
    }
    UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
    if (!control.valid()) return Error::FromErrno(errno, "cannot open /dev/loop-control");
    int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return Error::FromErrno(errno, "no free loop device");
    LoopDevice out;
    out.path = "/dev/loop" + std::to_string(n);
    out.fd.reset(::open(out.path.c_str(), O_RDWR | O_CLOEXEC));
    if (!out.fd.valid()) return Error::FromErrno(errno, "cannot open " + out.path);
    struct loop_config config {};
    config.fd = static_cast<uint32_t>(image_fd);
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (::ioctl(out.fd.get(), LOOP_CONFIGURE, &config) != 0) {
      if (errno == EBUSY) continue;  // another process took it first
      if (errno != EINVAL && errno != ENOTTY) return Error::FromErrno(errno, "LOOP_CONFIGURE");
      // Before Linux 5.8: set the fd, then the flags.
      if (::ioctl(out.fd.get(), LOOP_SET_FD, image_fd) != 0) {
        if (errno == EBUSY) continue;
        return Error::FromErrno(errno, "LOOP_SET_FD");
      }
      if (::ioctl(out.fd.get(), LOOP_SET_STATUS64, &config.info) != 0) {
        Error e = Error::FromErrno(errno, "LOOP_SET_STATUS64");
        (void)::ioctl(out.fd.get(), LOOP_CLR_FD, 0);
        return e;
      }
    }
    struct stat st {};
    if (::fstat(out.fd.get(), &st) != 0) return Error::FromErrno(errno, "cannot stat " + out.path);
    out.rdev = st.st_rdev;
    return out;
  }
  return Error(ErrorCode::kConflict, "could not get a loop device (too much contention)");
}

Status MountExt4(const std::string& device, int parent_fd, const std::string& name) {
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd target, OpenTarget(parent_fd, name));
  if (::mount(device.c_str(), ProcFdPath(target.get()).c_str(), "ext4",
              MS_NOSUID | MS_NODEV | MS_NOATIME, "discard,errors=remount-ro") != 0) {
    return Error::FromErrno(errno, "cannot mount " + device);
  }
  return VerifyOnTop(parent_fd, name, false);
}

}  // namespace sandrun

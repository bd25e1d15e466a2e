// Mount mechanics for host-backed sandbox mounts (needs CAP_SYS_ADMIN in the initial mount
// namespace, i.e. a root runner): fd-based bind mounts made nosuid,nodev (and read-only when
// asked), and a bounded ext4 image on a loop device.
//
// Everything takes fds opened without following links (host_path.h), so what gets mounted is the
// object that was checked, whatever happens to the path meanwhile.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(UniqueFd src, OpenNoSymlinks("/home/u/proj"));
//   SANDRUN_ASSIGN_OR_RETURN(UniqueFd dst, MakeDirAt(stage_fd, "0", 0700));
//   SANDRUN_RETURN_IF_ERROR(BindMountHardened(src.get(), stage_fd, "0", /*read_only=*/true));
//   ... hand <stage>/0 to the engine ...
//   (void)DetachMount(stage_path + "/0");
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/os/host_path.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun {

struct MountFlags {
  bool nosuid = false;
  bool nodev = false;
  bool read_only = false;
};

// The flags of the mount `fd` lies on (fstatvfs).
Result<MountFlags> FdMountFlags(int fd);

// Whether `fd` is the root of a mount (statx STATX_ATTR_MOUNT_ROOT).
Result<bool> IsMountRoot(int fd);

// Bind-mounts the object `source_fd` (O_PATH) onto `name` in the directory `parent_fd` (an empty
// directory, or a file for a file source; never followed if it is a link): not recursive (mounts
// below the source are not carried along), nosuid, nodev, read-only when `read_only`, private
// propagation. Uses open_tree + mount_setattr
// + move_mount (the tree gets its flags before it is attached anywhere), or bind + remount
// through /proc/self/fd where the new mount API is missing. The flags are verified afterwards;
// a mount that did not get them is detached again and the call fails. `flagged_first_only`:
// never the bind + remount (a mount on a shared mount propagates as it is attached, before the
// remount could flag it): without the new mount API the call fails.
Status BindMountHardened(int source_fd, int parent_fd, const std::string& name, bool read_only,
                         bool flagged_first_only = false);

// umount2(MNT_DETACH | UMOUNT_NOFOLLOW). A path that is not a mount point (EINVAL) or is gone
// (ENOENT) is not an error.
Status DetachMount(const std::string& path);

// Detaches the mount whose root `fd` is open on (umount2 through /proc/self/fd, MNT_DETACH).
Status DetachMountFd(int fd);

// Removes `name` in the directory `parent_fd` and everything below it, through descriptors:
// never following a link and never entering a directory that is the root of a mount (what is
// mounted there, a workspace for instance, is left alone, and so is the directory holding it).
// Best effort: what cannot be removed stays.
void RemoveTreeNoFollow(int parent_fd, const std::string& name);

// The mount points at or below `dir` in this mount namespace (from /proc/self/mountinfo),
// deepest first, so they can be detached in order.
Result<std::vector<std::string>> MountPointsUnder(const std::string& dir);

// ---- bounded images ----

// The mkfs.ext4 to use: /usr/sbin/mkfs.ext4 or /sbin/mkfs.ext4 (never a PATH search); "" if
// neither is there.
std::string FindMkfsExt4();

// Creates a sparse image of `size_bytes` at `path` (O_CREAT | O_EXCL | O_NOFOLLOW, 0600) and
// formats it ext4 without reserved blocks, its root directory owned by uid:gid. A failure
// removes the file again.
Status CreateExt4Image(const std::string& path, int64_t size_bytes, uint32_t uid, uint32_t gid);

// A loop device holding an image; `fd` keeps it attached while open.
struct LoopDevice {
  std::string path;  // /dev/loopN
  UniqueFd fd;
  uint64_t rdev = 0;  // the device number, as st_dev of files on a mount of it
};

// The loop device already backed by the image `image_fd` (same st_dev/st_ino), or a free one
// attached to it with LO_FLAGS_AUTOCLEAR (it detaches when its last user closes it, so an
// unmounted image leaves no device behind). Reusing an attached device means two mounts of one
// image share one file system instance, never two instances writing the same blocks.
Result<LoopDevice> AttachLoopDevice(int image_fd);

// The device number of the loop device backed by `image_fd`, or 0 when none is attached.
uint64_t AttachedLoopDevice(int image_fd);

// Mounts the ext4 file system on `device` onto the directory `name` in `parent_fd` with nosuid,
// nodev, noatime and discard (freed blocks are returned to the sparse image); verified after.
Status MountExt4(const std::string& device, int parent_fd, const std::string& name);

}  // namespace sandrun

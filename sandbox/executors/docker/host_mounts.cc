#include "sandbox/executors/docker/host_mounts.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include "sandbox/base/slug.h"
#include "sandbox/executors/docker/sandbox_registry.h"
#include "sandbox/os/file.h"
#include "sandbox/os/host_path.h"
#include "sandbox/os/mounts.h"

namespace sandrun::exec {
namespace {

std::optional<uint32_t> ParseId(const std::string& s) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  unsigned long long v = std::stoull(s);
  if (v > 0xfffffffeULL) return std::nullopt;
  return static_cast<uint32_t>(v);
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}
std::string Base(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string ImagesDir(const std::string& state_dir) { return state_dir + "/sandbox/scratch"; }
std::string StagingRoot(const std::string& state_dir) { return state_dir + "/sandbox/mnt"; }

Error Unavailable(std::string message) { return Error(ErrorCode::kConflict, std::move(message)); }

// The object at `path`, opened without links, and the very one the gate checked.
Result<UniqueFd> Pinned(const std::string& path, const PathIdentity& checked, const char* what) {
  auto fd = OpenNoSymlinks(path);
  if (!fd) return std::move(fd).error().Wrap(std::string("opening ") + what + " " + path);
  SANDRUN_ASSIGN_OR_RETURN(HostPathInfo info, InspectFd(fd->get(), path));
  if (checked.known() && !(info.id == checked)) {
    return Unavailable(std::string(what) + " " + path +
                       " changed after it was checked (it names another object now); no "
                       "container was created");
  }
  return std::move(fd).value();
}

// The mount of the scope's image at `name` in `root_fd`, mounting it first if needed.
Result<UniqueFd> MountScratchImage(const SandboxSpec& spec, int root_fd, const std::string& name,
                                   UniqueFd dir_fd, const UserIds& ids) {
  const std::string images = ImagesDir(spec.state_dir);
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd images_fd, MakeDirsNoSymlinks(images, 0700));
  const std::string hash = ScopeKeyHash(spec.scope_key);
  // One process at a time sets up a scope's image (a server and CLI calls may race).
  SANDRUN_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(images + "/" + hash + ".lock"));
  const std::string image = images + "/" + hash + ".img";
  UniqueFd image_fd(
      ::openat(images_fd.get(), (hash + ".img").c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
  if (!image_fd.valid()) {
    if (errno != ENOENT) return Error::FromErrno(errno, "cannot open " + image);
    SANDRUN_RETURN_IF_ERROR(CreateExt4Image(image, spec.scratch_limit_bytes, ids.uid.value_or(0),
                                            ids.gid.value_or(ids.uid.value_or(0))));
    image_fd.reset(
        ::openat(images_fd.get(), (hash + ".img").c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    if (!image_fd.valid()) return Error::FromErrno(errno, "cannot open " + image);
  }
  SANDRUN_ASSIGN_OR_RETURN(bool mounted, IsMountRoot(dir_fd.get()));
  if (mounted) {
    SANDRUN_ASSIGN_OR_RETURN(HostPathInfo info, InspectFd(dir_fd.get(), spec.workspace_host_dir));
    const uint64_t rdev = AttachedLoopDevice(image_fd.get());
    if (rdev == 0 || info.id.dev != rdev) {
      return Unavailable("something other than the scope's scratch image is mounted on " +
                         spec.workspace_host_dir);
    }
    return dir_fd;
  }
  SANDRUN_ASSIGN_OR_RETURN(LoopDevice loop, AttachLoopDevice(image_fd.get()));
  SANDRUN_RETURN_IF_ERROR(MountExt4(loop.path, root_fd, name));
  UniqueFd top(::openat(root_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!top.valid()) return Error::FromErrno(errno, "cannot open " + spec.workspace_host_dir);
  (void)::unlinkat(top.get(), "lost+found", AT_REMOVEDIR);  // the sandbox sees an empty dir
  SandboxRegistry registry(spec.state_dir);
  (void)registry.Update([&](RegistryState& state) {
    state.scratch_mounts[spec.workspace_host_dir] = spec.scope_key;
  });
  return top;
}

// Chowns root-owned entries below the directory `dir_fd` (depth-first, no link followed).
void ChownRootOwnedBelow(int dir_fd, uint64_t dev, uid_t uid, gid_t gid, int depth) {
  if (depth > 256) return;
  int copy = ::dup(dir_fd);
  if (copy < 0) return;
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    ::close(copy);
    return;
  }
  while (dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (st.st_uid == 0) (void)::fchownat(dir_fd, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW);
    if (!S_ISDIR(st.st_mode) || static_cast<uint64_t>(st.st_dev) != dev) continue;
    UniqueFd sub(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub.valid()) ChownRootOwnedBelow(sub.get(), dev, uid, gid, depth + 1);
  }
  ::closedir(dir);
}

}  // namespace

UserIds ParseUser(const std::string& user) {
  const size_t colon = user.find(':');
  UserIds ids;
  ids.uid = ParseId(user.substr(0, colon));
  if (colon != std::string::npos) ids.gid = ParseId(user.substr(colon + 1));
  return ids;
}

Status GiveScratchToSandboxUser(const SandboxSpec& spec) {
  const UserIds ids = ParseUser(spec.user);
  if (::geteuid() != 0 || !ids.uid.has_value() || *ids.uid == 0) return Ok();
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd path_fd, OpenNoSymlinks(spec.workspace_host_dir));
  UniqueFd dir(::openat(path_fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return Error::FromErrno(errno, "cannot open " + spec.workspace_host_dir);
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0) return Error::FromErrno(errno, "cannot stat the scratch dir");
  ChownRootOwnedBelow(dir.get(), static_cast<uint64_t>(st.st_dev), *ids.uid,
                      ids.gid.has_value() ? *ids.gid : static_cast<gid_t>(-1), 0);
  return Ok();
}

MountSupport DetectMountSupport(bool engine_is_local) {
  MountSupport s;
  if (!engine_is_local) {
    s.reason =
        "the engine is not local (DOCKER_HOST is not a unix socket): host paths are on its "
        "machine, where sandrun cannot make them nosuid,nodev";
  } else if (::geteuid() != 0) {
    s.reason = "the runner is not root (uid " + std::to_string(::geteuid()) +
               "): host-backed mounts cannot be bound nosuid,nodev";
  } else {
    s.staged = true;
  }
  if (!s.staged) {
    s.bound_note = "scratch workspaces are unbounded: " + s.reason;
  } else if (FindMkfsExt4().empty()) {
    s.bound_note = "scratch workspaces are unbounded: mkfs.ext4 is missing (install e2fsprogs)";
  } else if (::access("/dev/loop-control", R_OK | W_OK) != 0) {
    s.bound_note = "scratch workspaces are unbounded: /dev/loop-control is not available";
  } else {
    s.bounded = true;
  }
  return s;
}

bool UserMayBeRoot(const std::string& user) {
  UserIds ids = ParseUser(user);
  return !ids.uid.has_value() || *ids.uid == 0;
}

Result<UniqueFd> EnsureScratch(const SandboxSpec& spec, const MountSupport& support) {
  const std::string& dir = spec.workspace_host_dir;
  if (!IsNormalizedAbsolutePath(dir) || dir == "/") {
    return Error(ErrorCode::kInvalidArgument, "bad scratch dir \"" + dir + "\"");
  }
  const std::string name = Base(dir);
  auto root_fd = MakeDirsNoSymlinks(Parent(dir), 0700);
  if (!root_fd) return std::move(root_fd).error().Wrap("preparing the scratch root");
  auto made = MakeDirAt(root_fd->get(), name, 0700);
  if (!made) return std::move(made).error().Wrap("preparing the scratch dir " + dir);
  UniqueFd dir_fd = std::move(made).value();
  const UserIds ids = ParseUser(spec.user);
  if (spec.scratch_limit_bytes > 0 && support.bounded) {
    auto top = MountScratchImage(spec, root_fd->get(), name, std::move(dir_fd), ids);
    if (!top) return std::move(top).error().Wrap("mounting the scratch image for " + dir);
    dir_fd = std::move(top).value();
  }
  SANDRUN_ASSIGN_OR_RETURN(HostPathInfo info, InspectFd(dir_fd.get(), dir));
  if (ids.uid.has_value() && ::geteuid() == 0 &&
      (info.uid != *ids.uid || (ids.gid.has_value() && info.gid != *ids.gid))) {
    const gid_t gid = ids.gid.has_value() ? *ids.gid : static_cast<gid_t>(-1);
    if (::fchownat(dir_fd.get(), "", *ids.uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
      return Error::FromErrno(errno, "cannot give the scratch dir " + dir + " to " + spec.user);
    }
  }
  return dir_fd;
}

Status ReleaseScratch(const std::string& state_dir, const std::string& scope_key,
                      const std::string& scratch_dir) {
  SandboxRegistry registry(state_dir);
  auto forget = [&] {
    (void)registry.Update([&](RegistryState& s) { s.scratch_mounts.erase(scratch_dir); });
  };
  auto fd = OpenNoSymlinks(scratch_dir);
  if (!fd) {
    forget();
    return Ok();
  }
  auto mounted = IsMountRoot(fd->get());
  const std::string image = ImagesDir(state_dir) + "/" + ScopeKeyHash(scope_key) + ".img";
  UniqueFd image_fd(::open(image.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!mounted || !*mounted || !image_fd.valid()) {
    forget();
    return Ok();
  }
  SANDRUN_ASSIGN_OR_RETURN(HostPathInfo info, InspectFd(fd->get(), scratch_dir));
  const uint64_t rdev = AttachedLoopDevice(image_fd.get());
  if (rdev == 0 || info.id.dev != rdev) return Ok();  // not ours: left alone
  SANDRUN_RETURN_IF_ERROR(DetachMountFd(fd->get()));
  forget();
  return Ok();
}

Status DeleteScratch(const std::string& state_dir, const std::string& scope_key,
                     const std::string& scratch_dir) {
  SANDRUN_RETURN_IF_ERROR(ReleaseScratch(state_dir, scope_key, scratch_dir));
  if (auto fd = OpenNoSymlinks(scratch_dir); fd) {
    std::error_code ec;
    std::filesystem::remove_all(scratch_dir, ec);  // removes links, never follows them
    if (ec) return Error::FromErrno(ec.value(), "cannot remove the scratch dir " + scratch_dir);
  }
  // The image and the lock its creation is serialised by (nobody else uses a removed scope's).
  for (const char* suffix : {".img", ".lock"}) {
    const std::string file = ImagesDir(state_dir) + "/" + ScopeKeyHash(scope_key) + suffix;
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
      return Error::FromErrno(errno, "cannot remove the scratch image file " + file);
    }
  }
  return Ok();
}

Result<UniqueFd> WorkspaceSource(const SandboxSpec& spec, const MountSupport& support) {
  if (spec.scratch) return EnsureScratch(spec, support);
  if (spec.workspace_host_dir.empty()) return UniqueFd();
  return Pinned(spec.workspace_host_dir, spec.workspace_id, "the workspace");
}

namespace {

std::string PoolRoot(const std::string& state_dir) { return state_dir + "/pool"; }

bool IsSlotName(const std::string& name) {
  return !name.empty() && name.size() <= 64 &&
         name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// <state>/pool.lock: one process at a time binds <state>/pool (two binds would stack), adds a
// slot to it, or detaches it once its last slot is gone.
Result<FileLock> LockPool(const std::string& state_dir) {
  return FileLock::Acquire(state_dir + "/pool.lock");
}

// <state>/pool, bound onto itself nosuid,nodev,noexec and shared, opened (LockPool held).
Result<UniqueFd> SharedPoolRoot(const std::string& state_dir) {
  const std::string root = PoolRoot(state_dir);
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd dir, MakeDirsNoSymlinks(root, 0700));
  SANDRUN_ASSIGN_OR_RETURN(bool mounted, IsMountRoot(dir.get()));
  if (!mounted) {
    const std::string at = ProcFdPath(dir.get());
    if (::mount(at.c_str(), at.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return Error::FromErrno(errno, "cannot bind " + root + " onto itself");
    }
    SANDRUN_ASSIGN_OR_RETURN(dir, OpenNoSymlinks(root));
    const std::string top = ProcFdPath(dir.get());
    // Private first: a bind under a shared parent (a systemd host's /) joins the parent's peer
    // group, and every slot's mount would then propagate wherever / does. MS_SHARED below
    // makes it a peer group of its own.
    if (::mount(nullptr, top.c_str(), nullptr, MS_PRIVATE, nullptr) != 0) {
      Error e = Error::FromErrno(errno, "cannot make " + root + " private");
      (void)DetachMountFd(dir.get());
      return e;
    }
    if (::mount(nullptr, top.c_str(), nullptr,
                MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      Error e = Error::FromErrno(errno, "cannot flag " + root + " nosuid,nodev,noexec");
      (void)DetachMountFd(dir.get());
      return e;
    }
  }
  // Shared every time (idempotent): a slot's mounts must propagate to the containers.
  if (::mount(nullptr, ProcFdPath(dir.get()).c_str(), nullptr, MS_SHARED, nullptr) != 0) {
    return Error::FromErrno(errno, "cannot make " + root + " a shared mount");
  }
  return dir;
}

}  // namespace

std::string WorkspaceSlotPath(const std::string& state_dir, const std::string& name) {
  return PoolRoot(state_dir) + "/" + name;
}

Result<std::string> PrepareWorkspaceSlot(const std::string& state_dir, const std::string& name) {
  if (!IsSlotName(name)) return Error(ErrorCode::kInvalidArgument, "bad slot name " + name);
  SANDRUN_ASSIGN_OR_RETURN(FileLock lock, LockPool(state_dir));
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd root, SharedPoolRoot(state_dir));
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd slot, MakeDirAt(root.get(), name, 0700));
  return WorkspaceSlotPath(state_dir, name);
}

Status FillWorkspaceSlot(const std::string& state_dir, const std::string& name, int source_fd,
                         bool read_only) {
  if (!IsSlotName(name)) return Error(ErrorCode::kInvalidArgument, "bad slot name " + name);
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd root, OpenNoSymlinks(PoolRoot(state_dir)));
  SANDRUN_ASSIGN_OR_RETURN(bool mounted, IsMountRoot(root.get()));
  if (!mounted) return Unavailable("the warm pool's mount " + PoolRoot(state_dir) + " is gone");
  return BindMountHardened(source_fd, root.get(), name, read_only, /*flagged_first_only=*/true);
}

void RemoveWorkspaceSlot(const std::string& state_dir, const std::string& name) {
  if (!IsSlotName(name)) return;
  const std::string slot = WorkspaceSlotPath(state_dir, name);
  struct stat st {};
  if (::lstat(slot.c_str(), &st) != 0) return;  // most containers have none
  auto lock = LockPool(state_dir);
  if (!lock) return;
  // Stacked mounts (none are expected) come off one by one; UMOUNT_NOFOLLOW: a link is not
  // followed.
  for (int i = 0; i < 8 && DetachMount(slot) && ::rmdir(slot.c_str()) != 0 && errno == EBUSY; ++i) {
  }
  auto root = OpenNoSymlinks(PoolRoot(state_dir));
  if (!root) return;
  // What the engine made in it (mount points of its own): never through a link or a mount.
  RemoveTreeNoFollow(root->get(), name);
  // The last slot gone: <state>/pool comes off the host (the next pooled container binds it
  // again), so a state dir without pooled containers holds no mount.
  UniqueFd listing(::openat(root->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* dir = listing.valid() ? ::fdopendir(listing.get()) : nullptr;
  if (dir == nullptr) return;
  (void)listing.release();  // the DIR owns it
  bool empty = true;
  while (dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
      empty = false;
  }
  ::closedir(dir);
  if (auto mounted = IsMountRoot(root->get()); empty && mounted && *mounted) {
    (void)DetachMountFd(root->get());
  }
}

void SweepWorkspaceSlots(const std::string& state_dir, const std::vector<std::string>& live) {
  DIR* dir = ::opendir(PoolRoot(state_dir).c_str());
  if (dir == nullptr) return;
  std::vector<std::string> stale;
  while (dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (IsSlotName(name) && std::find(live.begin(), live.end(), name) == live.end()) {
      stale.push_back(name);
    }
  }
  ::closedir(dir);
  for (const std::string& name : stale) RemoveWorkspaceSlot(state_dir, name);
}

StagedMounts::StagedMounts(StagedMounts&& other) noexcept
    : stage_dir_(std::move(other.stage_dir_)),
      staged_(std::move(other.staged_)),
      mounts_(std::move(other.mounts_)) {
  other.stage_dir_.clear();
  other.staged_.clear();
}

StagedMounts::~StagedMounts() {
  if (stage_dir_.empty()) return;
  for (const std::string& name : staged_) {
    const std::string path = stage_dir_ + "/" + name;
    (void)DetachMount(path);
    if (::rmdir(path.c_str()) != 0) ::unlink(path.c_str());
  }
  ::rmdir(stage_dir_.c_str());
}

Result<StagedMounts> StagedMounts::Prepare(const SandboxSpec& spec, const MountSupport& support) {
  struct Source {
    UniqueFd fd;
    std::string host;
    std::string target;
    bool read_only = false;
    std::string propagation;
  };
  std::vector<Source> sources;
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd workspace, WorkspaceSource(spec, support));
  if (workspace.valid()) {
    sources.push_back(Source{std::move(workspace), spec.workspace_host_dir, spec.workdir,
                             !spec.scratch && spec.workspace_read_only, ""});
  }
  for (const HostMountSpec& bind : spec.binds) {
    SANDRUN_ASSIGN_OR_RETURN(UniqueFd fd, Pinned(bind.source, bind.id, "the bind source"));
    sources.push_back(
        Source{std::move(fd), bind.source, bind.target, bind.read_only, bind.propagation});
  }

  StagedMounts out;
  if (!support.staged) {
    if (UserMayBeRoot(spec.user) && !sources.empty()) {
      return Unavailable("the sandbox user \"" + spec.user +
                         "\" may be root, and host-backed mounts cannot be made nosuid,nodev "
                         "here (" +
                         support.reason + "); set sandbox.docker.user to a non-root uid:gid");
    }
    for (const Source& s : sources) {
      out.mounts_.push_back(docker::BindMount{s.host, s.target, s.read_only,
                                              s.propagation.empty() ? "rprivate" : s.propagation,
                                              /*non_recursive=*/true});
    }
    return out;
  }

  SweepStaleStaging(spec.state_dir);
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd base, MakeDirsNoSymlinks(StagingRoot(spec.state_dir), 0700));
  static std::atomic<uint64_t> counter{0};
  const auto ns = std::chrono::steady_clock::now().time_since_epoch().count();
  const std::string run = std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
                          std::to_string(static_cast<uint64_t>(ns) & 0xffffffu);
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd stage, MakeDirAt(base.get(), run, 0700));
  out.stage_dir_ = StagingRoot(spec.state_dir) + "/" + run;
  for (size_t i = 0; i < sources.size(); ++i) {
    Source& s = sources[i];
    const std::string name = std::to_string(i);
    SANDRUN_ASSIGN_OR_RETURN(HostPathInfo info, InspectFd(s.fd.get(), s.host));
    if (info.IsDirectory()) {
      SANDRUN_ASSIGN_OR_RETURN(UniqueFd made, MakeDirAt(stage.get(), name, 0700));
    } else {
      UniqueFd file(::openat(stage.get(), name.c_str(),
                             O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!file.valid()) return Error::FromErrno(errno, "cannot create the staging file");
    }
    out.staged_.push_back(name);
    auto bound = BindMountHardened(s.fd.get(), stage.get(), name, s.read_only);
    if (!bound) return std::move(bound).error().Wrap("binding " + s.host + " nosuid,nodev");
    // Not read-only towards the engine: the runtime would remount and drop nosuid,nodev.
    out.mounts_.push_back(docker::BindMount{out.stage_dir_ + "/" + name, s.target, false,
                                            "rprivate", /*non_recursive=*/true});
  }
  return out;
}

void SweepStaleStaging(const std::string& state_dir) {
  const std::string root = StagingRoot(state_dir);
  DIR* dir = ::opendir(root.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> stale;
  while (dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    const size_t dash = name.find('-');
    if (dash == std::string::npos || dash == 0) continue;
    const std::string pid = name.substr(0, dash);
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9) continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) == 0 || errno != ESRCH) continue;
    stale.push_back(root + "/" + name);
  }
  ::closedir(dir);
  for (const std::string& path : stale) {
    if (auto points = MountPointsUnder(path); points) {
      for (const std::string& point : *points) (void)DetachMount(point);
    }
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n == "." || n == "..") continue;
        const std::string p = path + "/" + n;
        if (::rmdir(p.c_str()) != 0) ::unlink(p.c_str());
      }
      ::closedir(d);
    }
    ::rmdir(path.c_str());
  }
}

}  // namespace sandrun::exec

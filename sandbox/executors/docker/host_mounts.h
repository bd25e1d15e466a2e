// How host-backed sandbox mounts (the workspace, the scope's scratch dir, sandbox.docker.binds)
// reach a container, and the scope's bounded scratch space.
//
// Staged (a root runner with a local engine): each source is opened without following links,
// compared by identity with what the gate checked, and bind-mounted nosuid,nodev (read-only when
// asked) at <state>/sandbox/mnt/<pid>-<n>/<i>; the engine binds that staging path, so the
// container's mount inherits the flags (a bind keeps its source mount's flags unless the runtime
// remounts it, which it does only for "ro": read-only is therefore set here, never asked of the
// engine). The staging mounts exist only while the container is created and started; the
// container keeps its own. Nothing is left mounted under mnt/ afterwards.
//
// Plain (a runner that is not root, or a remote engine): the engine binds the checked paths
// themselves; they cannot be made nosuid,nodev, so a sandbox user that may be root is refused
// (sandbox.docker.user "0"/"root"/a name), and doctor says so.
//
// Scratch (workspaceAccess none): <root>/<ScopeDirName> is created below its root with mkdirat
// and O_NOFOLLOW checks (a link planted there is refused, never followed) and owned by the
// sandbox user. With a limit and a root runner it is the mount point of the scope's ext4 image
// <state>/sandbox/scratch/<ScopeKeyHash>.img (sparse, created on first use, nosuid,nodev), which
// stays mounted on the host while the scope has a container (apply_patch edits it there) and is
// detached when the container is removed (prune, recreate).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/docker/models.h"
#include "sandbox/executors/plan.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::exec {

struct MountSupport {
  bool staged = false;     // mounts are bound nosuid,nodev through the staging dir
  bool bounded = false;    // scratch limits are enforced (root + mkfs.ext4 + loop devices)
  std::string reason;      // why not staged ("" when staged)
  std::string bound_note;  // why not bounded ("" when bounded)
};

// What this runner can do, from its uid, the engine's endpoint and the tools on the host.
MountSupport DetectMountSupport(bool engine_is_local);

// Whether `user` ("uid[:gid]" or a name) may be root in the container: uid 0, "root", or a name
// (which the image's passwd maps to a uid this side cannot see).
bool UserMayBeRoot(const std::string& user);

// A sandbox user "uid[:gid]" with numbers (each at most 4294967294); names stay unknown.
struct UserIds {
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
};
UserIds ParseUser(const std::string& user);

// The scope's scratch dir, ready for a container: created without following links, owned by the
// sandbox user, mounted from its image when bounded. Returns an O_PATH fd of it.
Result<UniqueFd> EnsureScratch(const SandboxSpec& spec, const MountSupport& support);

// Gives what the runner (root) created in the scope's scratch dir (apply_patch's files and
// directories) to the sandbox user, so the sandbox can change it: every entry owned by uid 0 is
// chowned to spec.user ("uid:gid"). An fd walk that follows no link and stays on the scratch's
// file system, so an entry the sandbox swaps for a link mid-walk is never followed.
Status GiveScratchToSandboxUser(const SandboxSpec& spec);

// Detaches the host-side mount of a scope's scratch image at `scratch_dir` (checked to be that
// image's mount first; anything else is left alone). Its contents stay in the image.
Status ReleaseScratch(const std::string& state_dir, const std::string& scope_key,
                      const std::string& scratch_dir);

// Deletes a scope's scratch data for good (exec --rm, sandbox prune --session): detaches its
// image (ReleaseScratch), then removes the scratch dir's tree (links are removed, never
// followed; only once no container of the scope runs) and the image file. A dir that is a link
// or missing is left alone.
Status DeleteScratch(const std::string& state_dir, const std::string& scope_key,
                     const std::string& scratch_dir);

// The object the scope's workspace mount shows: its scratch dir (EnsureScratch) or the real
// workspace as the gate checked it; an invalid fd when the spec has no workspace.
Result<UniqueFd> WorkspaceSource(const SandboxSpec& spec, const MountSupport& support);

// ---- the warm pool's workspace slots (warm_pool.h) ----
// A pooled container is created before its scope is known, with the empty directory
// <state>/pool/<name> bound at its workdir with rslave propagation. <state>/pool is bound onto
// itself nosuid,nodev,noexec and made shared, so the workspace the claim binds onto the slot
// later (flagged before it is attached: nosuid,nodev, read-only when asked) appears in the
// container at once, with those flags. `name` is the container's agent directory's name
// (agent_link.h), so the slot goes wherever the agent directory goes.
std::string WorkspaceSlotPath(const std::string& state_dir, const std::string& name);
// Creates the slot (and the shared mount of <state>/pool when it is not there). Needs a root
// runner and a local engine (MountSupport::staged).
Result<std::string> PrepareWorkspaceSlot(const std::string& state_dir, const std::string& name);
// Binds the object `source_fd` onto the slot; fails (binding nothing) without the new mount API.
Status FillWorkspaceSlot(const std::string& state_dir, const std::string& name, int source_fd,
                         bool read_only);
// Detaches what is mounted on the slot and removes it; a missing slot is not an error.
void RemoveWorkspaceSlot(const std::string& state_dir, const std::string& name);
// The slots whose name is not in `live`: removed.
void SweepWorkspaceSlots(const std::string& state_dir, const std::vector<std::string>& live);

// A container's host-backed mounts prepared for one create + start (see the file comment).
// Destroying it detaches and removes the staging mounts.
class StagedMounts {
 public:
  static Result<StagedMounts> Prepare(const SandboxSpec& spec, const MountSupport& support);
  StagedMounts(StagedMounts&& other) noexcept;
  StagedMounts& operator=(StagedMounts&&) = delete;
  StagedMounts(const StagedMounts&) = delete;
  StagedMounts& operator=(const StagedMounts&) = delete;
  ~StagedMounts();

  // HostConfig.Mounts for the create request.
  const std::vector<docker::BindMount>& mounts() const { return mounts_; }

 private:
  StagedMounts() = default;
  std::string stage_dir_;            // "" in plain mode
  std::vector<std::string> staged_;  // names below stage_dir_
  std::vector<docker::BindMount> mounts_;
};

// Staging dirs of runners that died mid-create (their pid is gone): detached and removed.
void SweepStaleStaging(const std::string& state_dir);

}  // namespace sandrun::exec

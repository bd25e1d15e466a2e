// The checks behind the sandbox's host-backed mounts (sandbox_spec.h): which host paths may
// never reach a sandbox, by their text and by the identity of what they resolve to.
//
// Each check returns nullopt when the path passes, else the end of a refusal sentence ("is
// inside the blocked host path \"/etc\""), to follow a subject such as `the source "/x" `.
#pragma once

#include <optional>
#include <string>

#include "runner/policy/gate_types.h"
#include "sandbox/executors/plan.h"

namespace sandrun::policy {

// By text: "/" itself, or inside or containing /etc /private/etc /proc /sys /dev /root /boot
// /run /var/run /private/var/run, or (with an absolute `home`) ~/.aws ~/.cargo ~/.config
// ~/.docker ~/.gnupg ~/.netrc ~/.npm ~/.ssh. `path` is absolute and normalized.
std::optional<std::string> BlockedPathReason(const std::string& path, const std::string& home);

// By identity: the object is one of the blocked paths above or lies below one as they really
// are on this host (links in the blocked paths followed: /var/run is /run), or is an ancestor of
// one. Catches what text cannot: another name for the same directory (a bind mount of /etc).
std::optional<std::string> BlockedIdentityReason(const HostPathInfo& info, const std::string& home,
                                                 const HostProbe& probe);

// By text: `path` is the state dir, inside it or contains it. A workspace strictly below
// <state>/sandboxes/ or <state>/tenants/<t>/workspaces/ is allowed (`workspace`); a bind never.
std::optional<std::string> StateDirReason(const std::string& path, const std::string& state_dir,
                                          bool workspace);
// The same by identity (the state dir as it really is, links followed).
std::optional<std::string> StateDirIdentityReason(const HostPathInfo& info,
                                                  const std::string& state_dir, bool workspace,
                                                  const HostProbe& probe);

// Whether the object is `root` (as it really is) or lies below it, by identity: the reason, or
// nullopt (also when `root` does not exist).
std::optional<std::string> InsideByIdentity(const HostPathInfo& info, const std::string& root,
                                            const HostProbe& probe);

// Bind sources must be directories or regular files with a single name: sockets and FIFOs are
// channels out of the sandbox (a Docker socket is control of the host), devices are devices, and
// a hard-linked file may be a blocked file under another name.
std::optional<std::string> SourceKindReason(const HostPathInfo& info);

// Validates one sandbox.docker.binds entry ("SRC:DST[:MODE]") by its text and returns it
// normalized (see sandbox_spec.h).
Result<std::string> ValidateBind(const std::string& bind, const std::string& home,
                                 const std::string& container_workdir);

// "SRC:DST[:MODE]" as ValidateBind returns it, as a mount (identity left unknown).
exec::HostMountSpec ParseValidatedBind(const std::string& validated);

}  // namespace sandrun::policy

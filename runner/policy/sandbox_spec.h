// The sandbox half of a plan (reference §2.2-§2.5, SPEC §1, §4 and §10): scope keys, the
// per-scope scratch workspace, the container spec with its security validation, whom the
// sandbox runs as, and the mapping of a call's workdir into the container.
//
// Host paths (the workspace, bind sources) are checked twice: by their text, and as the objects
// they resolve to with no symbolic link in any component (HostProbe), by identity against the
// blocked host paths. The spec records each checked object's identity; the executor mounts only
// that object (sandbox/executors/docker/host_mounts.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runner/config/settings.h"
#include "runner/policy/exec_request.h"
#include "runner/policy/gate_types.h"
#include "runner/policy/host_checks.h"
#include "sandbox/base/slug.h"
#include "sandbox/executors/plan.h"

namespace sandrun::policy {

// shared -> "shared"; session -> the session key (trimmed, "" = "main"); agent ->
// "agent:<agentId>" (trimmed, "" = "main"). BuildSandboxSpec refuses ids that are not valid
// (config/ids.h) before they get here, so nothing is ever trimmed into another caller's key.
// A hosted tenant's key is "<tenant>/" + that ("acme/agent:main"): two tenants' scopes (their
// containers, scratch dirs, scratch images) never meet, and tenant "" keeps today's keys.
std::string SandboxScopeKey(config::SandboxScope scope, const Caller& caller);

// Under sandbox.scope "session" the session key is the scope key, so it must not be one that
// another scope kind produces: "shared" or "agent:<agent id>" would name the shared or an
// agent's sandbox (its container, scratch dir and HOME). nullopt when the key is usable.
std::optional<Error> SessionScopeKeyError(const std::string& session_key);

// The caller's agent id, session key and (non-empty) tenant id checked against config/ids.h:
// nullopt when valid, else the "invalid-request" refusal.
std::optional<Error> ValidateCallerIds(const Caller& caller);

// Lexical POSIX normalization: collapses "//", "." and ".."; keeps a leading "/"; "" -> ".".
// No file system access, so symlinks are not resolved.
std::string NormalizePosixPath(std::string_view path);

// true when `path` equals `root` or lies under it (both normalized, absolute).
bool PathIsWithin(std::string_view path, std::string_view root);

// Where the Docker executor mounts its exec wrapper (sandbox/executors/docker/exec_wrapper.h):
// no bind, tmpfs or workdir may be there, or it would replace or cover the process every sandbox
// command runs under.
inline constexpr std::string_view kExecWrapperDir = "/.sandrun";

// The host side of the workspace mount for workspaceAccess none: <root>/<ScopeDirName(key)>,
// one directory per scope (shared included) that no other scope's key can name. `root` is
// sandbox.workspaceRoot or <state_dir>/sandboxes.
std::string ScratchWorkspaceDir(const std::string& root, config::SandboxScope scope,
                                const std::string& scope_key);

// The scratch dir of `scope_key` under the settings' scratch root (workspaceAccess none; ""
// with a real workspace): what `sandbox prune --session` deletes with the scope's container.
Result<std::string> ScopeScratchDir(const config::AgentSettings& settings,
                                    const std::string& state_dir, const std::string& home,
                                    const std::string& scope_key);

// ValidateBind (one sandbox.docker.binds entry by its text) is in host_checks.h: sources that
// are not absolute paths, "/", sources inside (or containing) /etc /private/etc /proc /sys /dev
// /root /boot /run /var/run /private/var/run or ~/.aws ~/.cargo ~/.config ~/.docker ~/.gnupg
// ~/.netrc ~/.npm ~/.ssh, Docker and other runtime sockets, targets that are not absolute or
// sit on /workspace, /agent or the container workdir, unknown mode options, and the options the
// hardened mounts cannot honour (propagation other than private/rprivate, z/Z relabeling).

// Refuses network "host" / "container:*" and "unconfined" seccomp/AppArmor profiles.
std::optional<Error> ValidateDockerSecurity(const config::DockerSettings& docker);

// The built-in copy of profiles/containers/default.json's Tmpfs options.
const std::map<std::string, std::string>& DefaultTmpfsOptions();

// Whom the sandbox runs as: sandbox.docker.user if set, else owner_uid:owner_gid unless that is
// root (or unknown), else 65534:65534.
std::string SandboxUser(const config::DockerSettings& docker, int64_t owner_uid, int64_t owner_gid);

// The real probes: InspectHostPath, realpath + InspectHostPath, OpenBeneath, geteuid/getegid.
HostProbe DefaultHostProbe();

// Builds the container spec from the settings and the caller's facts (ctx.settings must be
// set). Fails closed (invalid-config) on unsafe settings or a missing seccomp profile, and
// (invalid-request) on an invalid agent id or session key. With workspaceAccess ro/rw the
// workspace must resolve (no link in any component) to a directory that is not "/", not a
// blocked host path (inside or containing one, by text and by identity), not the state dir,
// inside it or containing it, except strictly below <state>/sandboxes/ or
// <state>/tenants/<t>/workspaces/. Bind sources get the same checks (no state dir exception),
// must not be sockets, devices or hard-linked files, and must not lie where the sandbox itself
// can write (the rw workspace, the scratch root). The sandbox user (spec.user) is
// sandbox.docker.user if set, else the workspace owner's uid:gid (the runner's for the scratch
// dir) unless that is root, else 65534:65534.
// The call's own choices (ExecRequest image, network, memory, cpus, pids, rm) are applied
// within sandbox.allow.* and refused (invalid-request, naming the key to change) beyond it:
// images and network modes the configured one or listed, limits up to the allow ceilings
// (unset: the configured docker value), network never host or container:*. With `rm` the scope
// is the call's own (<scope key>#rm-<ctx.call_id>: '#' is in no id or key, so no caller's
// scope is ever named so) and spec.remove_after is set.
// HOME is not the workspace: kSandboxHome, a tmpfs owned by the sandbox user (mode 0700).
Result<exec::SandboxSpec> BuildSandboxSpec(const GateContext& ctx,
                                           const ExecRequest& request = ExecRequest{});

// The sandbox's HOME: a per-container tmpfs (caches and shell history stay out of the workspace).
inline constexpr std::string_view kSandboxHome = "/home/sandrun";

// Where a sandboxed command runs (reference §2.5).
struct SandboxWorkdir {
  std::string container_dir;           // the exec's WorkingDir
  std::string host_dir;                // the same directory on the host
  std::optional<std::string> warning;  // `Warning: workdir "<x>" is unavailable; using "<c>".`
};
// Whether `relative` is a directory below the mount's host dir `root` (HostProbe::dir_beneath).
using DirBeneathFn = std::function<bool(const std::string& root, const std::string& relative)>;
// Absent workdir: the container workdir. A relative one is taken relative to the container
// workdir; an absolute one must be the container workdir or under it, or the mount's host dir
// or under it. The directory must be reachable below the mount's host dir without following a
// link (one the container planted could point anywhere on the host) and without crossing into
// another mount (the container does not see those), else the warning, which names container
// paths only, and the container workdir. The mount root itself is not probed (the executor
// creates the scratch dir).
SandboxWorkdir MapSandboxWorkdir(const std::optional<std::string>& requested,
                                 const std::string& container_workdir, const std::string& host_dir,
                                 const DirBeneathFn& dir_beneath);

}  // namespace sandrun::policy

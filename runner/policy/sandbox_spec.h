// The sandbox half of a plan (reference §2.2-§2.5, SPEC §1 and §4): scope keys and slugs, the
// per-scope scratch workspace, the container spec with its security validation, and the
// mapping of a call's workdir into the container.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runner/config/settings.h"
#include "runner/policy/exec_request.h"
#include "runner/policy/gate_types.h"
#include "sandbox/executors/plan.h"

namespace sandrun::policy {

// shared -> "shared"; session -> the session key (trimmed, "" = "main"); agent ->
// "agent:<agentId>" (trimmed, "" = "main").
std::string SandboxScopeKey(config::SandboxScope scope, const Caller& caller);

// OpenClaw's slugifySessionKey: lowercase, runs of [^a-z0-9._-] -> '-', '-' trimmed at both
// ends, the first 32 chars (or "session" when nothing is left), then '-' and the first 8 hex
// chars of sha256(trimmed key) ("" hashes as "session").
std::string SlugifyScopeKey(std::string_view key);

// Lexical POSIX normalization: collapses "//", "." and ".."; keeps a leading "/"; "" -> ".".
// No file system access, so symlinks are not resolved.
std::string NormalizePosixPath(std::string_view path);

// true when `path` equals `root` or lies under it (both normalized, absolute).
bool PathIsWithin(std::string_view path, std::string_view root);

// The host side of the workspace mount for workspaceAccess none: <root>/<slug>, or the root
// itself for scope shared. `root` is sandbox.workspaceRoot or <state_dir>/sandboxes.
std::string ScratchWorkspaceDir(const std::string& root, config::SandboxScope scope,
                                const std::string& scope_key);

// Validates one sandbox.docker.binds entry ("SRC:DST[:MODE]") and returns it normalized
// (`~` in SRC expanded against `home`). Refused (invalid-config): sources that are not absolute
// paths, "/", sources inside (or containing) /etc /private/etc /proc /sys /dev /root /boot /run
// /var/run /private/var/run or ~/.aws ~/.cargo ~/.config ~/.docker ~/.gnupg ~/.netrc ~/.npm
// ~/.ssh, Docker sockets, targets that are not absolute or sit on /workspace, /agent or the
// container workdir, unknown mode options.
GateResult<std::string> ValidateBind(const std::string& bind, const std::string& home,
                                     const std::string& container_workdir);

// Refuses network "host" / "container:*" and "unconfined" seccomp/AppArmor profiles.
std::optional<GateError> ValidateDockerSecurity(const config::DockerSettings& docker);

// The built-in copy of profiles/containers/default.json's Tmpfs options.
const std::map<std::string, std::string>& DefaultTmpfsOptions();

// Builds the container spec from the settings and the caller's facts (ctx.settings must be
// set). Fails closed (invalid-config) on unsafe settings or a missing seccomp profile.
GateResult<exec::SandboxSpec> BuildSandboxSpec(const GateContext& ctx);

// Where a sandboxed command runs (reference §2.5).
struct SandboxWorkdir {
  std::string container_dir;           // the exec's WorkingDir
  std::string host_dir;                // the same directory on the host
  std::optional<std::string> warning;  // `Warning: workdir "<x>" is unavailable; using "<h>".`
};
// Absent workdir: the container workdir. A relative one is taken relative to the container
// workdir; an absolute one must be the container workdir or under it, or the mount's host dir
// or under it. The host directory must exist (`dir_exists`) and stay inside the mount, else the
// warning and the container workdir. The mount root itself is not probed (the executor creates
// the scratch dir).
SandboxWorkdir MapSandboxWorkdir(const std::optional<std::string>& requested,
                                 const std::string& container_workdir, const std::string& host_dir,
                                 const DirExistsFn& dir_exists);

}  // namespace sandrun::policy

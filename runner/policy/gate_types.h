// Value types shared by the gate's parts: the facts the caller gathers for the gate
// (GateContext) and its probes. Refusals are sandrun::Error values with a wire code.
//
// The gate is pure policy: it never touches the file system, the network or the environment
// itself. Whatever it needs to know about the world comes in through GateContext, including
// two small injectable probes (DirExists, IsExecutable) so tests stay hermetic.
//
// Pattern of use:
//   Result<Foo> r = Something(...);
//   if (!r) return r.error();          // Error::Refusal(wire code, message)
//   Use(r.value());
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "runner/config/settings.h"
#include "runner/policy/exec_request.h"
#include "sandbox/os/host_path.h"

namespace sandrun::policy {

// Why the gate refused a call: an Error (sandbox/base/result.h) of code kRefused whose `wire` is
// the machine-readable code of the tool-call error object ({"error":{"code","message"}}, SPEC
// §2.1; HACKING.md lists them all); `message` is OpenClaw's text where one exists. Codes:
//   invalid-request       empty/oversized command, NUL in the command, bad per-call enum
//   invalid-host          unknown per-call host value
//   host-not-allowed      per-call host that may not override the configured one
//   sandbox-unavailable   host=sandbox without a sandbox runtime for this session (fail closed)
//   elevated-unavailable  elevated requested but tools.elevated gates say no
//   approve-command       the command contains an `/approve <id> <decision>` command
//   security-violation    a refused env override (PATH, LD_*, ...), NUL value or invalid key
//   denied                security=deny configured explicitly (any host)
//   node-unavailable      host=node (no node hosts exist yet)
//   node-not-allowed      per-call node differs from tools.exec.node
//   approval-required     an approval was needed and none can be given (no server to ask an
//                         operator, and askFallback did not approve)
//   invalid-config        the settings themselves are unusable (bad bind, host network, ...)
// Build one with Error::Refusal("denied", "..."); read the code with WireCode().

// true when `path` is an existing directory (follows symlinks).
using DirExistsFn = std::function<bool(const std::string& path)>;
// true when `path` is an executable regular file.
using IsExecutableFn = std::function<bool(const std::string& path)>;

// What the sandbox spec needs to know about host paths (sandbox_spec.h). Each empty member means
// the real probe (DefaultHostProbe()); tests inject fakes.
struct HostProbe {
  // The object at `path`, no symbolic link followed in any component (InspectHostPath).
  std::function<Result<HostPathInfo>(const std::string& path)> inspect;
  // The object `path` names with links followed (realpath, then inspect): where a blocked path
  // such as /var/run really is.
  std::function<Result<HostPathInfo>(const std::string& path)> inspect_real;
  // Whether `relative` is a directory below `root` reached without a link, ".." or another mount.
  std::function<bool(const std::string& root, const std::string& relative)> dir_beneath;
  int64_t uid = -1;  // the runner's effective uid / gid; -1: geteuid() / getegid()
  int64_t gid = -1;
};

// stat()-based probes for production callers. The gate calls these only when the context leaves
// the corresponding function empty.
bool StatDirExists(const std::string& path);
bool StatIsExecutable(const std::string& path);

// Facts the gate needs, gathered by the caller for BuildPlan() (Decide() takes the settings,
// request and caller directly).
struct GateContext {
  const config::AgentSettings* settings = nullptr;
  Caller caller;
  std::string state_dir;      // $SANDRUN_HOME (absolute)
  std::string instance_id;    // $SANDRUN_HOME/instance-id
  std::string workspace_dir;  // the agent's real workspace (absolute)
  std::string cwd;            // the runner's own cwd: gateway workdir fallback after the workspace
  // The runner's own environment: the base of the gateway child env, $SHELL, $HOME, $PATH.
  std::map<std::string, std::string> host_env;
  // The login shell's PATH (merged probe result); "" when off or unavailable. Only read for
  // gateway plans: probe only when NeedsLoginPath(decision) says so.
  std::string login_path;
  // Compact JSON of profiles/seccomp/<sandbox.docker.seccompProfile>.json; required for sandbox
  // plans (the gate fails closed without it). Only read when NeedsSeccompProfile(decision).
  std::string seccomp_profile_json;
  // Tmpfs mount point -> options (profiles/containers/<preset>.json "Tmpfs"). Empty: the gate's
  // built-in copy of profiles/containers/default.json.
  std::map<std::string, std::string> tmpfs_options;
  DirExistsFn dir_exists;        // empty: StatDirExists
  IsExecutableFn is_executable;  // empty: StatIsExecutable
  HostProbe host_probe;          // sandbox plans: the workspace, binds and workdir on the host
  // tenants.<id>.quotas.maxContainers of a hosted tenant (0: no limit; ignored for tenant ""):
  // carried in the sandbox spec to the container pool, which alone knows a call needs a new one.
  int64_t max_containers = 0;
  // A fresh id the loader draws for each call: names the call's own scope when it asks for
  // `rm` (empty, e.g. in `policy check`: "call").
  std::string call_id;
};

}  // namespace sandrun::policy

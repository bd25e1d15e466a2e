// The finished decision the gate hands an executor: where to run, what, with which environment,
// directory and limits. Executors know nothing of policy; everything they need is here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/os/host_path.h"

namespace sandrun::exec {

enum class Target { kSandbox, kGateway };

// A host path mounted into the sandbox (the workspace or a sandbox.docker.binds entry) as the
// gate checked it. The executor mounts only the object with this identity, reached without
// following any link; if the path names anything else by then, nothing is created.
struct HostMountSpec {
  std::string source;  // host path, no symbolic link in any component
  std::string target;  // container path
  bool read_only = false;
  PathIdentity id;          // (st_dev, st_ino) when the gate checked it
  std::string propagation;  // "" | "private" | "rprivate"
};

// sandbox.pool (warm_pool.h): how many started containers a long-running runner keeps waiting
// for new scopes of one kind. max(min, max) == 0: no pool.
struct PoolSettings {
  int64_t min = 0;                      // always kept ready once the kind was asked for
  int64_t max = 0;                      // kept ready under demand (claims within idle_ttl_ms)
  int64_t idle_ttl_ms = 5 * 60 * 1000;  // a ready container above min waits this long at most
  bool enabled() const { return min > 0 || max > 0; }
};

// Everything the Docker executor needs to find or create the scope's container.
struct SandboxSpec {
  std::string instance_id;  // $SANDRUN_HOME/instance-id: state dirs never share containers
  std::string scope_key;    // "agent:main", a session key, or "shared" ("acme/..." for a tenant)
  // The hosted tenant ("" = the local server's own): its id is on the container's label and in
  // its name. max_containers: the tenant's quota of this instance's containers (0: no limit); a
  // call that needs a new container beyond it is refused (quota-exceeded).
  std::string tenant;
  int64_t max_containers = 0;
  std::string image;
  std::string container_prefix = "sandrun-sbx-";
  std::string workdir = "/workspace";  // container side of the workspace mount
  std::string workspace_host_dir;      // host side (scratch dir or real workspace)
  bool workspace_read_only = false;
  PathIdentity workspace_id;  // the real workspace as the gate checked it (unknown: scratch)
  // workspaceAccess none: workspace_host_dir is the scope's scratch dir, created by the executor
  // (never through a link), bounded by scratch_limit_bytes (0: unbounded) where it can be.
  bool scratch = false;
  int64_t scratch_limit_bytes = 0;
  bool read_only_root = true;
  std::vector<std::string> tmpfs;                    // mount points
  std::map<std::string, std::string> tmpfs_options;  // mount point -> options (from the preset)
  std::string network = "none";
  std::vector<std::string> cap_drop;  // capability names ("ALL")
  // The syscall filter every process of the container runs under: the profile's name (the stem
  // of profiles/seccomp/<name>.json, for messages) and its compact JSON as the gate loaded it.
  // An empty JSON is never "no filter": the executor refuses to create the container.
  std::string seccomp_profile_name;
  std::string seccomp_profile_json;
  bool no_new_privileges = true;  // setuid files and file capabilities grant nothing
  std::string apparmor_profile;   // "" = the engine's default
  std::map<std::string, std::string> container_env;  // the container's own env
  // "uid:gid" (or sandbox.docker.user as configured): whom the sandbox's commands run as.
  std::string user;
  std::string setup_command;
  int64_t pids_limit = 0;
  int64_t memory_bytes = 0;
  int64_t memory_swap_bytes = 0;
  int64_t nano_cpus = 0;
  bool init = true;
  std::vector<HostMountSpec> binds;  // sandbox.docker.binds, checked by the gate
  double prune_idle_hours = 24;
  double prune_max_age_days = 7;
  std::string state_dir;  // for sandbox/containers.json
  // The call's own scope (exec --rm): the executor removes the container, its scratch mount,
  // image and directory when the call ends.
  bool remove_after = false;
  // sandbox.docker.execAgent: commands go through the in-container agent where it can run
  // (agent_link.h); false: always the Engine API exec.
  bool exec_agent = true;
  PoolSettings pool;  // sandbox.pool: not part of a container's identity or hashes
};

struct Plan {
  Target target = Target::kSandbox;
  std::string command;  // the shell text to run (already rewritten by the gate if needed)
  // Gateway: the full environment of the child. Sandbox: the exec's extra env (K=V), without PATH.
  std::map<std::string, std::string> env;
  // Sandbox: the PATH entries to put first, carried in SANDRUN_PREPEND_PATH (never pasted into
  // the script text). Empty: no prefix.
  std::string prepend_path;
  std::string cwd;         // gateway: host directory; sandbox: container directory
  std::string shell;       // gateway: the shell binary (argv = shell -c command)
  int64_t timeout_ms = 0;  // 0 = none
  int64_t kill_grace_ms = 3000;
  bool pty = false;
  unsigned pty_rows = 30;
  unsigned pty_cols = 120;
  std::string term = "xterm-256color";
  size_t max_output_chars = 200000;
  std::vector<std::string> warnings;     // shown before the output (OpenClaw's Warning: lines)
  SandboxSpec sandbox;                   // Target::kSandbox only
  std::string host_profile = "default";  // gateway hardening profile name (issue: hardening)
  // Gateway: who a root runner's command runs as (tools.exec.hostUser; "" = "nobody") unless
  // the profile keeps the runner's identity.
  std::string host_user;
};

}  // namespace sandrun::exec

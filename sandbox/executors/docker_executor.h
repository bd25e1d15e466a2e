// Runs plans in the scope's sandbox container through the Engine API: finds or creates the
// container (one per scope and instance, SPEC §4), runs `/bin/sh -lc PREFIX+command` as an exec,
// streams its output, enforces the timeout by killing the exec's process tree in the container.
// Fails closed: when the engine, the image or the container is unavailable, nothing runs.
//
// Pattern of use:
//   DockerExecutor executor(client);
//   SANDRUN_ASSIGN_OR_RETURN(ExecOutcome out, executor.Run(plan, live, &cancel));
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sandbox/docker/client.h"
#include "sandbox/executors/container_kill.h"
#include "sandbox/executors/executor.h"
#include "sandbox/executors/host_mounts.h"
#include "sandbox/executors/sandbox_registry.h"

namespace sandrun::exec {

inline constexpr char kSandboxLabel[] = "sandrun.sandbox";
inline constexpr char kInstanceLabel[] = "sandrun.instance";
inline constexpr char kScopeLabel[] = "sandrun.scope";
// ScopeKeyHash(scope key), all 64 digits: with the full key, the container's identity.
inline constexpr char kScopeHashLabel[] = "sandrun.scopeHash";
inline constexpr char kConfigHashLabel[] = "sandrun.configHash";
// ReachHash of the spec the container was created for.
inline constexpr char kReachHashLabel[] = "sandrun.reachHash";
// Which state dir owns the container (operators, and the test suite's leak check).
inline constexpr char kStateDirLabel[] = "sandrun.stateDir";
inline constexpr char kCreatedAtLabel[] = "sandrun.createdAtMs";
// The script prefix that puts SANDRUN_PREPEND_PATH first after the login profile reset PATH.
inline constexpr char kPathPrefix[] =
    "export PATH=\"${SANDRUN_PREPEND_PATH}:$PATH\"; unset SANDRUN_PREPEND_PATH; ";

// Container name for a scope: <prefix><instance8>-<slug>, at most 63 characters. The slug is
// for reading only: a container found by name is the scope's only if its labels carry the same
// instance id and scope key in full (two keys can share a slug).
std::string ContainerName(const SandboxSpec& spec);
// The name used when ContainerName is taken by another scope: <prefix><instance8>-<the scope's
// full hash>, cut to 63 characters (42 hex digits with the default prefix).
std::string CollisionFreeContainerName(const SandboxSpec& spec);
// Hash (sha256, 64 hex digits) of everything a container can reach: its mounts (host paths,
// their identities, access, targets), user, network, image, capabilities, security options,
// read-only root and tmpfs. A container is reused only by a call with the same hash; any
// difference gets the call a new container (the old one is removed, ending what ran in it).
std::string ReachHash(const SandboxSpec& spec);
// Hash of everything that shapes the container; a change means the container is recreated
// (unless it is hot and only settings outside the reach changed: then warn).
std::string ConfigHash(const SandboxSpec& spec);
// The Engine API create request for the spec (labels included). `mounts` are the prepared
// host-backed mounts (host_mounts.h); none: the spec's own paths (for hashing).
docker::ContainerSpec BuildContainerSpec(const SandboxSpec& spec, int64_t created_at_ms,
                                         std::vector<docker::BindMount> mounts = {});

struct EnsuredContainer {
  std::string name;
  std::string id;
  bool created = false;
};

class DockerExecutor final : public Executor, public std::enable_shared_from_this<DockerExecutor> {
 public:
  explicit DockerExecutor(std::shared_ptr<docker::Client> client);

  Result<ExecOutcome> Run(const Plan& plan, const LiveSink& live,
                          const CancelToken* cancel) override;
  // In the background over a hijacked stream (stdin open, TTY when plan.pty). The process keeps
  // the executor alive when it is owned by a shared_ptr; otherwise it must outlive the process.
  Result<std::unique_ptr<RunningProcess>> Start(const Plan& plan, LiveSink sink) override;

  // Finds the scope's container, (re)creating and starting it as needed. A container is reused
  // only if it carries this instance id, the scope key and ReachHash in full and is running; a
  // stopped one is removed and created again, its mounts checked again, with a warning.
  // Warnings (e.g. a config change on a hot container) are appended to `warnings`.
  Result<EnsuredContainer> EnsureContainer(const SandboxSpec& spec,
                                           std::vector<std::string>* warnings);

  // Removes this instance's containers idle longer than idle_hours or older than max_age_days
  // (0 disables either), then detaches the host-side scratch mounts of scopes left without a
  // container. Returns the names removed.
  Result<std::vector<std::string>> Prune(const std::string& instance_id,
                                         const std::string& state_dir, double idle_hours,
                                         double max_age_days);
  // Detaches the host-side scratch mounts (host_mounts.h) of scopes of this instance that have
  // no container left.
  Status ReleaseIdleScratch(const std::string& instance_id, const std::string& state_dir);
  // Prune at most every 5 minutes (tracked in the registry); errors are ignored.
  void MaybePrune(const SandboxSpec& spec);

  struct CreatedExec {
    EnsuredContainer container;
    std::string exec_id;
    ExecTree tree;  // what finds the exec's processes in the container (container_kill.h)
  };
  // The outcome of an exec whose stream ended (or failed with `streamed`): kills the tree on a
  // timeout or cancellation, reads the exit code, fills the output fields.
  ExecOutcome Finish(const Plan& plan, const CreatedExec& exec, Status streamed,
                     OutputCollector& collector, const CancelToken* cancel,
                     Deadline::Clock::time_point started_at);

 private:
  static docker::ExecSpec ExecSpecFor(const Plan& plan, bool attach_stdin);
  // Ensures the container and creates the exec, recreating a wedged container once.
  Result<CreatedExec> CreateExecFor(const Plan& plan, const docker::ExecSpec& spec,
                                    std::vector<std::string>* warnings);
  Result<EnsuredContainer> CreateAndStart(const SandboxSpec& spec, const std::string& name);
  Status KillExecTree(const ExecTree& tree, int signal, int64_t grace_ms);

  // Ensures the container under one candidate name; `taken` is set (and nothing done) when the
  // name belongs to another scope.
  Result<EnsuredContainer> EnsureNamed(const SandboxSpec& spec, const std::string& name,
                                       std::vector<std::string>* warnings, bool* taken);

  std::shared_ptr<docker::Client> client_;
  MountSupport mount_support_;
  std::mutex ensure_mu_;                                             // guards ensure_locks_
  std::map<std::string, std::shared_ptr<std::mutex>> ensure_locks_;  // per container name
};

}  // namespace sandrun::exec

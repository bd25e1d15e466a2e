// The scope's sandbox containers (SPEC §4): one per scope and instance, found by name and
// labels, created and started with the spec's security options, mounts checked again on every
// (re)creation, reused only with the same reach, pruned when idle or old, and removed when left
// unhealthy (their pids limit exhausted). The exec path (docker_executor.h) asks it for a
// running container before every exec.
//
// Pattern of use:
//   ContainerPool pool(client);
//   SANDRUN_ASSIGN_OR_RETURN(EnsuredContainer c, pool.EnsureContainer(spec, &warnings));
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/docker/client.h"
#include "sandbox/executors/docker/agent_link.h"
#include "sandbox/executors/docker/exec_wrapper.h"
#include "sandbox/executors/docker/host_mounts.h"
#include "sandbox/executors/docker/sandbox_registry.h"
#include "sandbox/executors/docker/warm_pool.h"
#include "sandbox/executors/plan.h"

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
// The hosted tenant a container belongs to, on each of a hosted tenant's containers (none: the
// local server's, tenant ""): maxContainers counts by it, operators filter by it.
inline constexpr char kTenantLabel[] = "sandrun.tenant";
// A container made for the warm pool (warm_pool.h): the pool's key, and the process that made it
// ("<pid>:<nonce>"). Such a container has no scope label; its claim record (the registry) says
// whose it is once claimed.
inline constexpr char kPoolLabel[] = "sandrun.pool";
inline constexpr char kPoolOwnerLabel[] = "sandrun.poolOwner";

// Whose a sandbox container is, from its labels or, for a container taken from the warm pool,
// from its claim record: the one answer every identity check uses (reuse, removal, quotas,
// scratch, listings).
struct ContainerScope {
  std::string tenant;
  std::string scope_key;
  std::string reach_hash;
  std::string config_hash;  // "" when its labels have none
  bool pooled = false;      // taken from the warm pool
};
// nullopt: the container is no scope's (an unclaimed pool container, one whose scope hash label
// does not match its scope, or not a sandbox container).
std::optional<ContainerScope> ScopeOf(const std::string& id,
                                      const std::map<std::string, std::string>& labels,
                                      const RegistryState& registry);
// Whether it is a pool container no scope has claimed (not counted against any quota): pool
// labels, no claim record, and still its pool name (`name`, the engine's; a container that got
// a scope's name is never taken for unclaimed, even if its record were lost).
bool IsUnclaimedPoolContainer(const std::string& id, const std::string& name,
                              const std::map<std::string, std::string>& labels,
                              const RegistryState& registry);
// The name a pool container is made under: ...pool-<12 hex digits> (no scope's name ends so).
bool IsPoolName(const std::string& name);
// Whether the process that made a pool container (kPoolOwnerLabel) still runs.
bool PoolOwnerAlive(const std::map<std::string, std::string>& labels);

// Container name for a scope: <prefix><instance8>-<slug>, or <prefix><instance8>-<tenant>-<slug>
// for a hosted tenant (the slug of the key without its "<tenant>/"), at most 63 characters. The
// slug is for reading only: a container found by name is the scope's only if its labels carry
// the same instance id, tenant and scope key in full (two keys can share a slug).
std::string ContainerName(const SandboxSpec& spec);
// The name used when ContainerName is taken by another scope: <prefix><instance8>-[<tenant>-]<the
// scope's full hash>, cut to 63 characters (42 hex digits with the default prefix, no tenant).
std::string CollisionFreeContainerName(const SandboxSpec& spec);
// Hash (sha256, 64 hex digits) of everything a container can reach: its mounts (host paths,
// their identities, access, targets), user, network, image, capabilities, security options,
// read-only root and tmpfs. A container is reused only by a call with the same hash; any
// difference gets the call a new container (the old one is removed, ending what ran in it).
std::string ReachHash(const SandboxSpec& spec);
// Hash of everything that shapes the container; a change means the container is recreated
// (unless it is hot and only settings outside the reach changed: then warn). `exec_wrapper`:
// the container gets the exec wrapper (exec_wrapper.h), so containers without it are replaced.
// `exec_agent`: the container is meant to run the sandbox agent (agent_link.h).
std::string ConfigHash(const SandboxSpec& spec, bool exec_wrapper = false, bool exec_agent = false);
// The Engine API create request for the spec (labels included). `mounts` are the prepared
// host-backed mounts (host_mounts.h); none: the spec's own paths (for hashing).
// HostConfig.SecurityOpt for the spec: "no-new-privileges:true", the seccomp profile inline
// ("seccomp=<compact JSON>") and the AppArmor profile when one is named.
std::vector<std::string> SecurityOptions(const SandboxSpec& spec);
docker::ContainerSpec BuildContainerSpec(const SandboxSpec& spec, int64_t created_at_ms,
                                         std::vector<docker::BindMount> mounts = {});

struct EnsuredContainer {
  std::string name;
  std::string id;
  bool created = false;
  bool exec_wrapper = false;  // the exec wrapper is mounted at kExecWrapperPath (its label says)
  std::string agent_dir;      // the host directory of its agent ("": it has none, agent_link.h)
};

// `e` wrapped as "sandbox unavailable (<what>), nothing was run", its code kept.
Error SandboxUnavailable(Error e, const std::string& what);

class ContainerPool {
 public:
  // `exec_wrapper`: what FindExecWrapper finds for the client's engine when not given;
  // `agent_binary` likewise (FindAgentBinary).
  explicit ContainerPool(std::shared_ptr<docker::Client> client,
                         std::optional<ExecWrapper> exec_wrapper = std::nullopt,
                         std::optional<ExecWrapper> agent_binary = std::nullopt);

  // Finds the scope's container, (re)creating and starting it as needed. A container is reused
  // only if it carries this instance id, the tenant, the scope key and ReachHash in full and is
  // running; a stopped one is removed and created again, its mounts checked again, with a
  // warning. A scope without a container whose tenant already has spec.max_containers of this
  // instance's containers (by label) gets nothing created (wire code quota-exceeded).
  // Warnings (e.g. a config change on a hot container) are appended to `warnings`. A spec
  // without a seccomp profile's JSON is refused: no container runs without the filter.
  Result<EnsuredContainer> EnsureContainer(const SandboxSpec& spec,
                                           std::vector<std::string>* warnings);

  // Removes this instance's containers idle longer than idle_hours or older than max_age_days
  // (0 disables either), then detaches the host-side scratch mounts of scopes left without a
  // container. Returns the names removed.
  Result<std::vector<std::string>> Prune(const std::string& instance_id,
                                         const std::string& state_dir, double idle_hours,
                                         double max_age_days);
  // Removes a scope for good: this instance's containers of `tenant` whose scope is `scope_key`
  // (or, with `with_rm_scopes`, one of its `<scope_key>#rm-*` call scopes), then their scratch
  // data (DeleteScratch) when `scratch_dir` names it ("" with a real workspace). Returns the
  // names of the containers removed.
  Result<std::vector<std::string>> RemoveScope(const std::string& instance_id,
                                               const std::string& state_dir,
                                               const std::string& tenant,
                                               const std::string& scope_key,
                                               const std::string& scratch_dir, bool with_rm_scopes);
  // Detaches the host-side scratch mounts (host_mounts.h) of scopes of this instance that have
  // no container left, after removing the warm-pool containers of runners that died.
  Status ReleaseIdleScratch(const std::string& instance_id, const std::string& state_dir);
  // Prune at most every 5 minutes (tracked in the registry); errors are ignored.
  void MaybePrune(const SandboxSpec& spec);
  // Health after a long or killed run: removes the container (with a warning) when processes
  // left behind hold three quarters of its pids limit or more, so the next call gets a fresh one.
  void RemoveIfExhausted(const std::string& state_dir, const std::string& container,
                         std::vector<std::string>* warnings);
  // The exec wrapper this pool mounts into the containers it creates (unusable: none).
  const ExecWrapper& exec_wrapper() const { return exec_wrapper_; }
  // Why containers for `spec` get no agent ("" when they do: the fast path).
  std::string AgentReason(const SandboxSpec& spec) const;

  // Lets this pool keep warm pools (warm_pool.h) for specs with sandbox.pool set: only a
  // long-running runner, which drains them (DrainWarmPool) when it stops.
  void EnableWarmPool();
  void DrainWarmPool();
  // The config changed (SIGHUP): the ready containers go, the pools are made again as asked.
  void ResetWarmPool();
  // Why new scopes of `spec` would get no pooled container even in a runner that keeps warm
  // pools ("" when they can).
  std::string WarmPoolReason(const SandboxSpec& spec) const;
  // The warm pools now: kinds, ready containers, the last failure to make one (all empty
  // without them).
  WarmPool::Stats WarmPoolStats();

  // The container EnsureContainer found for this spec's scope (instance, tenant and key in
  // full) within the last 30 s, when it has an agent and the spec's reach and config hashes
  // are the ones it was found with: no engine call. Whoever uses it proves it is still there
  // by reaching its agent (the agent dies with the container; each container has its own agent
  // directory), and calls Forget when it cannot.
  std::optional<EnsuredContainer> Recent(const SandboxSpec& spec);
  void Forget(const SandboxSpec& spec);

 private:
  // With the agent when it can have one; a container whose agent does not come up is created
  // again without it, with a warning.
  Result<EnsuredContainer> CreateAndStart(const SandboxSpec& spec, const std::string& name,
                                          std::vector<std::string>* warnings);
  // kIo: the agent did not come up (nothing is left behind). `pool_key` set: a container for
  // that warm pool, `spec` being its scope-less spec (PoolSpecOf): no scope labels, an empty
  // workspace slot at the workdir, no setup command, no registry entry.
  Result<EnsuredContainer> CreateAndStartWith(const SandboxSpec& spec, const std::string& name,
                                              bool with_agent, bool agent_wanted,
                                              const std::string& pool_key = "");
  // The scope's container from its warm pool (container_claim.cc): nullopt when none is ready
  // or the claim did not complete (the pooled container is then removed and the caller creates
  // one as before, which checks everything again).
  std::optional<EnsuredContainer> Claim(const SandboxSpec& spec, const std::string& name);
  Result<PooledContainer> MakePooled(const SandboxSpec& pool_spec, const std::string& key);
  void RemovePooled(const std::string& state_dir, const std::string& id,
                    const std::string& agent_dir);
  // Pool containers of runners that died, removed once per state dir by this process.
  void SweepOrphanedPool(const SandboxSpec& spec);
  // Removes the pool containers of `containers` whose runner died before they were claimed or
  // before their claim completed (and drops them from the list).
  void SweepDeadRunners(const std::string& state_dir, const RegistryState& registry,
                        std::vector<docker::ContainerSummary>* containers);
  // Runs the spec's setup command in a new container; on failure removes it.
  Status RunSetup(const SandboxSpec& spec, const std::string& id);
  // Ensures the container under one candidate name; `taken` is set (and nothing done) when the
  // name belongs to another scope.
  Result<EnsuredContainer> EnsureNamed(const SandboxSpec& spec, const std::string& name,
                                       std::vector<std::string>* warnings, bool* taken);

  // The tenant's quota before a new container is created: the count and the creation under one
  // lock per tenant, so parallel calls of one tenant cannot both take the last slot.
  Result<EnsuredContainer> CreateWithinQuota(const SandboxSpec& spec, const std::string& name,
                                             std::vector<std::string>* warnings);

  std::shared_ptr<docker::Client> client_;
  MountSupport mount_support_;
  ExecWrapper exec_wrapper_;
  ExecWrapper agent_binary_;
  struct Known {
    std::string reach;
    std::string config;
    EnsuredContainer ensured;
    int64_t checked_at_ms = 0;
  };
  void Remember(const SandboxSpec& spec, const EnsuredContainer& ensured);
  std::mutex known_mu_;
  std::map<std::string, Known> known_;               // by KnownKey(spec)
  std::map<std::string, int64_t> prune_checked_at_;  // state dir -> when MaybePrune last looked
  std::mutex ensure_mu_;                             // guards the lock maps
  std::map<std::string, std::shared_ptr<std::mutex>> ensure_locks_;  // per container name
  std::map<std::string, std::shared_ptr<std::mutex>> tenant_locks_;  // per tenant (quota)
  std::mutex warm_mu_;
  std::shared_ptr<WarmPool> warm_;    // null: no warm pools in this process
  std::string pool_owner_;            // "<pid>:<nonce>" of this pool
  std::set<std::string> pool_swept_;  // state dirs whose orphans were removed
};

}  // namespace sandrun::exec

// ContainerPool's warm pools (warm_pool.h): which containers are whose (ScopeOf), how pooled
// containers are made and removed, and how a new scope claims one.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <utility>

#include "sandbox/base/sha256.h"
#include "sandbox/base/slug.h"
#include "sandbox/executors/docker/container_pool.h"
#include "sandbox/executors/docker/exec_wrapper.h"
#include "sandbox/os/proc_table.h"
#include "sandbox/os/random.h"

namespace sandrun::exec {

std::optional<ContainerScope> ScopeOf(const std::string& id,
                                      const std::map<std::string, std::string>& labels,
                                      const RegistryState& registry) {
  auto label = [&](const char* key) {
    auto it = labels.find(key);
    return it == labels.end() ? std::string() : it->second;
  };
  if (labels.count(kSandboxLabel) == 0) return std::nullopt;
  if (auto scope = labels.find(kScopeLabel); scope != labels.end()) {
    // A container of an older sandrun has no scope hash (nor a tenant label: tenant "").
    auto hash = labels.find(kScopeHashLabel);
    if (hash != labels.end() && hash->second != ScopeKeyHash(scope->second)) return std::nullopt;
    return ContainerScope{label(kTenantLabel), scope->second, label(kReachHashLabel),
                          label(kConfigHashLabel), false};
  }
  if (labels.count(kPoolLabel) == 0) return std::nullopt;
  auto claim = registry.claims.find(id);
  if (claim == registry.claims.end()) return std::nullopt;  // still in the pool: nobody's
  const PoolClaim& c = claim->second;
  // A pool container is made for one tenant; its claim cannot move it to another.
  if (c.tenant != label(kTenantLabel) || c.scope_key.empty() ||
      c.scope_hash != ScopeKeyHash(c.scope_key)) {
    return std::nullopt;
  }
  return ContainerScope{c.tenant, c.scope_key, c.reach_hash, c.config_hash, true};
}

namespace {

// "<pid>:<start time>" of process `pid` (its start after boot in clock ticks, proc_table.h): a
// pid reused by another process (a restarted server that is pid 1 of its namespace) has another
// start time. "" when there is no such process.
std::string ProcessIdentity(pid_t pid) {
  const std::optional<ProcStat> stat = ReadProcStat(pid);
  if (!stat || stat->dead()) return "";
  return std::to_string(pid) + ":" + std::to_string(stat->start_ticks);
}

}  // namespace

bool PoolOwnerAlive(const std::map<std::string, std::string>& labels) {
  auto it = labels.find(kPoolOwnerLabel);
  if (it == labels.end()) return false;
  const std::string& owner = it->second;
  const std::string pid = owner.substr(0, owner.find(':'));
  if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  return ProcessIdentity(static_cast<pid_t>(std::stol(pid))) == owner;
}

bool IsPoolName(const std::string& name) {
  const size_t at = name.rfind("pool-");
  return at != std::string::npos && name.size() == at + 5 + 12 &&
         name.find_first_not_of("0123456789abcdef", at + 5) == std::string::npos &&
         (at == 0 || name[at - 1] == '-');
}

bool IsUnclaimedPoolContainer(const std::string& id, const std::string& name,
                              const std::map<std::string, std::string>& labels,
                              const RegistryState& registry) {
  return labels.count(kPoolLabel) > 0 && labels.count(kScopeLabel) == 0 &&
         registry.claims.count(id) == 0 && IsPoolName(name);
}

namespace {

// The spec a pooled container is made from: the scope's, without the scope and its workspace
// (the slot stands in for the workspace until the claim).
SandboxSpec PoolSpecOf(const SandboxSpec& spec) {
  SandboxSpec p = spec;
  p.scope_key.clear();
  p.workspace_host_dir.clear();
  p.workspace_id = PathIdentity{};
  p.workspace_read_only = false;
  p.scratch = false;
  p.scratch_limit_bytes = 0;
  p.remove_after = false;
  p.setup_command.clear();  // run by the claim, once the workspace is there
  if (p.max_containers > 0) {
    // Never more warm containers of a kind than the tenant may hold.
    p.pool.min = std::min(p.pool.min, p.max_containers);
    p.pool.max = std::min(p.pool.max, p.max_containers);
  }
  return p;
}

std::string PoolName(const SandboxSpec& pool_spec, const std::string& random) {
  std::string name = pool_spec.container_prefix + pool_spec.instance_id.substr(0, 8) + "-" +
                     (pool_spec.tenant.empty() ? "" : pool_spec.tenant + "-") + "pool-" + random;
  return name.size() > 63 ? name.substr(0, 63) : name;
}

std::string SlotNameOf(const std::string& agent_dir) {
  return agent_dir.substr(agent_dir.rfind('/') + 1);
}

}  // namespace

void ContainerPool::EnableWarmPool() {
  std::lock_guard<std::mutex> lock(warm_mu_);
  if (warm_) return;
  pool_owner_ = ProcessIdentity(::getpid());
  warm_ = std::make_shared<WarmPool>(
      [this](const SandboxSpec& pool_spec, const std::string& key) {
        return MakePooled(pool_spec, key);
      },
      [this](const SandboxSpec& pool_spec, const PooledContainer& c) {
        RemovePooled(pool_spec.state_dir, c.id, c.agent_dir);
      });
}

void ContainerPool::DrainWarmPool() {
  std::shared_ptr<WarmPool> warm;
  {
    std::lock_guard<std::mutex> lock(warm_mu_);
    warm = std::move(warm_);
  }
  if (warm) warm->Drain();
}

void ContainerPool::ResetWarmPool() {
  bool enabled = false;
  {
    std::lock_guard<std::mutex> lock(warm_mu_);
    enabled = warm_ != nullptr;
  }
  if (!enabled) return;
  DrainWarmPool();
  EnableWarmPool();
}

WarmPool::Stats ContainerPool::WarmPoolStats() {
  std::shared_ptr<WarmPool> warm;
  {
    std::lock_guard<std::mutex> lock(warm_mu_);
    warm = warm_;
  }
  return warm ? warm->stats() : WarmPool::Stats{};
}

std::string ContainerPool::WarmPoolReason(const SandboxSpec& spec) const {
  if (!spec.pool.enabled()) return "sandbox.pool is not set (or the call chose its own sandbox)";
  if (std::string why = AgentReason(spec); !why.empty()) return "no sandbox agent: " + why;
  if (!mount_support_.staged) return mount_support_.reason;
  if (!spec.scratch && spec.workspace_host_dir.empty()) return "the sandbox has no workspace";
  // The workspace arrives on top of the slot: anything else mounted at or below the workdir
  // (a tmpfs, a bind) would lie under it, hidden, where a container made for the scope has
  // it on top.
  auto within = [&](const std::string& path) {
    return spec.workdir == "/" || path == spec.workdir || path.starts_with(spec.workdir + "/");
  };
  for (const std::string& tmpfs : spec.tmpfs) {
    if (within(tmpfs)) return "a tmpfs (" + tmpfs + ") is mounted within the workdir";
  }
  for (const HostMountSpec& bind : spec.binds) {
    if (within(bind.target)) return "a bind (" + bind.target + ") is mounted within the workdir";
  }
  if (within("/.sandrun")) return "the workdir holds sandrun's own mounts (/.sandrun)";
  return "";
}

Result<PooledContainer> ContainerPool::MakePooled(const SandboxSpec& pool_spec,
                                                  const std::string& key) {
  if (!pool_spec.tenant.empty() && pool_spec.max_containers > 0) {
    // A tenant at its quota could claim none: no more are made for it (those ready stay).
    auto held = client_->ListContainers({std::string(kInstanceLabel) + "=" + pool_spec.instance_id,
                                         std::string(kTenantLabel) + "=" + pool_spec.tenant},
                                        /*all=*/true);
    if (!held) return Error(ErrorCode::kIo, "cannot count the tenant's containers");
    // Every one of its containers but those waiting in this pool: a container being claimed
    // right now has no claim record yet, and is the tenant's all the same.
    const std::set<std::string> waiting = WarmPoolStats().ready_ids;
    const auto claimed = std::count_if(held->begin(), held->end(),
                                       [&](const auto& c) { return waiting.count(c.id) == 0; });
    if (claimed >= pool_spec.max_containers) {
      return Error(ErrorCode::kConflict, "tenant \"" + pool_spec.tenant + "\" holds its " +
                                             std::to_string(pool_spec.max_containers) +
                                             " containers (maxContainers): no warm one is made");
    }
  }
  SANDRUN_ASSIGN_OR_RETURN(std::string random, RandomHex(6));
  const std::string name = PoolName(pool_spec, random);
  SANDRUN_ASSIGN_OR_RETURN(EnsuredContainer made,
                           CreateAndStartWith(pool_spec, name, /*with_agent=*/true,
                                              /*agent_wanted=*/true, key));
  return PooledContainer{made.id, name, made.agent_dir, NowMs()};
}

void ContainerPool::RemovePooled(const std::string& state_dir, const std::string& id,
                                 const std::string& agent_dir) {
  (void)client_->RemoveContainer(id, true);
  RemoveAgentDir(state_dir, agent_dir);  // and its workspace slot
}

void ContainerPool::SweepOrphanedPool(const SandboxSpec& spec) {
  {
    std::lock_guard<std::mutex> lock(warm_mu_);
    if (!pool_swept_.insert(spec.state_dir).second) return;
  }
  auto containers = client_->ListContainers(
      {std::string(kInstanceLabel) + "=" + spec.instance_id, kPoolLabel}, /*all=*/true);
  auto registry = SandboxRegistry(spec.state_dir).Load();
  if (!containers || !registry) return;  // unknown claims: nothing is taken for unclaimed
  SweepDeadRunners(spec.state_dir, *registry, &*containers);
}

void ContainerPool::SweepDeadRunners(const std::string& state_dir, const RegistryState& registry,
                                     std::vector<docker::ContainerSummary>* containers) {
  std::vector<std::string> claims_gone;
  std::erase_if(*containers, [&](const docker::ContainerSummary& c) {
    if (c.labels.count(kPoolLabel) == 0 || PoolOwnerAlive(c.labels)) return false;
    // Its runner died before a claim completed: still its pool name and no claim, or a claim
    // record whose container never got the scope's name (the scope makes another one).
    const std::string name = c.names.empty() ? "" : c.names.front();
    auto claim = registry.claims.find(c.id);
    const bool unclaimed = IsUnclaimedPoolContainer(c.id, name, c.labels, registry);
    const bool half_claimed = claim != registry.claims.end() && claim->second.name != name;
    if (!unclaimed && !half_claimed) return false;
    RemovePooled(state_dir, c.id, AgentDirOf(state_dir, c.labels));
    if (half_claimed) claims_gone.push_back(c.id);
    return true;
  });
  if (claims_gone.empty()) return;
  (void)SandboxRegistry(state_dir).Update([&](RegistryState& s) {
    for (const std::string& id : claims_gone) s.claims.erase(id);
  });
}

std::optional<EnsuredContainer> ContainerPool::Claim(const SandboxSpec& spec,
                                                     const std::string& name) {
  std::shared_ptr<WarmPool> warm;
  {
    std::lock_guard<std::mutex> lock(warm_mu_);
    warm = warm_;
  }
  if (warm == nullptr || !WarmPoolReason(spec).empty()) return std::nullopt;
  SweepOrphanedPool(spec);
  const SandboxSpec pool_spec = PoolSpecOf(spec);
  const bool wrapped = exec_wrapper_.usable();
  // The pool's kind: everything a container is and reaches but the scope and the workspace.
  const std::string key =
      Sha256Hex("sandrun-pool-v1\n" + spec.instance_id + "\n" + spec.tenant + "\n" +
                ReachHash(pool_spec) + "\n" + ConfigHash(pool_spec, wrapped, true))
          .substr(0, 32);
  std::optional<PooledContainer> taken = warm->Take(key, pool_spec);
  if (!taken) return std::nullopt;
  SandboxRegistry registry(spec.state_dir);
  // Out of the pool for good: on any failure below it is removed, and the caller creates the
  // scope's container as it would without a pool (checking everything again).
  auto give_up = [&]() -> std::optional<EnsuredContainer> {
    RemovePooled(spec.state_dir, taken->id, taken->agent_dir);
    (void)registry.Update([&](RegistryState& s) {
      s.claims.erase(taken->id);
      if (auto it = s.containers.find(name);
          it != s.containers.end() && it->second.created_at_ms == taken->ready_at_ms) {
        s.containers.erase(it);
      }
    });
    return std::nullopt;
  };
  // Still running, still that pool's, and nobody's.
  auto info = client_->InspectContainer(taken->id);
  if (!info || !info->state.running || info->labels[kPoolLabel] != key ||
      info->labels[kInstanceLabel] != spec.instance_id ||
      info->labels[kTenantLabel] != spec.tenant || info->labels.count(kScopeLabel) > 0 ||
      AgentDirOf(spec.state_dir, info->labels) != taken->agent_dir) {
    return give_up();
  }
  // Made from the image the tag names now (a rebuilt image gets new containers, not old ones).
  if (auto image = client_->InspectImage(spec.image); !image || image->id != info->image) {
    return give_up();
  }
  // The scope's workspace, checked as at any creation, onto the slot: it appears at the workdir.
  auto source = WorkspaceSource(spec, mount_support_);
  if (!source || !source->valid() ||
      !FillWorkspaceSlot(spec.state_dir, SlotNameOf(taken->agent_dir), source->get(),
                         !spec.scratch && spec.workspace_read_only)) {
    return give_up();
  }
  // The claim record, before the name and before any command: from now on it is the scope's.
  const std::string reach = ReachHash(spec);
  const std::string hash = ConfigHash(spec, wrapped, true);
  const int64_t now = NowMs();
  Status recorded = registry.Update([&](RegistryState& s) {
    s.claims[taken->id] = PoolClaim{
        spec.tenant, spec.scope_key, ScopeKeyHash(spec.scope_key), reach, hash, now, name};
    s.containers[name] =
        RegistryEntry{spec.scope_key, ScopeKeyHash(spec.scope_key), spec.image, hash,
                      reach,          taken->ready_at_ms,           now};
  });
  if (!recorded || !client_->RenameContainer(taken->id, name)) return give_up();
  // A failed setup command fails again, and is reported, where the caller creates one.
  if (!RunSetup(spec, taken->id)) return give_up();
  const bool has_wrapper = info->labels[kExecWrapperLabel] == kExecWrapperVersion;
  return EnsuredContainer{name, taken->id, true, has_wrapper, taken->agent_dir};
}

}  // namespace sandrun::exec

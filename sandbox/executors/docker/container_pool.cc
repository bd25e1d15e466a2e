#include "sandbox/executors/docker/container_pool.h"

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "sandbox/base/sha256.h"
#include "sandbox/base/slug.h"
#include "sandbox/docker/image_build.h"
#include "sandbox/docker/models.h"
#include "sandbox/os/file.h"
#include "sandbox/os/host_path.h"

namespace sandrun::exec {
namespace {

constexpr int64_t kHotWindowMs = 5 * 60 * 1000;   // a container used this recently is "hot"
constexpr int64_t kPruneEveryMs = 5 * 60 * 1000;  // automatic prune at most this often
constexpr size_t kMaxNameLength = 63;
constexpr int64_t kLastUsedResolutionMs = 60 * 1000;

int64_t ParseInt(const std::string& s) {
  try {
    return std::stoll(s);
  } catch (...) {
    return 0;
  }
}

}  // namespace

Error SandboxUnavailable(Error e, const std::string& what) {
  // Keep the engine's typed code (unreachable, not found, ...) but say what failed to happen.
  return std::move(e).Wrap("sandbox unavailable (" + what + "), nothing was run");
}

namespace {

// <prefix><instance8>- and, for a hosted tenant, <tenant>-.
std::string NameStem(const SandboxSpec& spec) {
  std::string stem = spec.container_prefix + spec.instance_id.substr(0, 8) + "-";
  return spec.tenant.empty() ? stem : stem + spec.tenant + "-";
}

// The scope key as its tenant names it: without the "<tenant>/" the name already carries.
std::string KeyWithinTenant(const SandboxSpec& spec) {
  const std::string prefix = spec.tenant + "/";
  if (!spec.tenant.empty() && spec.scope_key.rfind(prefix, 0) == 0) {
    return spec.scope_key.substr(prefix.size());
  }
  return spec.scope_key;
}

}  // namespace

std::string ContainerName(const SandboxSpec& spec) {
  const std::string key = KeyWithinTenant(spec);
  std::string name =
      NameStem(spec) + (key == "shared" ? std::string("shared") : SlugifyScopeKey(key));
  if (name.size() > kMaxNameLength) name.resize(kMaxNameLength);
  return name;
}

std::string CollisionFreeContainerName(const SandboxSpec& spec) {
  std::string name = NameStem(spec) + ScopeKeyHash(spec.scope_key);
  if (name.size() > kMaxNameLength) name.resize(kMaxNameLength);
  return name;
}

namespace {

// The spec's own host paths as mounts: what the reach and config hashes describe.
std::vector<docker::BindMount> CanonicalMounts(const SandboxSpec& spec) {
  std::vector<docker::BindMount> out;
  if (!spec.workspace_host_dir.empty()) {
    out.push_back(docker::BindMount{spec.workspace_host_dir, spec.workdir, spec.workspace_read_only,
                                    "rprivate", true});
  }
  for (const HostMountSpec& b : spec.binds) {
    out.push_back(docker::BindMount{b.source, b.target, b.read_only,
                                    b.propagation.empty() ? "rprivate" : b.propagation, true});
  }
  return out;
}

std::string Identity(const PathIdentity& id) {
  return std::to_string(id.dev) + ":" + std::to_string(id.ino);
}

}  // namespace

std::vector<std::string> SecurityOptions(const SandboxSpec& spec) {
  std::vector<std::string> options;
  if (spec.no_new_privileges) options.push_back("no-new-privileges:true");
  if (!spec.seccomp_profile_json.empty()) {
    options.push_back("seccomp=" + spec.seccomp_profile_json);
  }
  if (!spec.apparmor_profile.empty()) options.push_back("apparmor=" + spec.apparmor_profile);
  return options;
}

docker::ContainerSpec BuildContainerSpec(const SandboxSpec& spec, int64_t created_at_ms,
                                         std::vector<docker::BindMount> mounts) {
  docker::ContainerSpec c;
  c.image = spec.image;
  c.cmd = {"sleep", "infinity"};
  for (const auto& [k, v] : spec.container_env) c.env.push_back(k + "=" + v);
  c.labels = {{kSandboxLabel, "1"},
              {kInstanceLabel, spec.instance_id},
              {kScopeLabel, spec.scope_key},
              {kScopeHashLabel, ScopeKeyHash(spec.scope_key)},
              {kStateDirLabel, spec.state_dir}};
  // The local server's containers stay as they were (their config hash too: no recreation on
  // upgrade); no label reads as tenant "".
  if (!spec.tenant.empty()) c.labels[kTenantLabel] = spec.tenant;
  if (created_at_ms > 0) c.labels[kCreatedAtLabel] = std::to_string(created_at_ms);
  c.working_dir = spec.workdir;
  c.user = spec.user;
  auto& h = c.host;
  h.network_mode = spec.network;
  h.readonly_rootfs = spec.read_only_root;
  h.cap_drop = spec.cap_drop;
  h.security_opt = SecurityOptions(spec);
  for (const auto& mount : spec.tmpfs) {
    auto it = spec.tmpfs_options.find(mount);
    h.tmpfs[mount] = it != spec.tmpfs_options.end() ? it->second : "rw,nosuid,nodev";
  }
  h.mounts = mounts.empty() ? CanonicalMounts(spec) : std::move(mounts);
  if (spec.pids_limit > 0) h.pids_limit = spec.pids_limit;
  if (spec.memory_bytes > 0) {
    h.memory = spec.memory_bytes;
    h.memory_swap = spec.memory_swap_bytes != 0 ? spec.memory_swap_bytes : spec.memory_bytes;
  }
  if (spec.nano_cpus > 0) h.nano_cpus = spec.nano_cpus;
  h.init = spec.init;
  return c;
}

std::string ReachHash(const SandboxSpec& spec) {
  std::string text = "sandrun-reach-v1\nimage=" + spec.image + "\nnetwork=" + spec.network +
                     "\nuser=" + spec.user + "\nreadonlyRoot=" + (spec.read_only_root ? "1" : "0") +
                     "\nworkdir=" + spec.workdir + "\nworkspace=" + spec.workspace_host_dir +
                     "\nworkspaceId=" + Identity(spec.workspace_id) +
                     "\nworkspaceReadOnly=" + (spec.workspace_read_only ? "1" : "0") +
                     "\nscratch=" + (spec.scratch ? "1" : "0") +
                     // Limits a call may choose (exec --memory/--cpus/--pids): another choice is
                     // another container, never a kept one with the old limits.
                     "\nmemory=" + std::to_string(spec.memory_bytes) +
                     "\nmemorySwap=" + std::to_string(spec.memory_swap_bytes) +
                     "\nnanoCpus=" + std::to_string(spec.nano_cpus) +
                     "\npids=" + std::to_string(spec.pids_limit);
  for (const std::string& cap : spec.cap_drop) text += "\ncapDrop=" + cap;
  for (const std::string& opt : SecurityOptions(spec)) text += "\nsecurityOpt=" + opt;
  for (const auto& [mount, options] : spec.tmpfs_options)
    text += "\ntmpfs=" + mount + ":" + options;
  for (const HostMountSpec& b : spec.binds) {
    text += "\nbind=" + b.source + "|" + Identity(b.id) + "|" + b.target + "|" +
            (b.read_only ? "ro" : "rw") + "|" + b.propagation;
  }
  return Sha256Hex(text);
}

std::string ConfigHash(const SandboxSpec& spec, bool exec_wrapper, bool exec_agent) {
  // The create request without the creation time, plus the one-time setup command. The
  // wrapper's host path is left out: another build of the same version does the same.
  std::string canonical = docker::BuildContainerCreateBody(BuildContainerSpec(spec, 0));
  std::string wrapper =
      exec_wrapper ? std::string("\nexecWrapper=") + kExecWrapperVersion : std::string();
  // Whether the container is meant to run the agent (protocol version), not whether it came
  // up: a container whose agent failed keeps the hash and is used through the Engine API.
  std::string agent = exec_agent ? "\nexecAgent=" + std::to_string(agent::kVersion) : std::string();
  return Sha256Hex("sandrun-sandbox-v2\n" + canonical + "\n" + spec.setup_command + wrapper + agent)
      .substr(0, 32);
}

namespace {

bool HasExecWrapper(const std::map<std::string, std::string>& labels) {
  auto it = labels.find(kExecWrapperLabel);
  return it != labels.end() && it->second == kExecWrapperVersion;
}

EnsuredContainer Ensured(const std::string& name, const docker::ContainerInfo& info,
                         const SandboxSpec& spec) {
  return EnsuredContainer{name, info.id, false, HasExecWrapper(info.labels),
                          AgentDirOf(spec.state_dir, info.labels)};
}

}  // namespace

ContainerPool::ContainerPool(std::shared_ptr<docker::Client> client,
                             std::optional<ExecWrapper> exec_wrapper,
                             std::optional<ExecWrapper> agent_binary)
    : client_(std::move(client)),
      mount_support_(DetectMountSupport(client_->endpoint().kind == docker::Endpoint::Kind::kUnix)),
      exec_wrapper_(exec_wrapper ? std::move(*exec_wrapper)
                                 : FindExecWrapper(client_->endpoint().kind ==
                                                   docker::Endpoint::Kind::kUnix)),
      agent_binary_(agent_binary ? std::move(*agent_binary)
                                 : FindAgentBinary(client_->endpoint().kind ==
                                                   docker::Endpoint::Kind::kUnix)) {}

std::string ContainerPool::AgentReason(const SandboxSpec& spec) const {
  return AgentUnusableReason(spec, agent_binary_);
}

Result<EnsuredContainer> ContainerPool::CreateAndStart(const SandboxSpec& spec,
                                                       const std::string& name,
                                                       std::vector<std::string>* warnings) {
  const std::string why_not = AgentReason(spec);
  const bool agent_wanted = why_not.empty();
  if (!agent_wanted) {
    // Said once per container (sandbox.docker.execAgent false is a choice: not said).
    if (spec.exec_agent) {
      warnings->push_back("Warning: no sandbox agent in " + name + " (" + why_not +
                          "); its commands use the Engine API exec (slower).");
    }
    return CreateAndStartWith(spec, name, false, agent_wanted);
  }
  if (auto claimed = Claim(spec, name)) return *std::move(claimed);
  auto with_agent = CreateAndStartWith(spec, name, true, agent_wanted);
  if (with_agent || with_agent.error().code != ErrorCode::kIo) return with_agent;
  // The agent did not come up (an image or engine it cannot run on): the container again,
  // without it, used through the Engine API.
  warnings->push_back("Warning: the sandbox agent did not start in " + name + " (" +
                      with_agent.error().ToString() +
                      "); its commands use the Engine API exec (slower).");
  return CreateAndStartWith(spec, name, false, agent_wanted);
}

Result<EnsuredContainer> ContainerPool::CreateAndStartWith(const SandboxSpec& spec,
                                                           const std::string& name, bool with_agent,
                                                           bool agent_wanted,
                                                           const std::string& pool_key) {
  if (spec.seccomp_profile_json.empty()) {
    // Fail closed: a plan without the filter's JSON is a bug upstream, never "no filter".
    return Error(ErrorCode::kInvalidArgument,
                 "sandbox unavailable: no seccomp profile for container " + name + " (profile \"" +
                     spec.seccomp_profile_name + "\"), nothing was run");
  }
  int64_t now = NowMs();
  const bool wrapped = exec_wrapper_.usable();
  const std::string hash = ConfigHash(spec, wrapped, agent_wanted);
  const std::string reach = ReachHash(spec);
  std::string id;
  std::string agent_dir;
  if (with_agent) {
    auto dir = PrepareAgentDir(spec.state_dir);
    if (!dir) return Error(ErrorCode::kIo, dir.error().ToString());
    agent_dir = *dir;
  }
  // The directory goes with a container that did not come up.
  struct DirGuard {
    const std::string& state_dir;
    std::string dir;
    ~DirGuard() {
      if (!dir.empty()) RemoveAgentDir(state_dir, dir);
    }
  } dir_guard{spec.state_dir, agent_dir};
  {
    // Every (re)creation checks the host-backed mounts again: each source must still be the
    // object the gate checked. The staging mounts go when `staged` does, after the start (the
    // container holds its own copies by then).
    auto staged = StagedMounts::Prepare(spec, mount_support_);
    if (!staged) return SandboxUnavailable(std::move(staged).error(), "preparing the mounts");
    docker::ContainerSpec create = BuildContainerSpec(spec, now, staged->mounts());
    create.labels[kConfigHashLabel] = hash;
    create.labels[kReachHashLabel] = reach;
    if (!pool_key.empty()) {
      // No scope yet: the claim record will say whose it is. The workdir is the empty slot the
      // claim fills (rslave: what is mounted on the slot later appears here).
      const size_t slash = agent_dir.rfind('/');
      auto slot = PrepareWorkspaceSlot(spec.state_dir, agent_dir.substr(slash + 1));
      if (!slot) return SandboxUnavailable(std::move(slot).error(), "preparing a workspace slot");
      create.host.mounts.push_back(
          docker::BindMount{*slot, spec.workdir, false, "rslave", /*non_recursive=*/true});
      create.labels.erase(kScopeLabel);
      create.labels.erase(kScopeHashLabel);
      create.labels[kPoolLabel] = pool_key;
      create.labels[kPoolOwnerLabel] = pool_owner_;
    }
    if (wrapped) {
      // Read-only, a file the runner trusts (FindExecWrapper); it reaches nothing: not part of
      // the reach hash.
      create.host.mounts.push_back(WrapperMount(exec_wrapper_));
      create.labels[kExecWrapperLabel] = kExecWrapperVersion;
    }
    if (with_agent) {
      // The agent is the container's command (under the engine's init), started as root with
      // only CAP_SETUID and CAP_SETGID; it becomes its own uid at once (agent/main.cc). Every
      // Engine API exec names the sandbox user itself (never the container's root).
      create.cmd = AgentCommand();
      create.user = "0:0";
      create.host.cap_add = {"SETUID", "SETGID"};
      for (auto& m : AgentMounts(agent_binary_, agent_dir)) create.host.mounts.push_back(m);
      create.labels[kAgentDirLabel] = agent_dir;
    }
    auto created = client_->CreateContainer(name, create);
    if (!created) {
      Error e = std::move(created).error();
      if (e.code == ErrorCode::kNotFound && e.message.find("image") != std::string::npos) {
        return Error(ErrorCode::kNotFound,
                     "sandbox unavailable: image " + spec.image + " not found, nothing was run; " +
                         docker::MissingImageHint(docker::DefaultImagesDir(), spec.image));
      }
      if (e.code == ErrorCode::kConflict) {
        // Another sandrun process created it a moment ago: wait for theirs to be running, and
        // use it only if it is this scope's with this reach.
        for (int i = 0; i < 100; ++i) {
          auto info = client_->InspectContainer(name);
          if (info && info->state.running) {
            const auto owner =
                ScopeOf(info->id, info->labels,
                        SandboxRegistry(spec.state_dir).Load().value_or(RegistryState{}));
            if (pool_key.empty() && owner && info->labels[kInstanceLabel] == spec.instance_id &&
                owner->tenant == spec.tenant && owner->scope_key == spec.scope_key &&
                owner->reach_hash == reach) {
              return Ensured(name, *info, spec);
            }
            break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      }
      return SandboxUnavailable(std::move(e), "creating container " + name);
    }
    id = *created;
    if (auto started = client_->StartContainer(id); !started) {
      (void)client_->RemoveContainer(id, true);
      return SandboxUnavailable(std::move(started).error(), "starting container " + name);
    }
    if (with_agent) {
      if (auto ready = WaitAgentReady(agent_dir, Deadline::After(std::chrono::seconds(5)));
          !ready) {
        (void)client_->RemoveContainer(id, true);
        return Error(ErrorCode::kIo, ready.error().ToString());
      }
    }
  }
  if (!pool_key.empty()) {
    dir_guard.dir.clear();  // the container's now
    return EnsuredContainer{name, id, true, wrapped, agent_dir};
  }
  SANDRUN_RETURN_IF_ERROR(RunSetup(spec, id));
  SandboxRegistry registry(spec.state_dir);
  (void)registry.Update([&](RegistryState& state) {
    state.containers[name] = RegistryEntry{
        spec.scope_key, ScopeKeyHash(spec.scope_key), spec.image, hash, reach, now, now};
  });
  dir_guard.dir.clear();  // the container's now
  return EnsuredContainer{name, id, true, wrapped, agent_dir};
}

Status ContainerPool::RunSetup(const SandboxSpec& spec, const std::string& id) {
  if (spec.setup_command.empty()) return Ok();
  docker::ExecSpec setup;
  setup.cmd = {"/bin/sh", "-lc", spec.setup_command};
  setup.user = spec.user;
  std::string output;
  auto code = client_->RunExec(id, setup, [&](docker::StreamKind, std::string_view b) {
    if (output.size() < 4096) output.append(b);
  });
  if (code && *code == 0) return Ok();
  (void)client_->RemoveContainer(id, true);
  std::string why =
      code ? "exit code " + std::to_string(*code) + ": " + output : code.error().ToString();
  return Error(ErrorCode::kInternal,
               "sandbox unavailable: setupCommand failed (" + why + "), nothing was run");
}

Result<EnsuredContainer> ContainerPool::CreateWithinQuota(const SandboxSpec& spec,
                                                          const std::string& name,
                                                          std::vector<std::string>* warnings) {
  if (spec.tenant.empty() || spec.max_containers <= 0) return CreateAndStart(spec, name, warnings);
  std::shared_ptr<std::mutex> tenant_mu;
  {
    std::lock_guard<std::mutex> lock(ensure_mu_);
    auto& slot = tenant_locks_[spec.tenant];
    if (!slot) slot = std::make_shared<std::mutex>();
    tenant_mu = slot;
  }
  std::lock_guard<std::mutex> tenant_lock(*tenant_mu);
  // Stopped ones count too: they are the tenant's until pruned or recreated in place.
  auto held = client_->ListContainers({std::string(kInstanceLabel) + "=" + spec.instance_id,
                                       std::string(kTenantLabel) + "=" + spec.tenant},
                                      /*all=*/true);
  if (!held) {
    return SandboxUnavailable(std::move(held).error(), "counting the tenant's containers");
  }
  // Its warm pool's containers are nobody's until claimed (an unreadable registry: all count).
  auto registry = SandboxRegistry(spec.state_dir).Load();
  const auto count = static_cast<int64_t>(
      std::count_if(held->begin(), held->end(), [&](const docker::ContainerSummary& c) {
        return !registry || !IsUnclaimedPoolContainer(c.id, c.names.empty() ? "" : c.names.front(),
                                                      c.labels, *registry);
      }));
  if (count >= spec.max_containers) {
    return Error::Refusal(
        "quota-exceeded",
        "tenant \"" + spec.tenant + "\" already has " + std::to_string(count) + " of its " +
            std::to_string(spec.max_containers) + " sandbox containers (tenants." + spec.tenant +
            ".quotas.maxContainers); a new one for scope " + spec.scope_key +
            " was not created, nothing was run. Try again in 30 s, or use a scope that has "
            "a container.");
  }
  return CreateAndStart(spec, name, warnings);
}

namespace {

constexpr int64_t kKnownForMs = 30 * 1000;

std::string KnownKey(const SandboxSpec& spec) {
  return spec.instance_id + "\n" + spec.tenant + "\n" + spec.scope_key;
}

}  // namespace

std::optional<EnsuredContainer> ContainerPool::Recent(const SandboxSpec& spec) {
  std::lock_guard<std::mutex> lock(known_mu_);
  auto it = known_.find(KnownKey(spec));
  if (it == known_.end() || NowMs() - it->second.checked_at_ms > kKnownForMs) return std::nullopt;
  if (it->second.reach != ReachHash(spec) ||
      it->second.config != ConfigHash(spec, exec_wrapper_.usable(), AgentReason(spec).empty())) {
    return std::nullopt;
  }
  return it->second.ensured;
}

void ContainerPool::Forget(const SandboxSpec& spec) {
  std::lock_guard<std::mutex> lock(known_mu_);
  known_.erase(KnownKey(spec));
}

void ContainerPool::Remember(const SandboxSpec& spec, const EnsuredContainer& ensured) {
  std::lock_guard<std::mutex> lock(known_mu_);
  if (ensured.agent_dir.empty()) {
    known_.erase(KnownKey(spec));
    return;
  }
  known_[KnownKey(spec)] =
      Known{ReachHash(spec), ConfigHash(spec, exec_wrapper_.usable(), AgentReason(spec).empty()),
            ensured, NowMs()};
}

Result<EnsuredContainer> ContainerPool::EnsureContainer(const SandboxSpec& spec,
                                                        std::vector<std::string>* warnings) {
  for (const std::string& name : {ContainerName(spec), CollisionFreeContainerName(spec)}) {
    bool taken = false;
    auto ensured = EnsureNamed(spec, name, warnings, &taken);
    if (taken) continue;
    if (ensured) Remember(spec, *ensured);
    return ensured;
  }
  return Error(ErrorCode::kConflict, "sandbox unavailable: the container names of scope " +
                                         spec.scope_key +
                                         " belong to other scopes, nothing was run");
}

Result<EnsuredContainer> ContainerPool::EnsureNamed(const SandboxSpec& spec,
                                                    const std::string& name,
                                                    std::vector<std::string>* warnings,
                                                    bool* taken) {
  // Concurrent calls for one scope (a server with parallel execs) must not race to create,
  // recreate or start the same container: one at a time per name in this process.
  std::shared_ptr<std::mutex> name_mu;
  {
    std::lock_guard<std::mutex> lock(ensure_mu_);
    auto& slot = ensure_locks_[name];
    if (!slot) slot = std::make_shared<std::mutex>();
    name_mu = slot;
  }
  std::lock_guard<std::mutex> name_lock(*name_mu);
  auto info = client_->InspectContainer(name);
  if (!info) {
    if (info.error().code != ErrorCode::kNotFound) {
      return SandboxUnavailable(std::move(info).error(), "looking up container " + name);
    }
    return CreateWithinQuota(spec, name, warnings);
  }
  // The slug is readable, not unique: the container is this scope's only if its labels (or its
  // claim record) say so in full (a container of an older sandrun has no scope hash; its reach
  // decides below; nor a tenant label, which reads as "", the local server's).
  SandboxRegistry registry(spec.state_dir);
  std::optional<ContainerScope> owner;
  if (info->labels.count(kPoolLabel) == 0) {
    owner = ScopeOf(info->id, info->labels, RegistryState{});  // no registry read: the warm path
  } else {
    owner = ScopeOf(info->id, info->labels, registry.Load().value_or(RegistryState{}));
  }
  if (!owner || info->labels[kInstanceLabel] != spec.instance_id || owner->tenant != spec.tenant ||
      owner->scope_key != spec.scope_key) {
    *taken = true;
    return Error(ErrorCode::kConflict, name + " belongs to another scope");
  }
  if (owner->reach_hash != ReachHash(spec)) {
    if (auto removed = client_->RemoveContainer(info->id, true); !removed) {
      return SandboxUnavailable(std::move(removed).error(), "removing outdated container " + name);
    }
    RemoveAgentDir(spec.state_dir, AgentDirOf(spec.state_dir, info->labels));
    warnings->push_back("Sandbox container " + name +
                        " could reach other mounts, another user, network, image or limits than "
                        "this call asks for; replaced it with a new one (commands still running "
                        "in the old one were ended).");
    return CreateAndStart(spec, name, warnings);
  }
  if (!info->state.running) {
    if (auto removed = client_->RemoveContainer(info->id, true); !removed) {
      return SandboxUnavailable(std::move(removed).error(), "removing stopped container " + name);
    }
    RemoveAgentDir(spec.state_dir, AgentDirOf(spec.state_dir, info->labels));
    warnings->push_back(
        "Sandbox container " + name + " had stopped (" +
        (info->state.status.empty() ? std::string("not running") : info->state.status) +
        ", exit code " + std::to_string(info->state.exit_code) +
        "); created it again after checking its mounts again.");
    return CreateAndStart(spec, name, warnings);
  }
  std::string hash = ConfigHash(spec, exec_wrapper_.usable(), AgentReason(spec).empty());
  if (owner->config_hash != hash) {
    int64_t last_used = 0;
    if (auto state = registry.Load(); state) {
      auto it = state->containers.find(name);
      if (it != state->containers.end()) last_used = it->second.last_used_at_ms;
    }
    // Only settings outside the reach (env, setup) changed: a hot container is kept.
    if (NowMs() - last_used < kHotWindowMs) {
      warnings->push_back("Sandbox config changed for " + name +
                          " (recently used). Recreate to apply: sandrun sandbox recreate --scope " +
                          spec.scope_key);
    } else {
      if (auto removed = client_->RemoveContainer(info->id, true); !removed) {
        return SandboxUnavailable(std::move(removed).error(),
                                  "removing outdated container " + name);
      }
      RemoveAgentDir(spec.state_dir, AgentDirOf(spec.state_dir, info->labels));
      return CreateAndStart(spec, name, warnings);
    }
  }
  int64_t now = NowMs();
  // Last-use times only matter at the scale of the idle prune (hours): skip the locked write
  // when the entry is fresh, so a warm call costs one read of the registry at most.
  if (auto state = registry.Load(); state) {
    auto it = state->containers.find(name);
    if (it != state->containers.end() && now - it->second.last_used_at_ms < kLastUsedResolutionMs) {
      return Ensured(name, *info, spec);
    }
  }
  (void)registry.Update([&](RegistryState& state) {
    auto& entry = state.containers[name];
    if (entry.created_at_ms == 0) entry.created_at_ms = ParseInt(info->labels[kCreatedAtLabel]);
    entry.scope_key = spec.scope_key;
    entry.scope_hash = ScopeKeyHash(spec.scope_key);
    entry.image = spec.image;
    entry.config_hash = owner->config_hash;
    entry.reach_hash = owner->reach_hash;
    entry.last_used_at_ms = now;
  });
  return Ensured(name, *info, spec);
}

void ContainerPool::RemoveIfExhausted(const std::string& state_dir, const std::string& container,
                                      std::vector<std::string>* warnings) {
  // A long or killed run may have left orphans behind (a fork bomb's children are reparented to
  // the container's init, out of reach of the tree kill): if they hold the pids limit, the
  // container can run nothing more. Remove it; the next call gets a fresh one.
  // The orphans' count swings while they keep trying to fork, so a suspicious count is sampled
  // again and three quarters of the limit counts as exhausted.
  int64_t peak = 0, limit = 0;
  for (int sample = 0; sample < 4; ++sample) {
    if (sample > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto pids =
        client_->ContainerPids(container, {Deadline::After(std::chrono::seconds(5)), nullptr});
    if (!pids || pids->limit <= 0) break;
    limit = pids->limit;
    peak = std::max<int64_t>(peak, pids->current);
    // Done: clearly exhausted, or clearly healthy (a quarter or less is never resampled).
    if (peak * 4 >= limit * 3 || peak * 4 <= limit) break;
  }
  if (limit > 0 && peak * 4 >= limit * 3) {
    warnings->push_back("Sandbox container " + container + " has " + std::to_string(peak) + " of " +
                        std::to_string(limit) +
                        " processes left after the command; removed it (the next call gets a "
                        "fresh one).");
    // Its agent directory (and a pooled container's workspace slot, which holds the scope's
    // workspace mounted) goes with it.
    auto info = client_->InspectContainer(container);
    if (client_->RemoveContainer(container, true) && info) {
      RemoveAgentDir(state_dir, AgentDirOf(state_dir, info->labels));
    }
  }
}

Result<std::vector<std::string>> ContainerPool::Prune(const std::string& instance_id,
                                                      const std::string& state_dir,
                                                      double idle_hours, double max_age_days) {
  SANDRUN_ASSIGN_OR_RETURN(
      auto containers, client_->ListContainers({std::string(kInstanceLabel) + "=" + instance_id},
                                               /*all=*/true));
  SandboxRegistry registry(state_dir);
  RegistryState state = registry.Load().value_or(RegistryState{});
  int64_t now = NowMs();
  std::vector<std::string> removed;
  for (const auto& c : containers) {
    // A running runner's warm pool is its own to trim (warm_pool.h); a dead one's is pruned.
    std::string name = c.names.empty() ? c.id : c.names.front();
    if (IsUnclaimedPoolContainer(c.id, name, c.labels, state) && PoolOwnerAlive(c.labels)) continue;
    int64_t created = ParseInt(c.labels.count(kCreatedAtLabel) ? c.labels.at(kCreatedAtLabel) : "");
    if (created == 0) created = c.created * 1000;
    int64_t last_used = created;
    if (auto it = state.containers.find(name); it != state.containers.end()) {
      last_used = std::max(last_used, it->second.last_used_at_ms);
    }
    bool idle = idle_hours > 0 && static_cast<double>(now - last_used) > idle_hours * 3600e3;
    bool old = max_age_days > 0 && static_cast<double>(now - created) > max_age_days * 86400e3;
    if (!idle && !old) continue;
    if (client_->RemoveContainer(c.id, true)) {
      removed.push_back(name);
      RemoveAgentDir(state_dir, AgentDirOf(state_dir, c.labels));
    }
  }
  (void)registry.Update([&](RegistryState& s) {
    for (const auto& name : removed) s.containers.erase(name);
    s.last_prune_at_ms = now;
  });
  (void)ReleaseIdleScratch(instance_id, state_dir);
  return removed;
}

Result<std::vector<std::string>> ContainerPool::RemoveScope(
    const std::string& instance_id, const std::string& state_dir, const std::string& tenant,
    const std::string& scope_key, const std::string& scratch_dir, bool with_rm_scopes) {
  SANDRUN_ASSIGN_OR_RETURN(
      auto containers, client_->ListContainers({std::string(kInstanceLabel) + "=" + instance_id},
                                               /*all=*/true));
  SandboxRegistry registry(state_dir);
  const RegistryState known = registry.Load().value_or(RegistryState{});
  std::vector<std::string> removed;
  std::vector<std::string> removed_ids;
  std::map<std::string, std::string> scopes;  // scope key -> its scratch dir ("": none known)
  for (const auto& c : containers) {
    const auto owner = ScopeOf(c.id, c.labels, known);
    if (!owner || owner->tenant != tenant) continue;
    const std::string& key = owner->scope_key;
    const bool rm_scope = with_rm_scopes && key.starts_with(scope_key + "#rm-");
    if (key != scope_key && !rm_scope) continue;
    std::string name = c.names.empty() ? c.id : c.names.front();
    if (auto st = client_->RemoveContainer(c.id, true); !st) {
      return std::move(st).error().Wrap("removing " + name);
    }
    removed.push_back(name);
    removed_ids.push_back(c.id);
    RemoveAgentDir(state_dir, AgentDirOf(state_dir, c.labels));
    if (rm_scope && !scratch_dir.empty()) {
      // The call scopes' scratch dirs sit next to the scope's, named by their own keys.
      const size_t slash = scratch_dir.find_last_of('/');
      scopes[key] = scratch_dir.substr(0, slash + 1) + ScopeDirName(key);
    }
  }
  scopes[scope_key] = scratch_dir;
  (void)registry.Update([&](RegistryState& s) {
    for (const auto& name : removed) s.containers.erase(name);
    for (const auto& id : removed_ids) s.claims.erase(id);
  });
  for (const auto& [key, dir] : scopes) {
    if (dir.empty()) continue;
    SANDRUN_RETURN_IF_ERROR(DeleteScratch(state_dir, key, dir));
  }
  return removed;
}

Status ContainerPool::ReleaseIdleScratch(const std::string& instance_id,
                                         const std::string& state_dir) {
  SANDRUN_ASSIGN_OR_RETURN(
      auto containers, client_->ListContainers({std::string(kInstanceLabel) + "=" + instance_id},
                                               /*all=*/true));
  SandboxRegistry registry(state_dir);
  SANDRUN_ASSIGN_OR_RETURN(RegistryState state, registry.Load());
  SweepDeadRunners(state_dir, state, &containers);
  std::set<std::string> live;
  std::set<std::string> ids;
  std::vector<std::string> live_agents;
  for (const auto& c : containers) {
    // Any scope's, whichever tenant: a scratch dir is named by the full key.
    if (auto owner = ScopeOf(c.id, c.labels, state); owner) live.insert(owner->scope_key);
    ids.insert(c.id);
    live_agents.push_back(AgentDirOf(state_dir, c.labels));
  }
  SweepAgentDirs(state_dir, live_agents);
  // Claim records of containers that are gone (removed by name, or by hand); not one made
  // since the list was read.
  const int64_t listed_at = NowMs() - 60 * 1000;
  auto gone = [&](const std::pair<const std::string, PoolClaim>& claim) {
    return ids.count(claim.first) == 0 && claim.second.claimed_at_ms < listed_at;
  };
  if (std::any_of(state.claims.begin(), state.claims.end(), gone)) {
    (void)registry.Update([&](RegistryState& s) { std::erase_if(s.claims, gone); });
  }
  Status result = Ok();
  for (const auto& [dir, scope_key] : state.scratch_mounts) {
    if (live.count(scope_key) > 0) continue;
    if (auto released = ReleaseScratch(state_dir, scope_key, dir); !released) result = released;
  }
  return result;
}

void ContainerPool::MaybePrune(const SandboxSpec& spec) {
  if (spec.prune_idle_hours <= 0 && spec.prune_max_age_days <= 0) return;
  {
    // The registry is read at most once a minute per state dir by this process.
    std::lock_guard<std::mutex> lock(known_mu_);
    int64_t& checked = prune_checked_at_[spec.state_dir];
    if (NowMs() - checked < 60 * 1000) return;
    checked = NowMs();
  }
  SandboxRegistry registry(spec.state_dir);
  auto state = registry.Load();
  if (state && NowMs() - state->last_prune_at_ms < kPruneEveryMs) return;
  (void)Prune(spec.instance_id, spec.state_dir, spec.prune_idle_hours, spec.prune_max_age_days);
}

}  // namespace sandrun::exec

// The warm pool (sandbox.pool): started containers whose agent answers, waiting for new scopes,
// so a new scope's first command does not wait for a container to be created and started.
//
// This class keeps the inventory only; what a pooled container is and how a scope claims one is
// ContainerPool's (container_pool.h):
//   - A pool is one kind of container: the tenant, and the config and reach hashes of the
//     scope's spec without its scope and workspace (PoolSpecOf). Containers of other tenants,
//     images, users, limits, binds or settings are other pools.
//   - A pooled container carries no scope: its labels say which pool it is in (kPoolLabel) and
//     which process made it (kPoolOwnerLabel); its workdir is an empty workspace slot
//     (host_mounts.h) that the claim fills through mount propagation.
//   - A claim takes it out of the pool for good: the claim record (the scope in full) goes to
//     the root-only registry before the container is renamed to the scope's name and before its
//     first command. A claimed container is the scope's like any other and never goes back.
//   - Only the server keeps pools (the in-process MCP server serves one scope); a pool is
//     made on the first claim of its kind, refilled in the background to `min` (more, up to
//     `max`, when that many were claimed within idle_ttl_ms), trimmed back to `min` after
//     idle_ttl_ms, renewed after an hour, dropped when its kind has not been asked for within
//     an hour, and drained when the runner stops or its config is reloaded. A tenant has at
//     most 4 pools (a fifth kind drops the one asked for least recently), each of at most its
//     maxContainers. A call that chooses its own image, network or limits gets no pool. Containers
//     of a runner that died are removed by the next one (their owner is gone).
//
// Pattern of use (ContainerPool):
//   WarmPool warm(make, remove);
//   if (auto c = warm.Take(key, pool_spec)) { ...claim it... }
//   warm.Drain();  // on shutdown
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "sandbox/base/result.h"
#include "sandbox/executors/plan.h"

namespace sandrun::exec {

struct PooledContainer {
  std::string id;  // in full
  std::string name;
  std::string agent_dir;
  int64_t ready_at_ms = 0;
};

class WarmPool {
 public:
  // Makes one container for the pool `key` from its scope-less spec, started, its agent up.
  using Maker =
      std::function<Result<PooledContainer>(const SandboxSpec& pool_spec, const std::string& key)>;
  // Removes one (the container and its host directories); best effort.
  using Remover = std::function<void(const SandboxSpec& pool_spec, const PooledContainer&)>;

  WarmPool(Maker make, Remover remove);
  ~WarmPool();  // Drain()
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  // A ready container of pool `key`, out of the pool for good (nullopt: none is ready). Either
  // way the demand is noted, the pool is made if it was not there, and the refiller is woken.
  std::optional<PooledContainer> Take(const std::string& key, const SandboxSpec& pool_spec);
  // Stops the refiller and removes every ready container. Take gives nothing afterwards.
  void Drain();

  struct Stats {
    size_t pools = 0;
    size_t ready = 0;
    std::string last_error;           // the last failure to make a container ("" if none)
    std::set<std::string> ready_ids;  // the ready containers' ids
  };
  Stats stats();

 private:
  struct Pool {
    SandboxSpec spec;
    std::deque<PooledContainer> ready;
    std::deque<int64_t> claimed_at;  // claims within the TTL
    int64_t asked_at_ms = 0;
    int64_t retry_at_ms = 0;   // after a failure to make one
    int64_t served_at_ms = 0;  // when the refiller last made one for it
    bool making = false;
  };
  void Loop();

  Maker make_;
  Remover remove_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, Pool> pools_;
  std::string last_error_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sandrun::exec

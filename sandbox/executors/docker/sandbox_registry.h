// $SANDRUN_HOME/sandbox/containers.json: when each sandbox container was created and last used,
// so idle ones can be pruned and a hot one is not recreated under a running agent, whose scope
// (in full and by its full hash) and reach each container has, which scope each container taken
// from the warm pool was claimed for, and which scratch images are mounted on the host. Updates are
// atomic and serialised with an advisory lock; a corrupt file is set aside, never trusted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>

#include "sandbox/base/result.h"

namespace sandrun::exec {

struct RegistryEntry {
  std::string scope_key;
  std::string scope_hash;  // ScopeKeyHash(scope_key): the identity, compared in full
  std::string image;
  std::string config_hash;
  std::string reach_hash;  // ReachHash of the spec it was created for
  int64_t created_at_ms = 0;
  int64_t last_used_at_ms = 0;
};

// Whose a container taken from the warm pool (warm_pool.h) is: its labels name no scope (they
// were set before the scope was known), so this record, written before its first command, is
// its identity, compared in full like the labels of any other container.
struct PoolClaim {
  std::string tenant;
  std::string scope_key;
  std::string scope_hash;   // ScopeKeyHash(scope_key)
  std::string reach_hash;   // ReachHash of the scope's spec (the workspace included)
  std::string config_hash;  // ConfigHash of the scope's spec
  int64_t claimed_at_ms = 0;
  std::string name;  // the scope's container name it was claimed under
  bool operator==(const PoolClaim&) const = default;
};

struct RegistryState {
  std::map<std::string, RegistryEntry> containers;  // by container name
  std::map<std::string, PoolClaim> claims;          // by container id (in full)
  // Scratch images mounted on the host: scratch dir -> scope key (released on prune/recreate).
  std::map<std::string, std::string> scratch_mounts;
  int64_t last_prune_at_ms = 0;
};

class SandboxRegistry {
 public:
  explicit SandboxRegistry(std::string state_dir);

  Result<RegistryState> Load() const;
  // Applies `update` to the current state under the lock and writes it back.
  template <typename F>
  Status Update(F&& update);

  const std::string& path() const { return path_; }

 private:
  Status UpdateWith(void (*fn)(RegistryState&, void*), void* ctx);
  std::string dir_;
  std::string path_;
};

template <typename F>
Status SandboxRegistry::Update(F&& update) {
  return UpdateWith([](RegistryState& state,
                       void* ctx) { (*static_cast<std::remove_reference_t<F>*>(ctx))(state); },
                    &update);
}

int64_t NowMs();

}  // namespace sandrun::exec

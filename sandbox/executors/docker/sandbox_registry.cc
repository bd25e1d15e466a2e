#include "sandbox/executors/docker/sandbox_registry.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>
#include <cstdio>

#include "sandbox/base/json.h"
#include "sandbox/os/file.h"

namespace sandrun::exec {
namespace {

RegistryState Parse(const rapidjson::Document& doc) {
  RegistryState state;
  state.last_prune_at_ms = JsonInt(doc, "lastPruneAtMs");
  if (const auto* mounts = JsonMember(doc, "scratchMounts"); mounts && mounts->IsObject()) {
    for (const auto& m : mounts->GetObject()) {
      if (m.value.IsString()) state.scratch_mounts[m.name.GetString()] = m.value.GetString();
    }
  }
  if (const auto* claims = JsonMember(doc, "claims"); claims && claims->IsObject()) {
    for (const auto& m : claims->GetObject()) {
      PoolClaim c;
      c.tenant = JsonString(m.value, "tenant");
      c.scope_key = JsonString(m.value, "scopeKey");
      c.scope_hash = JsonString(m.value, "scopeHash");
      c.reach_hash = JsonString(m.value, "reachHash");
      c.config_hash = JsonString(m.value, "configHash");
      c.claimed_at_ms = JsonInt(m.value, "claimedAtMs");
      c.name = JsonString(m.value, "name");
      state.claims.emplace(m.name.GetString(), std::move(c));
    }
  }
  const auto* containers = JsonMember(doc, "containers");
  if (containers == nullptr || !containers->IsObject()) return state;
  for (const auto& m : containers->GetObject()) {
    RegistryEntry e;
    e.scope_key = JsonString(m.value, "scopeKey");
    e.scope_hash = JsonString(m.value, "scopeHash");
    e.image = JsonString(m.value, "image");
    e.config_hash = JsonString(m.value, "configHash");
    e.reach_hash = JsonString(m.value, "reachHash");
    e.created_at_ms = JsonInt(m.value, "createdAtMs");
    e.last_used_at_ms = JsonInt(m.value, "lastUsedAtMs");
    state.containers.emplace(m.name.GetString(), std::move(e));
  }
  return state;
}

std::string Serialize(const RegistryState& state) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("version");
  w.Int(1);
  w.Key("lastPruneAtMs");
  w.Int64(state.last_prune_at_ms);
  w.Key("containers");
  w.StartObject();
  for (const auto& [name, e] : state.containers) {
    w.Key(name.c_str());
    w.StartObject();
    w.Key("scopeKey");
    w.String(e.scope_key.c_str());
    w.Key("scopeHash");
    w.String(e.scope_hash.c_str());
    w.Key("image");
    w.String(e.image.c_str());
    w.Key("configHash");
    w.String(e.config_hash.c_str());
    w.Key("reachHash");
    w.String(e.reach_hash.c_str());
    w.Key("createdAtMs");
    w.Int64(e.created_at_ms);
    w.Key("lastUsedAtMs");
    w.Int64(e.last_used_at_ms);
    w.EndObject();
  }
  w.EndObject();
  w.Key("claims");
  w.StartObject();
  for (const auto& [id, c] : state.claims) {
    w.Key(id.c_str());
    w.StartObject();
    for (const auto& [key, value] :
         {std::pair<const char*, const std::string*>{"tenant", &c.tenant},
          {"scopeKey", &c.scope_key},
          {"scopeHash", &c.scope_hash},
          {"reachHash", &c.reach_hash},
          {"configHash", &c.config_hash},
          {"name", &c.name}}) {
      w.Key(key);
      w.String(value->c_str(), static_cast<rapidjson::SizeType>(value->size()));
    }
    w.Key("claimedAtMs");
    w.Int64(c.claimed_at_ms);
    w.EndObject();
  }
  w.EndObject();
  w.Key("scratchMounts");
  w.StartObject();
  for (const auto& [dir, key] : state.scratch_mounts) {
    w.Key(dir.c_str());
    w.String(key.c_str());
  }
  w.EndObject();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

SandboxRegistry::SandboxRegistry(std::string state_dir)
    : dir_(std::move(state_dir) + "/sandbox"), path_(dir_ + "/containers.json") {}

Result<RegistryState> SandboxRegistry::Load() const {
  auto text = ReadFile(path_, 16u << 20);
  if (!text) {
    if (text.error().code == ErrorCode::kNotFound) return RegistryState{};
    return std::move(text).error();
  }
  JsonParseOptions options;
  options.source_name = path_;
  auto doc = ParseJson(*text, options);
  if (!doc) return std::move(doc).error();
  return Parse(*doc);
}

Status SandboxRegistry::UpdateWith(void (*fn)(RegistryState&, void*), void* ctx) {
  SANDRUN_RETURN_IF_ERROR(EnsureDirectory(dir_, 0700));
  SANDRUN_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(path_ + ".lock"));
  auto state = Load();
  if (!state) {
    // Bookkeeping only: keep the unreadable file for a human and start afresh.
    std::string aside = path_ + ".corrupt-" + std::to_string(NowMs());
    std::rename(path_.c_str(), aside.c_str());
    state = RegistryState{};
  }
  const std::map<std::string, PoolClaim> claims = state->claims;
  fn(*state, ctx);
  // A last-used time lost in a crash only delays a prune: not fsync'd. A claim record is whose
  // a container is: fsync'd whenever the claims changed.
  return WriteFileAtomic(path_, Serialize(*state), 0600, /*durable=*/state->claims != claims);
}

}  // namespace sandrun::exec

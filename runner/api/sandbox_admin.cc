#include "runner/api/sandbox_admin.h"

#include <rapidjson/stringbuffer.h>

#include <optional>
#include <vector>

#include "runner/config/state_dir.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/json.h"
#include "sandbox/docker/client.h"
#include "sandbox/executors/docker/docker_executor.h"
#include "sandbox/executors/docker/host_mounts.h"
#include "sandbox/executors/docker/sandbox_registry.h"

namespace sandrun::api {
namespace {

RuntimeReply Failed(const Error& e) {
  return {500, RenderToolError(Error(ErrorCode::kInternal, "sandboxes: " + e.ToString()))};
}

std::string NameOf(const docker::ContainerSummary& c) {
  return c.names.empty() ? c.id : c.names.front();
}

struct TenantContainers {
  std::shared_ptr<docker::Client> client;
  std::string instance;
  std::vector<docker::ContainerSummary> containers;  // the tenant's only
  std::vector<std::string> scopes;                   // each one's scope key
};

// The tenant's containers of this instance; nullopt with `failure` set when the engine or the
// instance id cannot be had.
std::optional<TenantContainers> Load(const std::string& state_dir, const std::string& tenant,
                                     RuntimeReply* failure) {
  auto instance = config::LoadOrCreateInstanceId(state_dir);
  if (!instance) {
    *failure = Failed(instance.error());
    return std::nullopt;
  }
  auto client = docker::Client::FromEnvironment();
  if (!client) {
    *failure = {503, RenderToolError(Error(client.error().code,
                                           "sandbox unavailable: " + client.error().ToString()))};
    return std::nullopt;
  }
  TenantContainers out;
  out.client = std::move(client).value();
  out.instance = *instance;
  auto listed =
      out.client->ListContainers({std::string(exec::kInstanceLabel) + "=" + *instance}, true);
  if (!listed) {
    *failure = {503, RenderToolError(listed.error())};
    return std::nullopt;
  }
  // A warm-pool container is nobody's until claimed; a claimed one is its scope's.
  const exec::RegistryState registry =
      exec::SandboxRegistry(state_dir).Load().value_or(exec::RegistryState{});
  for (auto& c : *listed) {
    auto label = c.labels.find(exec::kTenantLabel);
    const std::string owner = label == c.labels.end() ? "" : label->second;
    if (owner != tenant || exec::IsUnclaimedPoolContainer(c.id, NameOf(c), c.labels, registry))
      continue;
    auto scope = exec::ScopeOf(c.id, c.labels, registry);
    out.scopes.push_back(scope ? scope->scope_key : "");
    out.containers.push_back(std::move(c));
  }
  return out;
}

}  // namespace

RuntimeReply ListSandboxes(const std::string& state_dir, const std::string& tenant) {
  RuntimeReply failure;
  auto found = Load(state_dir, tenant, &failure);
  if (!found) return failure;
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("sandboxes");
  w.StartArray();
  for (size_t i = 0; i < found->containers.size(); ++i) {
    const auto& c = found->containers[i];
    w.StartObject();
    w.Key("name");
    WriteJsonString(w, NameOf(c));
    w.Key("scope");
    WriteJsonString(w, found->scopes[i]);
    w.Key("state");
    WriteJsonString(w, c.state);
    w.Key("image");
    WriteJsonString(w, c.image);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return {200, buffer.GetString()};
}

RuntimeReply RemoveSandbox(const std::string& state_dir, const std::string& tenant,
                           const std::string& name) {
  RuntimeReply failure;
  auto found = Load(state_dir, tenant, &failure);
  if (!found) return failure;
  const docker::ContainerSummary* match = nullptr;
  for (const auto& c : found->containers) {
    if (!name.empty() && NameOf(c) == name) match = &c;
  }
  if (match == nullptr) {
    // The same answer for another tenant's container as for no container at all.
    return {404, RenderToolError(Error::Refusal(
                     "sandbox-not-found", "No sandbox \"" + name + "\" (GET /v1/sandboxes)"))};
  }
  if (Status removed = found->client->RemoveContainer(match->id, true); !removed) {
    return {503, RenderToolError(removed.error())};
  }
  exec::RemoveAgentDir(state_dir, exec::AgentDirOf(state_dir, match->labels));
  exec::SandboxRegistry registry(state_dir);
  (void)registry.Update([&](exec::RegistryState& s) {
    s.containers.erase(name);
    s.claims.erase(match->id);
  });
  exec::DockerExecutor executor(found->client);
  (void)executor.ReleaseIdleScratch(found->instance, state_dir);
  exec::SweepStaleStaging(state_dir);
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("removed");
  WriteJsonString(w, name);
  w.EndObject();
  return {200, buffer.GetString()};
}

}  // namespace sandrun::api

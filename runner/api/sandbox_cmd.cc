#include "runner/api/sandbox_cmd.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "runner/api/sandbox_cp.h"
#include "runner/config/config.h"
#include "runner/config/ids.h"
#include "runner/config/state_dir.h"
#include "runner/policy/sandbox_spec.h"
#include "sandbox/docker/client.h"
#include "sandbox/executors/docker/docker_executor.h"
#include "sandbox/executors/docker/host_mounts.h"
#include "sandbox/executors/docker/sandbox_registry.h"

namespace sandrun::api {
namespace {

std::string FormatTime(int64_t ms) {
  if (ms <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buf;
}

// `sandbox prune --session KEY`: a finished job's scope for good (its container, its `--rm` call
// scopes left by a crash, and their scratch data). Only with sandbox.scope "session": under
// "agent" or "shared" the scope is other sessions' too.
int PruneSession(const GlobalOptions& global, const SandboxCommand& cmd, const config::Config& cfg,
                 const std::string& state_dir, const std::string& instance,
                 const std::shared_ptr<docker::Client>& client) {
  if (cmd.all) {
    PrintError("sandbox prune: --all and --session exclude each other (nothing was removed)");
    return kExitRefused;
  }
  if (auto bad = config::SessionKeyError(cmd.session)) {
    PrintError(*bad);
    return kExitRefused;
  }
  config::AgentSettings settings = cfg.ForAgent(global.agent);
  if (settings.sandbox.scope != config::SandboxScope::kSession) {
    PrintError(std::string("sandbox prune --session needs sandbox.scope \"session\" (it is \"") +
               config::ToString(settings.sandbox.scope) +
               "\": the scope is shared with other sessions, nothing was removed); set "
               "sandbox.scope to \"session\" for one sandbox per job");
    return kExitRefused;
  }
  if (auto bad = policy::SessionScopeKeyError(cmd.session)) {
    PrintError(bad->message);
    return kExitRefused;
  }
  policy::Caller caller;
  caller.agent_id = global.agent;
  caller.session_key = cmd.session;
  const std::string key = policy::SandboxScopeKey(settings.sandbox.scope, caller);
  const char* home = std::getenv("HOME");
  auto scratch = policy::ScopeScratchDir(settings, state_dir, home ? home : "", key);
  if (!scratch) {
    PrintError(scratch.error().ToString());
    return kExitRefused;
  }
  exec::DockerExecutor executor(client);
  auto removed = executor.pool().RemoveScope(instance, state_dir, "", key, *scratch, true);
  if (!removed) {
    PrintError(removed.error().ToString());
    return kExitFailure;
  }
  for (const auto& name : *removed) std::printf("removed %s\n", name.c_str());
  std::printf("pruned session %s: %zu container%s%s\n", cmd.session.c_str(), removed->size(),
              removed->size() == 1 ? "" : "s", scratch->empty() ? "" : " and its scratch data");
  return kExitOk;
}

}  // namespace

int RunSandboxCommand(const GlobalOptions& global, const SandboxCommand& cmd) {
  if (cmd.action == "cp") return RunSandboxCp(global, cmd.src, cmd.dest);  // no engine needed
  auto state_dir = config::StateDirPath();
  if (!state_dir) {
    PrintError(state_dir.error().ToString());
    return kExitFailure;
  }
  auto cfg = config::LoadConfigFor(global.config_file, *state_dir);
  if (!cfg) {
    PrintError(cfg.error().ToString());
    return kExitRefused;
  }
  auto instance = config::LoadOrCreateInstanceId(*state_dir);
  if (!instance) {
    PrintError(instance.error().ToString());
    return kExitFailure;
  }
  auto client_or = docker::Client::FromEnvironment();
  if (!client_or) {
    PrintError(client_or.error().ToString());
    return kExitFailure;
  }
  std::shared_ptr<docker::Client> client = std::move(client_or).value();
  auto containers =
      client->ListContainers({std::string(exec::kInstanceLabel) + "=" + *instance}, true);
  if (!containers) {
    PrintError(containers.error().ToString());
    return kExitFailure;
  }
  exec::SandboxRegistry registry(*state_dir);
  exec::RegistryState state = registry.Load().value_or(exec::RegistryState{});
  // The scope a container is (its labels, or its claim record), "(warm pool)" for one no scope
  // has claimed yet.
  auto scope_of = [&](const docker::ContainerSummary& c) -> std::string {
    if (exec::IsUnclaimedPoolContainer(c.id, c.names.empty() ? "" : c.names.front(), c.labels,
                                       state))
      return "(warm pool)";
    auto scope = exec::ScopeOf(c.id, c.labels, state);
    return scope ? scope->scope_key : "";
  };

  if (cmd.action == "list") {
    if (cmd.json) {
      rapidjson::StringBuffer buffer;
      rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
      w.StartArray();
      for (const auto& c : *containers) {
        std::string name = c.names.empty() ? c.id : c.names.front();
        auto entry = state.containers.find(name);
        w.StartObject();
        w.Key("name");
        w.String(name.c_str());
        w.Key("scope");
        w.String(scope_of(c).c_str());
        w.Key("state");
        w.String(c.state.c_str());
        w.Key("image");
        w.String(c.image.c_str());
        w.Key("lastUsedAtMs");
        w.Int64(entry == state.containers.end() ? 0 : entry->second.last_used_at_ms);
        w.EndObject();
      }
      w.EndArray();
      std::printf("%s\n", buffer.GetString());
      return kExitOk;
    }
    std::printf("%-40s %-20s %-9s %-26s %s\n", "NAME", "SCOPE", "STATE", "IMAGE", "LAST USED");
    for (const auto& c : *containers) {
      std::string name = c.names.empty() ? c.id : c.names.front();
      auto entry = state.containers.find(name);
      std::string scope = scope_of(c);
      std::printf(
          "%-40s %-20s %-9s %-26s %s\n", name.c_str(), scope.c_str(), c.state.c_str(),
          c.image.c_str(),
          FormatTime(entry == state.containers.end() ? 0 : entry->second.last_used_at_ms).c_str());
    }
    return kExitOk;
  }

  if (cmd.action == "recreate") {
    if (!cmd.agent.empty()) {
      if (auto bad = config::AgentIdError(cmd.agent)) {
        PrintError(*bad);
        return kExitRefused;
      }
    }
    if (!cmd.session.empty()) {
      if (auto bad = config::SessionKeyError(cmd.session)) {
        PrintError(*bad);
        return kExitRefused;
      }
    }
    std::string scope = !cmd.scope.empty()     ? cmd.scope
                        : !cmd.agent.empty()   ? "agent:" + cmd.agent
                        : !cmd.session.empty() ? cmd.session
                                               : "";
    if (!cmd.all && scope.empty()) {
      PrintError("sandbox recreate needs --all, --scope KEY, --agent ID or --session KEY");
      return kExitRefused;
    }
    std::vector<std::string> removed;
    std::vector<std::string> removed_ids;
    for (const auto& c : *containers) {
      auto owner = exec::ScopeOf(c.id, c.labels, state);
      if (!cmd.all && (!owner || owner->scope_key != scope)) continue;
      std::string name = c.names.empty() ? c.id : c.names.front();
      if (auto st = client->RemoveContainer(c.id, true); !st) {
        PrintError("cannot remove " + name + ": " + st.error().ToString());
        return kExitFailure;
      }
      removed.push_back(name);
      removed_ids.push_back(c.id);
      exec::RemoveAgentDir(*state_dir, exec::AgentDirOf(*state_dir, c.labels));
      std::printf("removed %s (recreated on next use)\n", name.c_str());
    }
    (void)registry.Update([&](exec::RegistryState& s) {
      for (const auto& name : removed) s.containers.erase(name);
      for (const auto& id : removed_ids) s.claims.erase(id);
    });
    // The removed scopes' scratch images come off the host (their contents stay), and staging
    // mounts of runners that died mid-create go.
    exec::DockerExecutor executor(client);
    if (auto released = executor.ReleaseIdleScratch(*instance, *state_dir); !released) {
      PrintWarning("scratch mounts: " + released.error().ToString());
    }
    exec::SweepStaleStaging(*state_dir);
    if (removed.empty()) std::printf("no matching sandbox containers\n");
    return kExitOk;
  }

  if (cmd.action == "prune" && !cmd.session.empty()) {
    return PruneSession(global, cmd, *cfg, *state_dir, *instance, client);
  }
  if (cmd.action == "prune") {
    exec::DockerExecutor executor(client);
    config::AgentSettings settings = cfg->ForAgent(global.agent);
    double idle = cmd.all ? 1e-9 : settings.sandbox.prune.idle_hours;
    double age = cmd.all ? 1e-9 : settings.sandbox.prune.max_age_days;
    auto removed = executor.Prune(*instance, *state_dir, idle, age);
    if (!removed) {
      PrintError(removed.error().ToString());
      return kExitFailure;
    }
    exec::SweepStaleStaging(*state_dir);
    for (const auto& name : *removed) std::printf("removed %s\n", name.c_str());
    std::printf("pruned %zu container%s\n", removed->size(), removed->size() == 1 ? "" : "s");
    return kExitOk;
  }
  PrintError("unknown sandbox action " + cmd.action);
  return kExitRefused;
}

}  // namespace sandrun::api

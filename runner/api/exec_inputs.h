// The loader of an exec call's decision inputs (policy::DecisionInputs): the state dir, the
// config for the agent, the caller's sender name, the runner's environment (stripped of secrets
// for host commands), the login PATH, the seccomp profile and container preset, the instance id,
// the approvals file and the safe-bin profiles: each read only when the decision needs it. The
// exec path and `sandrun policy check` load through here and decide with policy::DecideExec, so
// they cannot disagree.
//
// Pattern of use:
//   std::unique_ptr<LoadedCall> call = LoadExecInputs(global, caller, request, Purpose::kExec);
//   if (call->failure) return refuse(*call->failure);
//   policy::ExecDecision d = policy::DecideExec(request, call->inputs);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/api/cli_context.h"
#include "runner/config/config.h"
#include "runner/config/settings.h"
#include "runner/policy/exec_decision.h"
#include "runner/policy/exec_request.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

enum class Purpose {
  kExec,   // the call runs: creates the state dir's instance id if missing
  kCheck,  // `policy check`: analyses always, writes nothing but a tenant's workspace dir
           // (made as exec makes it, so the verdict is exec's)
};

struct LoadedCall {
  std::string state_dir;
  // inputs.ctx.settings and inputs.tools point at these: a LoadedCall never moves.
  config::AgentSettings settings;
  config::ToolPolicy global_tools;  // the config's top-level tools policy
  policy::DecisionInputs inputs;
  // Loading failed: nothing is decided. The wire code says whose fault it is: "internal"
  // (the state dir, a tenant's workspace dir), "invalid-config" (config, approvals file,
  // profiles), "sandbox-unavailable" (the sandbox's seccomp profile or preset), "forbidden" (a
  // tenant that named a workspace), "invalid-request" (a tenant's invalid tenant or agent id).
  std::optional<Error> failure;
  // Warnings of the config and approvals file loaders, in order (printed by whoever runs the
  // call: see ExecToolResult::config_warnings).
  std::vector<std::string> diagnostics;
};

std::unique_ptr<LoadedCall> LoadExecInputs(const GlobalOptions& global,
                                           const policy::Caller& caller,
                                           const policy::ExecRequest& request, Purpose purpose);

// What a call runs under, picked in this one place for exec, `policy check` and apply_patch:
// tenant "" gets the config's agent settings as today; a hosted tenant gets its layer
// (Config::ForTenant(tenant).ForAgent(agent): quota ceilings applied to the sandbox), its
// tools policy, hostExecution and maxContainers.
struct CallSettings {
  config::AgentSettings settings;
  config::ToolPolicy global_tools;  // the top-level tools policy (the tenant's for a tenant)
  bool host_execution = true;       // tenant "": the local server decides as ever
  int64_t max_containers = 0;       // tenants.<id>.quotas.maxContainers (0: no limit)
};
CallSettings SettingsForCall(const config::Config& cfg, const std::string& tenant,
                             const std::string& agent);

// The tool policy (tools.allow / tools.deny, SPEC §6b) of `cfg` for a call of `tool` that has no
// decision of its own (the process tool; exec's is part of policy::DecideExec), by the tenant's
// and agent's settings as SettingsForCall picks them. nullopt when every layer allows the tool;
// else the refusal (tool-denied): "Tool process is denied by tool policy (tools.deny)."
std::optional<Error> ToolPolicyRefusal(const config::Config& cfg, const std::string& tenant,
                                       const std::string& agent, std::string_view tool);

// $SANDRUN_HOME/tenants/<tenant>/workspaces/<agent>: a hosted tenant's agent's workspace, always.
std::string TenantWorkspacePath(const std::string& state_dir, const std::string& tenant,
                                const std::string& agent);

// The call's workspace. Tenant "": WorkspaceDir(global, settings). A hosted tenant: its
// TenantWorkspacePath, whatever agents.<id>.workspace says, created on first use (0700, no
// component through a symbolic link; as root given to the sandbox user, as scratch dirs are, so
// the sandbox can write it); a workspace the caller named (--workspace, Principal::workspace_root)
// is refused (forbidden): a tenant cannot name a host path. Invalid ids: invalid-request.
Result<std::string> CallWorkspaceDir(const GlobalOptions& global, const policy::Caller& caller,
                                     const config::AgentSettings& settings,
                                     const std::string& state_dir);

// The name of a user id (its passwd entry), or the number.
std::string UserName(uid_t uid);

// The agent's workspace (SPEC §1): --workspace, else agents.<id>.workspace, else the current
// directory; made absolute.
std::string WorkspaceDir(const GlobalOptions& global, const config::AgentSettings& settings);

}  // namespace sandrun::api

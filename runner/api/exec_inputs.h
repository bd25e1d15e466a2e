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

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runner/api/cli_context.h"
#include "runner/config/settings.h"
#include "runner/policy/exec_decision.h"
#include "runner/policy/exec_request.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

enum class Purpose {
  kExec,   // the call runs: creates the state dir's instance id if missing
  kCheck,  // `policy check`: writes nothing, analyses always
};

struct LoadedCall {
  std::string state_dir;
  // inputs.ctx.settings and inputs.tools point at these: a LoadedCall never moves.
  config::AgentSettings settings;
  config::ToolPolicy global_tools;  // the config's top-level tools policy
  policy::DecisionInputs inputs;
  // Loading failed: nothing is decided. The wire code says whose fault it is: "internal"
  // (the state dir), "invalid-config" (config, approvals file, profiles),
  // "sandbox-unavailable" (the sandbox's seccomp profile or preset).
  std::optional<Error> failure;
  // Warnings of the config and approvals file loaders, in order (printed by whoever runs the
  // call: see ExecToolResult::config_warnings).
  std::vector<std::string> diagnostics;
};

std::unique_ptr<LoadedCall> LoadExecInputs(const GlobalOptions& global,
                                           const policy::Caller& caller,
                                           const policy::ExecRequest& request, Purpose purpose);

// The name of a user id (its passwd entry), or the number.
std::string UserName(uid_t uid);

// The agent's workspace (SPEC §1): --workspace, else agents.<id>.workspace, else the current
// directory; made absolute.
std::string WorkspaceDir(const GlobalOptions& global, const config::AgentSettings& settings);

}  // namespace sandrun::api

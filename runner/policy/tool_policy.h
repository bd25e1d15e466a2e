// Tool policy (SPEC §6b; OpenClaw's tools.allow / tools.deny) and the apply_patch gate: which
// tools a call may use, and where apply_patch may write. Pure functions of the settings.
//
// Matching (OpenClaw's): names are trimmed and lowercased, aliases mapped (bash -> exec,
// apply-patch -> apply_patch), groups expanded (group:fs = read, write, edit, apply_patch;
// group:runtime = exec, process; ...), `*` globs allowed. A tool is denied when a deny entry
// matches it; otherwise a non-empty allow list must match it, where allow "write" also admits
// apply_patch (deny "write" does not deny it). Every layer (global tools.*, then the agent's) must
// let the tool through, as OpenClaw filters the tool list by each policy in turn.
//
// Consequences for exec (SPEC §6b): a denied exec refuses the call; a denied process makes exec
// synchronous (yieldMs/background ignored, with kBackgroundDisabledWarning).
//
// Pattern of use:
//   ToolPolicyLayers layers = {&cfg.global.tools, &agent_settings.tools};
//   if (auto denied = CheckToolAllowed(layers, kToolExec)) return Refuse(*denied);
//   bool background = IsToolAllowed(layers, kToolProcess);
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/config/settings.h"
#include "runner/policy/exec_request.h"
#include "runner/policy/gate_types.h"

namespace sandrun::policy {

inline constexpr std::string_view kToolExec = "exec";
inline constexpr std::string_view kToolProcess = "process";
inline constexpr std::string_view kToolApplyPatch = "apply_patch";

// OpenClaw's warning when background execution is unavailable.
inline constexpr std::string_view kBackgroundDisabledWarning =
    "Warning: background execution is disabled; running synchronously.";

// The tool policies a call passes through, outermost first (null entries are skipped).
using ToolPolicyLayers = std::vector<const config::ToolPolicy*>;

// Trimmed, lowercased, aliases mapped.
std::string NormalizeToolName(std::string_view name);

// Normalized names with group:* entries replaced by their members (unknown groups stay as
// written, so they match nothing), without duplicates.
std::vector<std::string> ExpandToolGroups(const std::vector<std::string>& names);

enum class ToolVerdict {
  kAllowed,
  kDenied,      // a tools.deny entry matches
  kNotAllowed,  // tools.allow is set and nothing in it matches
};
ToolVerdict EvaluateToolPolicy(const config::ToolPolicy& policy, std::string_view tool);

// nullopt when every layer allows `tool`; else (code tool-denied)
// "Tool <tool> is denied by tool policy (tools.deny)." or "... (tools.allow)." for an allow list
// that does not name it.
std::optional<Error> CheckToolAllowed(const ToolPolicyLayers& layers, std::string_view tool);
bool IsToolAllowed(const ToolPolicyLayers& layers, std::string_view tool);

// tools.exec.applyPatch.allowModels: empty allows every model; otherwise the call's model must
// be listed. Entries and models are raw ids ("gpt-5.4") or full ids ("openai/gpt-5.4"),
// compared case-insensitively; when either side is raw only the model part is compared. No model
// given while the list is set: not allowed.
bool ApplyPatchAllowedForModel(const config::ApplyPatchSettings& settings,
                               const std::optional<std::string>& model);

// Where an apply_patch call writes (SPEC §1, §6b).
struct ApplyPatchTarget {
  std::string root;            // host directory every path must stay in (when workspace_only)
  std::string workdir;         // host directory relative paths start from
  std::string alias_root;      // sandbox: the container path of `root` (/workspace); else ""
  std::string display_cwd;     // the workdir as the caller sees it (container path in the sandbox)
  bool sandboxed = false;      // the session runs in the sandbox: edits the mount's host side
  bool workspace_only = true;  // always true in the sandbox (never a path it cannot see)
  bool scratch = false;        // root is the per-scope scratch dir (created if missing)
  // scratch: whose it is and how it is made (exec::EnsureScratch), as the sandbox makes it.
  std::string scope_key;
  std::string sandbox_user;
  int64_t scratch_limit_bytes = 0;
};

struct ApplyPatchContext {
  const config::AgentSettings* settings = nullptr;
  ToolPolicyLayers tools;  // the tool policies to pass
  Caller caller;
  std::string state_dir;               // $SANDRUN_HOME (absolute)
  std::string workspace_dir;           // the agent's real workspace (absolute)
  std::string home;                    // $HOME, for ~ in sandbox.workspaceRoot
  std::optional<std::string> workdir;  // the call's workdir
  std::optional<std::string> model;    // the call's model
};

// The apply_patch gate, refusals in this order: tool policy (tool-denied) -> applyPatch.enabled
// false (tool-denied) -> allowModels (tool-denied) -> a hosted tenant's gateway session without
// tenants.<id>.hostExecution (forbidden) -> sandboxed with workspaceAccess ro
// (read-only-workspace) -> unusable workspace settings (invalid-config) -> a workdir outside the
// workspace while confined (invalid-request). Sandboxed sessions (sandbox.mode) write to the host
// side of the /workspace mount: the per-scope scratch dir for workspaceAccess none, the real
// workspace for rw; gateway sessions write to the real workspace.
Result<ApplyPatchTarget> GateApplyPatch(const ApplyPatchContext& ctx);

}  // namespace sandrun::policy

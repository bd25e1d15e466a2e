// The gate: pure policy turning (settings, request, caller) into an exec Plan or a refusal
// (DESIGN.md "The way data flows"; SPEC §3; reference §1.2-§1.4, §2.2-§2.5, §3.2-§3.4).
//
// Two steps, so the caller does I/O only when it is needed:
//   Decision d = Decide(settings, request, caller);  // where, security/ask, elevated, or why not
//   if (NeedsLoginPath(d, settings, env)) ctx.login_path = <CachedLoginPath(...)>;
//   if (NeedsSeccompProfile(d)) ctx.seccomp_profile_json = <profile JSON>;
//   Result<GatedPlan> plan = BuildPlan(d, request, ctx);
// `sandrun policy check` uses Decide() alone: a refused Decision still says where the call would
// have gone.
//
// Refusal order (the first one wins): empty/invalid command -> invalid tools.exec.host ->
// invalid per-call host -> invalid per-call security/ask -> a hosted tenant's gateway, node or
// elevated call without tenants.<id>.hostExecution (forbidden) -> elevated unavailable -> host not
// allowed -> host=sandbox without a sandbox -> /approve command -> env violations -> explicit
// deny -> node binding / no node -> (BuildPlan) unsafe sandbox settings. On gateway/node the
// approvals flow (approval_flow.h) runs on the plan: allowlist, approvals file, inline eval.
#pragma once

#include <cstdint>
#include <optional>

#include "runner/config/settings.h"
#include "runner/policy/exec_request.h"
#include "runner/policy/gate_types.h"
#include "runner/policy/host_resolution.h"
#include "sandbox/executors/plan.h"

namespace sandrun::policy {

// Everything policy decided about one call, refused or not.
struct Decision {
  std::optional<Host> requested_host;  // the per-call host (nullopt: not requested or invalid)
  Host configured_host = Host::kAuto;  // tools.exec.host
  Host selected_host = Host::kAuto;    // requested ?? configured, moved by elevated
  // sandbox | gateway | node. Filled in even when refused: for a refused host override it is
  // where the requested host would have run; a refused elevated request resolves as if the call
  // had not asked for elevated.
  Host effective_host = Host::kSandbox;
  bool sandboxed = false;  // sandbox.mode says this session is sandboxed
  ElevatedMode elevated = ElevatedMode::kOff;
  SecurityAsk configured;  // tools.exec.mode/security/ask (full/off when unset)
  SecurityAsk effective;   // after per-call ask, elevated full and explicit deny
  // Allowlists and approvals gate gateway and node execution only (SPEC §3.6).
  bool approvals_apply = false;
  // Gateway/node with security=allowlist or ask!=off by tools.exec alone: the approvals flow
  // (approval_flow.h) decides after BuildPlan; the approvals file may tighten it further.
  bool needs_approval_flow = false;
  std::optional<Error> refusal;

  bool allowed() const { return !refusal.has_value(); }
};

Decision Decide(const config::AgentSettings& settings, const ExecRequest& request,
                const Caller& caller);

// Whether BuildPlan will read ctx.login_path: an allowed gateway decision with
// tools.exec.loginShellPath on and SANDRUN_LOAD_SHELL_ENV not 0/false/no/off in `host_env`.
bool NeedsLoginPath(const Decision& decision, const config::AgentSettings& settings,
                    const std::map<std::string, std::string>& host_env);

// Whether BuildPlan will read ctx.seccomp_profile_json: an allowed sandbox decision.
bool NeedsSeccompProfile(const Decision& decision);

// A plan plus what the exec front end needs besides it.
struct GatedPlan {
  exec::Plan plan;
  Decision decision;
  int64_t yield_ms = 10000;  // clamp(yieldMs ?? tools.exec.backgroundMs, 10, 120000); 0: at once
  bool background = false;   // background:true (yield_ms is then 0)
};

// Builds the plan for an allowed decision. `decision` must come from Decide() with the same
// settings (ctx.settings), request and caller.
//   timeout: per-call seconds (<= 0: none) else tools.exec.timeoutSeconds (0: none), as
//            floor(sec*1000) ms (at least 1 ms), for background runs too (SPEC §3.8).
//   sandbox: env = {HOME: container workdir} + sandbox.docker.env + request env +
//            SANDRUN_SHELL=exec, without PATH; prepend_path = tools.exec.pathPrepend then the
//            request's PATH (else sandbox.docker.env's PATH) entries, deduped ("" when none).
//   gateway: env = the runner's env without dangerous keys + overrides + SANDRUN_SHELL=exec,
//            PATH = pathPrepend + login PATH + runner PATH; shell from $SHELL (fish -> bash ->
//            sh); cwd = workdir (relative to the workspace) or the workspace, with a warning and
//            a fallback when it is not a directory.
Result<GatedPlan> BuildPlan(const Decision& decision, const ExecRequest& request,
                            const GateContext& ctx);

// Decide + BuildPlan with ctx.settings and ctx.caller (no login PATH probe: ctx as given).
Result<GatedPlan> Gate(const ExecRequest& request, const GateContext& ctx);

// The gateway shell (reference §3.1): SelectShell (shell_path.h) with lookups over `path` through
// `is_executable`: $SHELL trimmed (a bare name resolved on `path`); fish -> bash -> sh on
// `path`, else $SHELL; no $SHELL -> sh on `path`, else /bin/sh.
std::string SelectGatewayShell(const std::string& shell_env, const std::string& path,
                               const IsExecutableFn& is_executable);

inline constexpr int64_t kMaxCommandBytes = int64_t{1} << 20;

}  // namespace sandrun::policy

#include "runner/policy/gate.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "runner/policy/approve_guard.h"
#include "runner/policy/env_policy.h"
#include "runner/policy/sandbox_spec.h"
#include "runner/policy/shell_path.h"
#include "sandbox/base/strings.h"

namespace sandrun::policy {
namespace {

std::optional<std::string> Lookup(const std::map<std::string, std::string>& env,
                                  const std::string& key) {
  auto it = env.find(key);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

Error InvalidRequest(std::string message) {
  return Error::Refusal("invalid-request", std::move(message));
}

// A hosted tenant runs in the sandbox only unless tenants.<id>.hostExecution is true: a call that
// would run on the gateway or a node (by its host, the configured one, elevated's move or a
// sandbox mode that is off), or that asks for elevated, is refused before anything else about
// where it runs is said (forbidden, HTTP 403). Tenant "" is the local server: never checked.
std::optional<Error> CheckTenantHostExecution(const ExecRequest& request, const Decision& d,
                                              const Caller& caller) {
  if (caller.tenant.empty() || caller.host_execution) return std::nullopt;
  const bool elevated = request.elevated.value_or(false) || d.elevated != ElevatedMode::kOff;
  if (!elevated && d.effective_host == Host::kSandbox) return std::nullopt;
  const std::string key = "tenants." + caller.tenant + ".hostExecution";
  const std::string what = elevated ? std::string("elevated execution")
                                    : std::string("exec host=") + HostName(d.effective_host);
  return Error::Refusal("forbidden", what + " is not allowed for tenant \"" + caller.tenant +
                                         "\": its commands run only in the sandbox (" + key +
                                         " is not true). Run the call in the sandbox (sandbox.mode "
                                         "\"all\" for the tenant, no host, no elevated), or set " +
                                         key + " to true.");
}

// The first refusal of a call, in the documented order; nullopt when allowed.
std::optional<Error> FirstRefusal(const config::AgentSettings& settings, const ExecRequest& request,
                                  const Decision& d, bool configured_host_ok,
                                  const std::optional<Error>& host_error,
                                  const std::optional<Error>& elevated_error,
                                  const Caller& caller) {
  if (Trim(request.command).empty()) return InvalidRequest("Provide a command to start.");
  if (request.command.find('\0') != std::string::npos) {
    return InvalidRequest("The command contains a NUL byte.");
  }
  if (static_cast<int64_t>(request.command.size()) > kMaxCommandBytes) {
    return InvalidRequest("The command is too long (" + std::to_string(request.command.size()) +
                          " bytes; the limit is " + std::to_string(kMaxCommandBytes) + ").");
  }
  if (!configured_host_ok) {
    return Error::Refusal("invalid-config",
                          "Invalid tools.exec.host \"" + settings.exec.host +
                              "\". Allowed values: auto, sandbox, gateway, node.");
  }
  if (host_error.has_value()) return host_error;
  if (request.security.has_value() && !ParseSecurity(*request.security).has_value()) {
    return InvalidRequest("Invalid exec security \"" + *request.security +
                          "\". Allowed values: deny, allowlist, full.");
  }
  if (request.ask.has_value() && !ParseAsk(*request.ask).has_value()) {
    return InvalidRequest("Invalid exec ask \"" + *request.ask +
                          "\". Allowed values: off, on-miss, always.");
  }
  if (auto e = CheckTenantHostExecution(request, d, caller)) return e;
  if (elevated_error.has_value()) return elevated_error;
  if (auto e = CheckHostOverride(d.configured_host, d.requested_host, d.sandboxed)) return e;
  if (d.selected_host == Host::kSandbox && !d.sandboxed) {
    return Error::Refusal("sandbox-unavailable",
                          "exec host=sandbox requires a sandbox runtime for this session.\n"
                          "Enable sandbox mode (`agents.defaults.sandbox.mode=\"non-main\"` or "
                          "`\"all\"`) or use host=auto/gateway/node.");
  }
  if (auto e = CheckApproveCommand(request.command)) return e;
  if (d.effective_host == Host::kSandbox) {
    Result<EnvMap> env = ValidateSandboxEnvOverrides(request.env);
    if (!env) return env.error();
  } else {
    Result<EnvMap> env = ValidateHostEnvOverrides(request.env);
    if (!env) return env.error();
  }
  if (d.configured.security == config::Security::kDeny) {
    return Error::Refusal("denied", std::string("exec denied: host=") + HostName(d.effective_host) +
                                        " security=deny");
  }
  // Ids name scopes, containers and directories: invalid ones are refused, never rewritten.
  if (auto bad = ValidateCallerIds(caller)) return bad;
  if (d.effective_host == Host::kNode) {
    const std::string bound = Trim(settings.exec.node);
    const std::string asked = request.node.has_value() ? Trim(*request.node) : "";
    if (!bound.empty() && !asked.empty() && asked != bound) {
      return Error::Refusal("node-not-allowed", "exec node not allowed (bound to " + bound + ")");
    }
    return Error::Refusal("node-unavailable",
                          "exec host=node requires a paired node (none available). This requires a "
                          "companion app or node host.");
  }
  return std::nullopt;
}

Result<int64_t> TimeoutMs(const ExecRequest& request, const config::ExecSettings& exec) {
  // Keep far from int64 overflow; 2^53 ms is ~285000 years.
  constexpr double kMaxMs = 9007199254740992.0;
  if (request.timeout_seconds.has_value()) {
    const double sec = *request.timeout_seconds;
    if (std::isnan(sec)) return InvalidRequest("Invalid exec timeout: not a number.");
    if (sec <= 0) return int64_t{0};
    const double ms = std::floor(sec * 1000.0);
    if (ms >= kMaxMs) return static_cast<int64_t>(kMaxMs);
    return std::max<int64_t>(1, static_cast<int64_t>(ms));
  }
  if (exec.timeout_seconds <= 0) return int64_t{0};
  if (exec.timeout_seconds >= static_cast<int64_t>(kMaxMs / 1000)) {
    return static_cast<int64_t>(kMaxMs);
  }
  return exec.timeout_seconds * 1000;
}

int64_t ClampYield(int64_t ms) { return std::clamp<int64_t>(ms, 10, 120000); }

Result<GatedPlan> BuildSandboxPlan(GatedPlan out, const ExecRequest& request,
                                   const GateContext& ctx) {
  const config::AgentSettings& s = *ctx.settings;
  Result<exec::SandboxSpec> spec = BuildSandboxSpec(ctx, request);
  if (!spec) return spec.error();
  exec::Plan& p = out.plan;
  p.target = exec::Target::kSandbox;
  p.sandbox = std::move(spec).value();

  Result<EnvMap> overrides = ValidateSandboxEnvOverrides(request.env);
  if (!overrides) return overrides.error();
  EnvMap env;
  env["HOME"] = std::string(kSandboxHome);
  for (const auto& [k, v] : s.sandbox.docker.env) env[k] = v;
  for (const auto& [k, v] : *overrides) env[k] = v;
  std::optional<std::string> path = Lookup(request.env, "PATH");
  if (!path.has_value()) path = Lookup(s.sandbox.docker.env, "PATH");
  env.erase("PATH");
  env.erase("SANDRUN_PREPEND_PATH");  // the executor's carrier, never the caller's
  env["SANDRUN_SHELL"] = "exec";

  std::vector<std::string> prepend = NormalizePathPrepend(s.exec.path_prepend, env["HOME"]);
  if (path.has_value()) {
    for (std::string& e : SplitPathList(*path)) prepend.push_back(std::move(e));
  }
  p.prepend_path = JoinPathList(DedupePathEntries(prepend));
  p.env = std::move(env);

  // Probed below the mount's host dir, never through a link the container may have planted.
  DirBeneathFn beneath =
      ctx.host_probe.dir_beneath ? ctx.host_probe.dir_beneath : DefaultHostProbe().dir_beneath;
  SandboxWorkdir wd =
      MapSandboxWorkdir(request.workdir, p.sandbox.workdir, p.sandbox.workspace_host_dir, beneath);
  p.cwd = wd.container_dir;
  if (wd.warning.has_value()) p.warnings.push_back(*wd.warning);
  return out;
}

Result<GatedPlan> BuildGatewayPlan(GatedPlan out, const ExecRequest& request,
                                   const GateContext& ctx, const DirExistsFn& dir_exists,
                                   const IsExecutableFn& is_executable) {
  const config::AgentSettings& s = *ctx.settings;
  exec::Plan& p = out.plan;
  p.target = exec::Target::kGateway;

  Result<EnvMap> overrides = ValidateHostEnvOverrides(request.env);
  if (!overrides) return overrides.error();
  EnvMap env = SanitizeInheritedEnv(ctx.host_env);
  for (const auto& [k, v] : *overrides) env[k] = v;
  const std::string home = Lookup(ctx.host_env, "HOME").value_or("");
  const std::vector<std::string> prepend = NormalizePathPrepend(s.exec.path_prepend, home);
  const std::string login =
      NeedsLoginPath(out.decision, s, ctx.host_env) ? ctx.login_path : std::string();
  env["PATH"] = MergeGatewayPath(login, Lookup(ctx.host_env, "PATH"), prepend);
  env["SANDRUN_SHELL"] = "exec";
  const std::optional<std::string> shell_env = Lookup(ctx.host_env, "SHELL");
  p.shell = SelectGatewayShell(shell_env.value_or(""), env["PATH"], is_executable);
  p.env = std::move(env);

  // Workdir: the request's (relative to the workspace) or the workspace; it must be a directory.
  std::string base = ctx.workspace_dir.empty() ? ctx.cwd : ctx.workspace_dir;
  std::string wanted;
  if (request.workdir.has_value() && !Trim(*request.workdir).empty()) {
    const std::string& w = *request.workdir;
    wanted = w[0] == '/' ? w : (base.empty() ? w : base + "/" + w);
  } else {
    wanted = base;
  }
  if (!wanted.empty() && wanted[0] == '/') wanted = NormalizePosixPath(wanted);
  if (!wanted.empty() && wanted[0] == '/' && dir_exists(wanted)) {
    p.cwd = wanted;
  } else {
    std::string fallback = "/";
    for (const std::string& candidate : {ctx.workspace_dir, ctx.cwd, home}) {
      if (!candidate.empty() && candidate[0] == '/' && dir_exists(candidate)) {
        fallback = candidate;
        break;
      }
    }
    const std::string shown = request.workdir.has_value() ? *request.workdir : wanted;
    p.warnings.push_back("Warning: workdir \"" + shown + "\" is unavailable; using \"" + fallback +
                         "\".");
    p.cwd = fallback;
  }

  const bool elevated = out.decision.elevated != ElevatedMode::kOff;
  std::string profile = Trim(s.exec.host_profile);
  if (elevated && !Trim(s.elevated.host_profile).empty()) profile = Trim(s.elevated.host_profile);
  p.host_profile = profile.empty() ? "default" : profile;
  p.host_user = Trim(s.exec.host_user);
  return out;
}

}  // namespace

bool StatDirExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool StatIsExecutable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

Decision Decide(const config::AgentSettings& settings, const ExecRequest& request,
                const Caller& caller) {
  Decision d;
  d.sandboxed = IsSessionSandboxed(settings.sandbox, caller);
  const std::optional<Host> configured = ParseHost(settings.exec.host);
  d.configured_host = configured.value_or(Host::kAuto);

  Result<std::optional<Host>> requested = NormalizeRequestedHost(request.host);
  std::optional<Error> host_error;
  if (requested) {
    d.requested_host = *requested;
    // A session's /exec host stands in for a call that names none (checked the same way).
    if (!d.requested_host && caller.session_host)
      d.requested_host = ParseHost(*caller.session_host);
  } else {
    host_error = requested.error();
  }

  ElevatedResolution elevated =
      ResolveElevated(settings.elevated, request.elevated, caller, d.sandboxed);
  d.elevated = elevated.mode;
  const bool elevated_on = elevated.mode != ElevatedMode::kOff && !elevated.refusal.has_value();

  const ExecTarget target =
      SelectExecTarget(d.configured_host, d.requested_host, d.sandboxed, elevated_on);
  d.selected_host = target.selected;
  d.effective_host = target.effective;

  std::optional<config::Ask> requested_ask;
  if (request.ask.has_value()) requested_ask = ParseAsk(*request.ask);
  d.configured = ConfiguredSecurityAsk(settings.exec);
  d.effective = EffectiveSecurityAsk(d.configured, requested_ask,
                                     elevated_on ? elevated.mode : ElevatedMode::kOff);
  // An explicitly configured deny wins over everything, elevated full included.
  if (d.configured.security == config::Security::kDeny) {
    d.effective.security = config::Security::kDeny;
  }
  d.approvals_apply = d.effective_host != Host::kSandbox;
  d.needs_approval_flow =
      d.approvals_apply && d.effective.security != config::Security::kDeny &&
      (d.effective.security != config::Security::kFull || d.effective.ask != config::Ask::kOff);

  d.refusal = FirstRefusal(settings, request, d, configured.has_value(), host_error,
                           elevated.refusal, caller);
  return d;
}

bool NeedsLoginPath(const Decision& decision, const config::AgentSettings& settings,
                    const std::map<std::string, std::string>& host_env) {
  if (!decision.allowed()) return false;
  if (decision.effective_host != Host::kGateway || !settings.exec.login_shell_path) return false;
  if (auto v = Lookup(host_env, "SANDRUN_LOAD_SHELL_ENV")) {
    const std::string off = Lower(Trim(*v));
    if (off == "0" || off == "false" || off == "no" || off == "off") return false;
  }
  return true;
}

bool NeedsSeccompProfile(const Decision& decision) {
  return decision.allowed() && decision.effective_host == Host::kSandbox;
}

std::string SelectGatewayShell(const std::string& shell_env, const std::string& path,
                               const IsExecutableFn& is_executable) {
  // SelectShell with a lookup over the child's PATH through the injected probe; relative
  // PATH entries never name the shell.
  PathLookup lookup = [&](std::string_view name) -> std::string {
    for (const std::string& dir : SplitPathList(path)) {
      if (dir[0] != '/') continue;
      std::string candidate = dir + "/" + std::string(name);
      if (is_executable && is_executable(candidate)) return candidate;
    }
    return "";
  };
  return SelectShell(shell_env.c_str(), lookup);
}

Result<GatedPlan> BuildPlan(const Decision& decision, const ExecRequest& request,
                            const GateContext& ctx) {
  if (decision.refusal.has_value()) return *decision.refusal;
  if (ctx.settings == nullptr) {
    return Error::Refusal("invalid-config", "internal: the gate was called without settings.");
  }
  const config::AgentSettings& s = *ctx.settings;
  GatedPlan out;
  out.decision = decision;
  exec::Plan& p = out.plan;
  p.command = request.command;
  Result<int64_t> timeout = TimeoutMs(request, s.exec);
  if (!timeout) return timeout.error();
  p.timeout_ms = *timeout;
  p.pty = request.pty;
  const std::string term = Trim(Lookup(ctx.host_env, "TERM").value_or(""));
  if (!term.empty()) p.term = term;
  p.max_output_chars =
      s.exec.max_output_chars > 0 ? static_cast<size_t>(s.exec.max_output_chars) : size_t{200000};
  out.background = request.background;
  out.yield_ms = request.background
                     ? 0
                     : ClampYield(request.yield_ms.value_or(ClampYield(s.exec.background_ms)));

  const DirExistsFn dir_exists = ctx.dir_exists ? ctx.dir_exists : DirExistsFn(StatDirExists);
  const IsExecutableFn is_executable =
      ctx.is_executable ? ctx.is_executable : IsExecutableFn(StatIsExecutable);
  switch (decision.effective_host) {
    case Host::kSandbox:
      return BuildSandboxPlan(std::move(out), request, ctx);
    case Host::kGateway:
      return BuildGatewayPlan(std::move(out), request, ctx, dir_exists, is_executable);
    case Host::kAuto:
    case Host::kNode:
      break;
  }
  return Error::Refusal("node-unavailable",
                        "exec host=node requires a paired node (none available). This requires a "
                        "companion app or node host.");
}

Result<GatedPlan> Gate(const ExecRequest& request, const GateContext& ctx) {
  if (ctx.settings == nullptr) {
    return Error::Refusal("invalid-config", "internal: the gate was called without settings.");
  }
  return BuildPlan(Decide(*ctx.settings, request, ctx.caller), request, ctx);
}

}  // namespace sandrun::policy

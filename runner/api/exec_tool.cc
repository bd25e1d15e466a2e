#include "runner/api/exec_tool.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "runner/config/config.h"
#include "runner/config/state_dir.h"
#include "runner/policy/env_policy.h"
#include "runner/policy/gate.h"
#include "runner/policy/preflight.h"
#include "runner/policy/tool_policy.h"
#include "runner/sessions/manager.h"
#include "runner/sessions/process_request.h"
#include "sandbox/docker/client.h"
#include "sandbox/executors/docker_executor.h"
#include "sandbox/executors/host_executor.h"
#include "sandbox/executors/login_path.h"
#include "sandbox/harden/container_preset.h"
#include "sandbox/harden/seccomp_profile.h"

extern char** environ;

namespace sandrun::api {
namespace {

constexpr auto kLoginProbeTimeout = std::chrono::milliseconds(15000);

ExecToolResult Refused(std::string code, std::string message) {
  ExecToolResult r;
  r.refused = true;
  r.error = ToolError{std::move(code), std::move(message)};
  r.json = RenderError(r.error);
  return r;
}

ExecToolResult Internal(std::string message) {
  ExecToolResult r = Refused("internal", std::move(message));
  r.refused = false;
  r.internal = true;
  return r;
}

std::map<std::string, std::string> HostEnv() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

}  // namespace

std::string WorkspaceDir(const GlobalOptions& global, const config::AgentSettings& settings) {
  std::string dir = !global.workspace.empty() ? global.workspace : settings.workspace;
  std::error_code ec;
  if (dir.empty()) return std::filesystem::current_path(ec).string();
  auto absolute = std::filesystem::absolute(dir, ec);
  auto canonical = std::filesystem::weakly_canonical(absolute, ec);
  return ec ? absolute.string() : canonical.string();
}

std::string UserName(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  return pw != nullptr && pw->pw_name != nullptr ? pw->pw_name : std::to_string(uid);
}

policy::Caller CliCaller(const GlobalOptions& global) {
  policy::Caller caller;
  caller.provider = "cli";
  caller.sender = UserName(::geteuid());
  caller.agent_id = global.agent;
  caller.session_key = global.session.empty() ? "main" : global.session;
  return caller;
}

ExecToolResult RunExecTool(const GlobalOptions& global, const policy::Caller& caller,
                           const policy::ExecRequest& request, const exec::LiveSink& live,
                           const CancelToken* cancel, ExecServices* services) {
  auto state_dir = config::StateDirPath();
  if (!state_dir) return Internal(state_dir.error().ToString());
  if (auto ok = config::EnsureStateDir(*state_dir); !ok) return Internal(ok.error().ToString());
  auto cfg = config::LoadConfigFor(global.config_file, *state_dir);
  if (!cfg) return Refused("invalid-config", cfg.error().ToString());
  for (const auto& w : cfg->warnings) PrintWarning(w);
  config::AgentSettings settings = cfg->ForAgent(global.agent);

  // Tool policy (SPEC §6b): a denied exec runs nothing; a denied process tool means no
  // background sessions for this call.
  const policy::ToolPolicyLayers tools = {&cfg->global.tools, &settings.tools};
  if (auto denied = policy::CheckToolAllowed(tools, policy::kToolExec)) {
    return Refused(denied->code, denied->message);
  }
  const bool background_allowed = policy::IsToolAllowed(tools, policy::kToolProcess);

  policy::Decision decision = policy::Decide(settings, request, caller);
  if (!decision.allowed()) return Refused(decision.refusal->code, decision.refusal->message);

  policy::GateContext ctx;
  ctx.settings = &settings;
  ctx.caller = caller;
  ctx.state_dir = *state_dir;
  ctx.workspace_dir = WorkspaceDir(global, settings);
  std::error_code ec;
  ctx.cwd = std::filesystem::current_path(ec).string();
  ctx.host_env = HostEnv();
  if (policy::NeedsLoginPath(decision, settings, ctx.host_env)) {
    auto shell = ctx.host_env.find("SHELL");
    // On disk too: a one-shot CLI call must not start a login shell every time.
    auto login = exec::DiskCachedLoginPath(
        *state_dir + "/cache/login-path.json", shell == ctx.host_env.end() ? "" : shell->second,
        kLoginProbeTimeout, policy::SanitizeInheritedEnv(ctx.host_env));
    if (login) ctx.login_path = *login;  // OpenClaw goes on without it, and so do we
  }
  if (policy::NeedsSeccompProfile(decision)) {
    auto instance = config::LoadOrCreateInstanceId(*state_dir);
    if (!instance) return Internal(instance.error().ToString());
    ctx.instance_id = *instance;
    auto profile = harden::LoadSeccompProfileJson(harden::DefaultProfilesDir(),
                                                  settings.sandbox.docker.seccomp_profile);
    if (!profile) {
      return Refused(
          "sandbox-unavailable",
          "sandbox unavailable (seccomp profile), nothing was run: " + profile.error().ToString());
    }
    ctx.seccomp_profile_json = *profile;
    auto preset = harden::LoadContainerPreset(harden::DefaultProfilesDir(), "default");
    if (!preset) {
      return Refused(
          "sandbox-unavailable",
          "sandbox unavailable (container preset), nothing was run: " + preset.error().ToString());
    }
    ctx.tmpfs_options = preset->tmpfs;
  }
  auto gated = policy::BuildPlan(decision, request, ctx);
  if (!gated) return Refused(gated.error().code, gated.error().message);
  exec::Plan& plan = gated->plan;
  // Script preflight (reference §3.5) where OpenClaw runs it: gateway runs below full/off.
  if (policy::PreflightApplies(gated->decision)) {
    if (auto refused = policy::ScriptPreflight(request.command, plan.cwd)) {
      return Refused(refused->code, refused->message);
    }
  }
  bool background_available =
      services != nullptr && services->sessions != nullptr && background_allowed;
  if ((request.background || request.yield_ms) && !background_available) {
    // Background sessions outlive a call only through `sandrun serve` (SPEC §2.2), and only
    // while the tool policy allows `process` (OpenClaw's allowBackground).
    plan.warnings.push_back(std::string(policy::kBackgroundDisabledWarning));
  }

  ExecToolResult result;
  result.host = plan.target == exec::Target::kSandbox ? "sandbox" : "gateway";
  result.timeout_seconds = plan.timeout_ms / 1000;
  std::shared_ptr<exec::Executor> executor;
  if (plan.target == exec::Target::kSandbox) {
    if (services != nullptr && services->docker) {
      executor = services->docker;
    } else {
      auto client = docker::Client::FromEnvironment();
      if (!client) {
        return Refused("sandbox-unavailable",
                       "sandbox unavailable, nothing was run: " + client.error().ToString());
      }
      executor = std::make_shared<exec::DockerExecutor>(std::move(client).value());
      if (services != nullptr) services->docker = executor;
    }
  } else {
    executor = services != nullptr && services->host ? services->host
                                                     : std::make_shared<exec::HostExecutor>();
  }
  auto failed_to_start = [&](const Error& e) {
    return plan.target == exec::Target::kSandbox ? Refused("sandbox-unavailable", e.ToString())
                                                 : Refused("spawn-failed", e.ToString());
  };

  if (background_available) {
    // The server: every run has a yield window; past it (or at once with background:true) the
    // run becomes a background session and the call answers `running`.
    sessions::SessionMeta meta;
    meta.scope = sessions::Scope{services->tenant, caller.agent_id, caller.session_key};
    meta.command = request.command;
    meta.cwd = plan.cwd;
    meta.host = result.host;
    meta.pty = plan.pty;
    meta.timeout_ms = plan.timeout_ms;
    meta.notify_on_exit = settings.exec.notify_on_exit;
    meta.notify_on_exit_empty_success = settings.exec.notify_on_exit_empty_success;
    auto session = services->sessions->Begin(meta);
    if (!session) return Internal(session.error().ToString());
    auto process = executor->Start(plan, (*session)->Sink());
    if (!process) {
      services->sessions->Discard((*session)->id());
      return failed_to_start(process.error());
    }
    (*session)->Attach(std::move(process).value());
    if (!gated->background && (*session)->WaitFor(gated->yield_ms)) {
      auto outcome = (*session)->Outcome();
      services->sessions->Discard((*session)->id());
      if (!outcome) return Internal("the run ended without an outcome");
      result.outcome = std::move(*outcome);
    } else {
      (*session)->MarkBackgrounded();
      result.running = true;
      result.warnings = plan.warnings;
      result.json = sessions::RenderRunning(**session, result.warnings);
      return result;
    }
  } else {
    auto outcome = executor->Run(plan, live, cancel);
    if (!outcome) return failed_to_start(outcome.error());
    result.outcome = std::move(outcome).value();
  }

  result.warnings = plan.warnings;
  result.warnings.insert(result.warnings.end(), result.outcome.warnings.begin(),
                         result.outcome.warnings.end());
  result.json =
      RenderExecOutcome(result.outcome, result.host, result.timeout_seconds, result.warnings);
  return result;
}

}  // namespace sandrun::api

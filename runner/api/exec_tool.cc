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
#include "sandbox/docker/client.h"
#include "sandbox/executors/docker_executor.h"
#include "sandbox/executors/host_executor.h"
#include "sandbox/executors/login_path.h"
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

std::string UserName() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw != nullptr && pw->pw_name != nullptr ? pw->pw_name : std::to_string(::geteuid());
}

// --workspace, else agents.<id>.workspace, else the current directory; made absolute.
std::string WorkspaceDir(const GlobalOptions& global, const config::AgentSettings& settings) {
  std::string dir = !global.workspace.empty() ? global.workspace : settings.workspace;
  std::error_code ec;
  if (dir.empty()) return std::filesystem::current_path(ec).string();
  auto absolute = std::filesystem::absolute(dir, ec);
  auto canonical = std::filesystem::weakly_canonical(absolute, ec);
  return ec ? absolute.string() : canonical.string();
}

}  // namespace

ExecToolResult RunExecTool(const GlobalOptions& global, const policy::ExecRequest& request,
                           const exec::LiveSink& live, const CancelToken* cancel) {
  auto state_dir = config::StateDirPath();
  if (!state_dir) return Internal(state_dir.error().ToString());
  if (auto ok = config::EnsureStateDir(*state_dir); !ok) return Internal(ok.error().ToString());
  auto cfg = config::LoadConfigFor(global.config_file, *state_dir);
  if (!cfg) return Refused("invalid-config", cfg.error().ToString());
  for (const auto& w : cfg->warnings) PrintWarning(w);
  config::AgentSettings settings = cfg->ForAgent(global.agent);

  policy::Caller caller;
  caller.provider = "cli";
  caller.sender = UserName();
  caller.agent_id = global.agent;
  caller.session_key = global.session.empty() ? "main" : global.session;

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
    auto login =
        exec::CachedLoginPath(shell == ctx.host_env.end() ? "" : shell->second, kLoginProbeTimeout,
                              policy::SanitizeInheritedEnv(ctx.host_env));
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
  }
  auto gated = policy::BuildPlan(decision, request, ctx);
  if (!gated) return Refused(gated.error().code, gated.error().message);
  exec::Plan& plan = gated->plan;
  if (request.background || request.yield_ms) {
    // Background sessions outlive a call only through `sandrun serve` (SPEC §2.2).
    plan.warnings.push_back("Warning: background execution is disabled; running synchronously.");
  }

  ExecToolResult result;
  result.host = plan.target == exec::Target::kSandbox ? "sandbox" : "gateway";
  result.timeout_seconds = plan.timeout_ms / 1000;
  std::unique_ptr<exec::Executor> executor;
  if (plan.target == exec::Target::kSandbox) {
    auto client = docker::Client::FromEnvironment();
    if (!client) {
      return Refused("sandbox-unavailable",
                     "sandbox unavailable, nothing was run: " + client.error().ToString());
    }
    executor = std::make_unique<exec::DockerExecutor>(std::move(client).value());
  } else {
    executor = std::make_unique<exec::HostExecutor>();
  }
  auto outcome = executor->Run(plan, live, cancel);
  if (!outcome) {
    if (plan.target == exec::Target::kSandbox) {
      return Refused("sandbox-unavailable", outcome.error().ToString());
    }
    return Refused("spawn-failed", outcome.error().ToString());
  }
  result.outcome = std::move(outcome).value();
  result.warnings = plan.warnings;
  result.warnings.insert(result.warnings.end(), result.outcome.warnings.begin(),
                         result.outcome.warnings.end());
  result.json =
      RenderExecOutcome(result.outcome, result.host, result.timeout_seconds, result.warnings);
  return result;
}

}  // namespace sandrun::api

#include "runner/api/exec_tool.h"

#include <pwd.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "runner/api/approval_broker.h"
#include "runner/api/exec_approvals.h"
#include "runner/config/config.h"
#include "runner/config/state_dir.h"
#include "runner/policy/env_policy.h"
#include "runner/policy/env_strip.h"
#include "runner/policy/gate.h"
#include "runner/policy/preflight.h"
#include "runner/policy/tool_policy.h"
#include "runner/sessions/manager.h"
#include "runner/sessions/process_request.h"
#include "sandbox/base/strings.h"
#include "sandbox/docker/client.h"
#include "sandbox/executors/docker/docker_executor.h"
#include "sandbox/executors/host/host_executor.h"
#include "sandbox/executors/host/login_path.h"
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

Result<std::shared_ptr<sessions::Session>> BeginSession(ExecServices& services,
                                                        const policy::Caller& caller,
                                                        const exec::Plan& plan,
                                                        const BackgroundRun& run) {
  sessions::SessionMeta meta;
  meta.scope = sessions::Scope{services.tenant, caller.agent_id, caller.session_key};
  meta.command = run.command;
  meta.cwd = plan.cwd;
  meta.host = plan.target == exec::Target::kSandbox ? "sandbox" : "gateway";
  meta.pty = plan.pty;
  meta.timeout_ms = plan.timeout_ms;
  meta.notify_on_exit = run.notify_on_exit;
  meta.notify_on_exit_empty_success = run.notify_on_exit_empty_success;
  return services.sessions->Begin(meta);
}

}  // namespace

Result<std::string> StartBackgroundSession(ExecServices& services, const policy::Caller& caller,
                                           const exec::Plan& plan, const BackgroundRun& run) {
  std::shared_ptr<exec::Executor> executor =
      plan.target == exec::Target::kSandbox ? services.docker : services.host;
  if (services.sessions == nullptr || executor == nullptr) {
    return Error(ErrorCode::kConflict, "background sessions need `sandrun serve`");
  }
  SANDRUN_ASSIGN_OR_RETURN(auto session, BeginSession(services, caller, plan, run));
  auto process = executor->Start(plan, session->Sink());
  if (!process) {
    services.sessions->Discard(session->id());
    return std::move(process).error();
  }
  session->Attach(std::move(process).value());
  session->MarkBackgrounded();
  return session->id();
}

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
  caller.uid = ::geteuid();  // the name is looked up only when allowFrom needs it
  caller.agent_id = global.agent;
  caller.session_key = global.session.empty() ? "main" : global.session;
  return caller;
}

std::unique_ptr<PreparedCall> PrepareCall(const GlobalOptions& global, const policy::Caller& caller,
                                          const policy::ExecRequest& request, bool for_check) {
  auto call = std::make_unique<PreparedCall>();
  auto stop = [&](std::string code, std::string message, bool internal = false) {
    call->refusal = ToolError{std::move(code), std::move(message)};
    call->internal = internal;
    return std::move(call);
  };
  auto state_dir = config::StateDirPath();
  if (!state_dir) return stop("internal", state_dir.error().ToString(), true);
  call->state_dir = *state_dir;
  if (auto ok = config::EnsureStateDir(*state_dir); !ok) {
    return stop("internal", ok.error().ToString(), true);
  }
  auto cfg = config::LoadConfigFor(global.config_file, *state_dir);
  if (!cfg) return stop("invalid-config", cfg.error().ToString());
  for (const auto& w : cfg->warnings) PrintWarning(w);
  call->settings = cfg->ForAgent(global.agent);
  const config::AgentSettings& settings = call->settings;

  // Tool policy (SPEC §6b): a denied exec runs nothing; a denied process tool means no
  // background sessions for this call.
  const policy::ToolPolicyLayers tools = {&cfg->global.tools, &settings.tools};
  call->background_allowed = policy::IsToolAllowed(tools, policy::kToolProcess);
  policy::Caller who = caller;
  if (who.sender.empty() && who.uid >= 0 &&
      settings.elevated.allow_from.count(Trim(who.provider)) > 0) {
    who.sender = UserName(static_cast<uid_t>(who.uid));
  }
  call->decision = policy::Decide(settings, request, who);
  call->decided = true;
  if (auto denied = policy::CheckToolAllowed(tools, policy::kToolExec)) {
    return stop(denied->code, denied->message);
  }
  const policy::Decision& decision = call->decision;
  if (!decision.allowed()) return stop(decision.refusal->code, decision.refusal->message);

  policy::GateContext& ctx = call->ctx;
  ctx.settings = &call->settings;
  ctx.caller = who;
  ctx.state_dir = *state_dir;
  ctx.workspace_dir = WorkspaceDir(global, settings);
  std::error_code ec;
  ctx.cwd = std::filesystem::current_path(ec).string();
  ctx.host_env = HostEnv();
  if (decision.approvals_apply) {
    // Host commands do not inherit the runner's secrets or its own variables (profiles/env).
    auto strip = policy::LoadEnvStripProfile(harden::DefaultProfilesDir());
    if (!strip) return stop("invalid-config", strip.error().ToString());
    ctx.host_env =
        policy::StripInheritedSecrets(ctx.host_env, strip->strip, settings.exec.env_passthrough);
  }
  if (policy::NeedsLoginPath(decision, settings, ctx.host_env)) {
    auto shell = ctx.host_env.find("SHELL");
    // On disk too: a one-shot CLI call must not start a login shell every time.
    auto login = exec::DiskCachedLoginPath(
        *state_dir + "/cache/login-path.json", shell == ctx.host_env.end() ? "" : shell->second,
        kLoginProbeTimeout, policy::SanitizeInheritedEnv(ctx.host_env));
    if (login) ctx.login_path = *login;  // OpenClaw goes on without it, and so do we
  }
  if (policy::NeedsSeccompProfile(decision)) {
    if (for_check) return call;  // `policy check` never prepares a container
    auto instance = config::LoadOrCreateInstanceId(*state_dir);
    if (!instance) return stop("internal", instance.error().ToString(), true);
    ctx.instance_id = *instance;
    auto profile = harden::LoadSeccompProfileJson(harden::DefaultProfilesDir(),
                                                  settings.sandbox.docker.seccomp_profile);
    if (!profile) {
      return stop(
          "sandbox-unavailable",
          "sandbox unavailable (seccomp profile), nothing was run: " + profile.error().ToString());
    }
    ctx.seccomp_profile_json = *profile;
    auto preset = harden::LoadContainerPreset(harden::DefaultProfilesDir(), "default");
    if (!preset) {
      return stop(
          "sandbox-unavailable",
          "sandbox unavailable (container preset), nothing was run: " + preset.error().ToString());
    }
    ctx.tmpfs_options = preset->tmpfs;
  }
  auto gated = policy::BuildPlan(decision, request, ctx);
  if (!gated) return stop(gated.error().code, gated.error().message);
  call->gated = std::move(gated).value();
  // Script preflight (reference §3.5) where OpenClaw runs it: gateway runs below full/off.
  if (policy::PreflightApplies(call->gated->decision)) {
    if (auto refused = policy::ScriptPreflight(request.command, call->gated->plan.cwd)) {
      return stop(refused->code, refused->message);
    }
  }
  return call;
}

CallApprovalsInput ApprovalsInputFor(const PreparedCall& call, const policy::Caller& caller,
                                     const policy::ExecRequest& request) {
  CallApprovalsInput in;
  in.state_dir = call.state_dir;
  in.settings = &call.settings;
  in.agent_id = caller.agent_id;
  in.decision = &call.gated->decision;
  in.command = request.command;
  auto path = call.gated->plan.env.find("PATH");
  in.path = path == call.gated->plan.env.end() ? "" : path->second;
  in.cwd = call.gated->plan.cwd;
  auto home = call.ctx.host_env.find("HOME");
  in.home = home == call.ctx.host_env.end() ? "" : home->second;
  return in;
}

exec::HostExecutor::Options HostExecutorOptions(const GlobalOptions& global,
                                                const std::string& state_dir,
                                                const std::vector<std::string>& sockets) {
  exec::HostExecutor::Options options;
  options.cache_dir = state_dir + "/cache";  // a one-shot call reads the compiled filter
  auto absolute = [](const std::string& path) {
    if (path.empty()) return std::string();
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) != nullptr) return std::string(resolved);
    return path[0] == '/' ? path : std::string();
  };
  for (const std::string& path : {state_dir, global.server}) {
    if (std::string p = absolute(path); !p.empty()) options.masked_paths.push_back(p);
  }
  for (const std::string& path : sockets) {
    if (std::string p = absolute(path); !p.empty()) options.masked_paths.push_back(p);
  }
  const char* docker_host = std::getenv("DOCKER_HOST");
  if (docker_host != nullptr && std::string_view(docker_host).rfind("unix://", 0) == 0) {
    if (std::string p = absolute(docker_host + 7); !p.empty()) options.masked_paths.push_back(p);
  }
  if (std::string p = absolute(global.config_file); !p.empty()) {
    options.read_only_paths.push_back(p);
  }
  return options;
}

ExecToolResult RunExecTool(const GlobalOptions& global, const policy::Caller& caller,
                           const policy::ExecRequest& request, const exec::LiveSink& live,
                           const CancelToken* cancel, ExecServices* services) {
  std::unique_ptr<PreparedCall> call = PrepareCall(global, caller, request, false);
  if (call->refusal) {
    return call->internal ? Internal(call->refusal->message)
                          : Refused(call->refusal->code, call->refusal->message);
  }
  const std::string& state_dir = call->state_dir;
  const config::AgentSettings& settings = call->settings;
  const bool background_allowed = call->background_allowed;
  std::optional<policy::GatedPlan>& gated = call->gated;
  exec::Plan& plan = gated->plan;
  bool background_available =
      services != nullptr && services->sessions != nullptr && background_allowed;
  const std::string host_name =
      plan.target == exec::Target::kSandbox ? "sandbox" : HostName(gated->decision.effective_host);
  if (gated->decision.approvals_apply) {
    // SPEC §6.5: allowlist, approvals file and inline eval decide what (if anything) runs.
    CallApprovalsInput in = ApprovalsInputFor(*call, caller, request);
    auto evaluated = EvaluateCallApprovals(in);
    if (!evaluated) return Refused("invalid-config", evaluated.error().ToString());
    for (const auto& w : evaluated->warnings) PrintWarning(w);
    policy::ApprovalVerdict& v = evaluated->verdict;
    plan.warnings.insert(plan.warnings.end(), v.warnings.begin(), v.warnings.end());
    if (v.verdict == policy::Verdict::kDeny) return Refused(v.code, v.reason);
    if (v.verdict == policy::Verdict::kAsk && settings.exec.mode == config::ExecMode::kAuto &&
        !settings.exec.reviewer.command.empty() && ReviewerEligible(v)) {
      ReviewerResult review =
          RunReviewer(settings.exec.reviewer, ReviewerPlanJson(v, host_name, plan.cwd, caller));
      if (review.answer == ReviewerAnswer::kDeny) {
        return Refused("denied", "exec denied: the reviewer denied it (mode auto)");
      }
      if (review.answer == ReviewerAnswer::kAllow) {
        v.verdict = policy::Verdict::kAllow;  // single use: nothing is persisted
        plan.warnings.push_back("Warning: the reviewer allowed this command once (mode auto).");
      } else {
        plan.warnings.push_back("Warning: " + review.note + "; an operator must decide.");
      }
    }
    if (v.verdict == policy::Verdict::kAsk) {
      if (background_available && services->approvals != nullptr) {
        PendingApproval pending;
        pending.timeout_ms = settings.exec.approval_timeout_ms;
        pending.tenant = services->tenant;
        pending.caller = caller;
        pending.host = host_name;
        pending.command = request.command;
        pending.gated = *gated;
        pending.verdict = v;
        pending.notify_on_exit = settings.exec.notify_on_exit;
        pending.notify_on_exit_empty_success = settings.exec.notify_on_exit_empty_success;
        PendingApproval registered = services->approvals->Register(std::move(pending));
        ExecToolResult result;
        result.pending = true;
        result.host = host_name;
        result.warnings = plan.warnings;
        result.json =
            RenderApprovalPending({registered.id, registered.expires_ms, host_name, request.command,
                                   plan.cwd, v.allowed_decisions, plan.warnings});
        return result;
      }
      // No route to an operator (the one-shot CLI): askFallback decides now.
      policy::FallbackOutcome fallback = policy::ResolveAskFallback(v);
      if (!fallback.approved)
        return Refused("approval-required", HeadlessDenial(v, fallback.reason));
      plan.command = fallback.command;
      plan.warnings.push_back(std::string("Warning: approval needed (") + v.reason +
                              ") but no operator can answer without `sandrun serve`; askFallback=" +
                              policy::SecurityName(v.ask_fallback) + " allowed it.");
    } else {
      plan.command = v.command;
    }
    if (Status used = RecordApprovalUse(state_dir, *evaluated, request.command); !used) {
      PrintWarning("the approvals file was not updated: " + used.error().ToString());
    }
  }
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
    if (services != nullptr && services->host) {
      executor = services->host;
    } else {
      executor = std::make_shared<exec::HostExecutor>(HostExecutorOptions(global, state_dir));
    }
  }
  auto failed_to_start = [&](const Error& e) {
    return plan.target == exec::Target::kSandbox ? Refused("sandbox-unavailable", e.ToString())
                                                 : Refused("spawn-failed", e.ToString());
  };

  if (background_available) {
    // The server: every run has a yield window; past it (or at once with background:true) the
    // run becomes a background session and the call answers `running`.
    BackgroundRun run{request.command, settings.exec.notify_on_exit,
                      settings.exec.notify_on_exit_empty_success};
    auto session = BeginSession(*services, caller, plan, run);
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

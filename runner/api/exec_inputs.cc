#include "runner/api/exec_inputs.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "runner/api/exec_approvals.h"
#include "runner/api/tool_call.h"
#include "runner/config/config.h"
#include "runner/config/state_dir.h"
#include "runner/policy/env_policy.h"
#include "runner/policy/env_strip.h"
#include "sandbox/base/strings.h"
#include "sandbox/executors/host/login_path.h"
#include "sandbox/harden/container_preset.h"
#include "sandbox/harden/seccomp_profile.h"

extern char** environ;

namespace sandrun::api {
namespace {

constexpr auto kLoginProbeTimeout = std::chrono::milliseconds(15000);

std::map<std::string, std::string> HostEnv() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

// The approvals file resolved for the agent, and the safe-bin profiles when the allowlist can
// matter (not for security=full, ask=off without strictInlineEval).
Status LoadApprovalsInputs(LoadedCall& call, const policy::Decision& decision,
                           const std::string& agent, bool analyse_always) {
  SANDRUN_ASSIGN_OR_RETURN(config::LoadedApprovals loaded,
                           config::LoadApprovals(config::ApprovalsPath(call.state_dir)));
  call.diagnostics.insert(call.diagnostics.end(), loaded.warnings.begin(), loaded.warnings.end());
  config::ResolvedApprovals resolved = config::ResolveApprovals(
      loaded.file, agent, decision.effective.security, decision.effective.ask);
  // tools.exec.autoAllowSkills is the default the file's own value overrides.
  if (resolved.sources["autoAllowSkills"] == "built-in") {
    resolved.auto_allow_skills = call.settings.exec.auto_allow_skills;
  }
  const bool full_off =
      std::min(decision.effective.security, resolved.security) == config::Security::kFull &&
      std::max(decision.effective.ask, resolved.ask) == config::Ask::kOff &&
      !call.settings.exec.strict_inline_eval;
  if (!full_off || analyse_always) {
    SANDRUN_ASSIGN_OR_RETURN(call.inputs.safe_bin_profiles, BuiltinSafeBinProfiles());
  }
  call.inputs.approvals = std::move(resolved);
  return Ok();
}

// A state dir that is unsafe (another owner, a wide mode) or cannot be named (no HOME, a
// relative SANDRUN_HOME) is the caller's setting to fix: a refusal (exit 125). An OS failure
// creating or reading it is sandrun's (internal, exit 121).
Error StateDirFailure(Error e) {
  if (e.code == ErrorCode::kConflict || e.code == ErrorCode::kInvalidArgument ||
      e.code == ErrorCode::kNotFound) {
    return Error::Refusal("invalid-config", e.ToString());
  }
  return std::move(e).WithWire("internal");
}

}  // namespace

std::string WorkspaceDir(const GlobalOptions& global, const config::AgentSettings& settings) {
  std::string dir = !global.workspace.empty() ? global.workspace : settings.workspace;
  std::error_code ec;
  if (dir.empty()) {
    return !global.cwd.empty() ? global.cwd : std::filesystem::current_path(ec).string();
  }
  auto absolute = std::filesystem::absolute(dir, ec);
  auto canonical = std::filesystem::weakly_canonical(absolute, ec);
  return ec ? absolute.string() : canonical.string();
}

std::string UserName(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  return pw != nullptr && pw->pw_name != nullptr ? pw->pw_name : std::to_string(uid);
}

std::unique_ptr<LoadedCall> LoadExecInputs(const GlobalOptions& global,
                                           const policy::Caller& caller,
                                           const policy::ExecRequest& request, Purpose purpose) {
  auto call = std::make_unique<LoadedCall>();
  auto fail = [&](Error e) {
    call->failure = std::move(e);
    return std::move(call);
  };
  auto state_dir = config::StateDirPath();
  if (!state_dir) return fail(StateDirFailure(std::move(state_dir).error()));
  call->state_dir = *state_dir;
  if (auto ok = config::EnsureStateDir(*state_dir); !ok) {
    return fail(StateDirFailure(std::move(ok).error()));
  }
  auto cfg = config::LoadConfigFor(global.config_file, *state_dir);
  if (!cfg) return fail(Error::Refusal("invalid-config", cfg.error().ToString()));
  call->diagnostics = cfg->warnings;
  call->settings = cfg->ForAgent(global.agent);
  const config::AgentSettings& settings = call->settings;

  policy::DecisionInputs& in = call->inputs;
  call->global_tools = cfg->global.tools;
  in.tools = {&call->global_tools, &settings.tools};
  in.analyse_always = purpose == Purpose::kCheck;
  policy::GateContext& ctx = in.ctx;
  ctx.settings = &call->settings;
  ctx.caller = caller;
  if (ctx.caller.sender.empty() && ctx.caller.uid >= 0 &&
      settings.elevated.allow_from.count(Trim(ctx.caller.provider)) > 0) {
    ctx.caller.sender = UserName(static_cast<uid_t>(ctx.caller.uid));
  }
  ctx.state_dir = *state_dir;
  ctx.workspace_dir = WorkspaceDir(global, settings);
  std::error_code ec;
  ctx.cwd = !global.cwd.empty() ? global.cwd : std::filesystem::current_path(ec).string();
  ctx.host_env = HostEnv();

  // What the decision will read depends on where the call goes: decide that much first.
  const policy::Decision where = policy::Decide(settings, request, ctx.caller);
  if (!where.allowed()) return call;  // DecideExec refuses it again, with nothing loaded
  if (where.approvals_apply) {
    // Host commands do not inherit the runner's secrets or its own variables (profiles/env).
    auto strip = policy::LoadEnvStripProfile(harden::DefaultProfilesDir());
    if (!strip) return fail(Error::Refusal("invalid-config", strip.error().ToString()));
    ctx.host_env =
        policy::StripInheritedSecrets(ctx.host_env, strip->strip, settings.exec.env_passthrough);
    if (Status ok = LoadApprovalsInputs(*call, where, global.agent, in.analyse_always); !ok) {
      return fail(Error::Refusal("invalid-config", ok.error().ToString()));
    }
  }
  if (policy::NeedsLoginPath(where, settings, ctx.host_env)) {
    auto shell = ctx.host_env.find("SHELL");
    // On disk too: a one-shot CLI call must not start a login shell every time.
    auto login = exec::DiskCachedLoginPath(
        *state_dir + "/cache/login-path.json", shell == ctx.host_env.end() ? "" : shell->second,
        kLoginProbeTimeout, policy::SanitizeInheritedEnv(ctx.host_env));
    if (login) ctx.login_path = *login;  // OpenClaw goes on without it, and so do we
  }
  if (policy::NeedsSeccompProfile(where)) {
    if (purpose == Purpose::kExec) {
      auto instance = config::LoadOrCreateInstanceId(*state_dir);
      if (!instance) return fail(std::move(instance).error().WithWire("internal"));
      ctx.instance_id = *instance;
    }
    auto profile = harden::LoadSeccompProfileJson(harden::DefaultProfilesDir(),
                                                  settings.sandbox.docker.seccomp_profile);
    if (!profile) {
      return fail(Error::Refusal(
          "sandbox-unavailable",
          "sandbox unavailable (seccomp profile), nothing was run: " + profile.error().ToString()));
    }
    ctx.seccomp_profile_json = *profile;
    auto preset = harden::LoadContainerPreset(harden::DefaultProfilesDir(), "default");
    if (!preset) {
      return fail(Error::Refusal(
          "sandbox-unavailable",
          "sandbox unavailable (container preset), nothing was run: " + preset.error().ToString()));
    }
    ctx.tmpfs_options = preset->tmpfs;
  }
  return call;
}

}  // namespace sandrun::api

#include "runner/api/exec_inputs.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>

#include "runner/api/exec_approvals.h"
#include "runner/api/tool_call.h"
#include "runner/config/approvals_file.h"
#include "runner/config/config.h"
#include "runner/config/ids.h"
#include "runner/config/session_state.h"
#include "runner/config/state_dir.h"
#include "runner/policy/env_policy.h"
#include "runner/policy/env_strip.h"
#include "runner/policy/sandbox_spec.h"
#include "runner/policy/session_overrides.h"
#include "runner/policy/tool_policy.h"
#include "sandbox/base/strings.h"
#include "sandbox/executors/host/login_path.h"
#include "sandbox/harden/container_preset.h"
#include "sandbox/harden/seccomp_profile.h"
#include "sandbox/os/data_dir.h"
#include "sandbox/os/host_path.h"

extern char** environ;

namespace sandrun::api {
namespace {

// 12 hex digits of kernel randomness: names an `rm` call's own scope (nobody can guess or reuse
// it to reach another call's container).
std::string FreshCallId() {
  unsigned char bytes[6] = {};
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  // getrandom failed (it does not on Linux >= 3.17): the clock still separates calls.
  if (got < sizeof bytes)
    id = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  return id;
}

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
  SANDRUN_ASSIGN_OR_RETURN(
      config::LoadedApprovals loaded,
      config::LoadApprovals(config::ApprovalsPath(call.state_dir, call.inputs.ctx.caller.tenant)));
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

// "uid:gid" (or "uid") with numbers only: the ids; anything else (a user name) nullopt.
std::optional<std::pair<uid_t, gid_t>> NumericUser(const std::string& user) {
  const size_t colon = user.find(':');
  const std::string u = user.substr(0, colon);
  const std::string g = colon == std::string::npos ? u : user.substr(colon + 1);
  auto number = [](const std::string& t) -> std::optional<unsigned long> {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    return std::stoul(t);
  };
  auto uid = number(u), gid = number(g);
  if (!uid || !gid) return std::nullopt;
  return std::make_pair(static_cast<uid_t>(*uid), static_cast<gid_t>(*gid));
}

}  // namespace

CallSettings SettingsForCall(const config::Config& cfg, const std::string& tenant,
                             const std::string& agent) {
  CallSettings out;
  if (tenant.empty()) {
    out.settings = cfg.ForAgent(agent);
    out.global_tools = cfg.global.tools;
    return out;
  }
  const config::TenantConfig layer = cfg.ForTenant(tenant);
  out.settings = layer.ForAgent(agent);
  out.global_tools = layer.global.tools;
  out.host_execution = layer.host_execution;
  out.max_containers = layer.quotas.max_containers;
  return out;
}

std::optional<Error> ToolPolicyRefusal(const config::Config& cfg, const std::string& tenant,
                                       const std::string& agent, std::string_view tool) {
  const CallSettings picked = SettingsForCall(cfg, tenant, agent);
  return policy::CheckToolAllowed({&picked.global_tools, &picked.settings.tools}, tool);
}

std::string TenantWorkspacePath(const std::string& state_dir, const std::string& tenant,
                                const std::string& agent) {
  return config::TenantStateDir(state_dir, tenant) + "/workspaces/" + agent;
}

Result<std::string> CallWorkspaceDir(const GlobalOptions& global, const policy::Caller& caller,
                                     const config::AgentSettings& settings,
                                     const std::string& state_dir) {
  if (caller.tenant.empty()) return WorkspaceDir(global, settings);
  if (!global.workspace.empty()) {
    return Error::Refusal("forbidden",
                          "tenant \"" + caller.tenant + "\" cannot choose a workspace (\"" +
                              global.workspace + "\"): its agents work in " +
                              TenantWorkspacePath(state_dir, caller.tenant, "<agent>"));
  }
  // The ids become directory names: checked before anything is made.
  if (auto bad = config::TenantIdError(caller.tenant)) {
    return Error::Refusal("invalid-request", *bad);
  }
  if (auto bad = config::AgentIdError(caller.agent_id)) {
    return Error::Refusal("invalid-request", *bad);
  }
  if (state_dir.empty() || state_dir[0] != '/') {
    return Error::Refusal("invalid-config", "the state dir ($SANDRUN_HOME) is not absolute.");
  }
  const std::string dir = TenantWorkspacePath(state_dir, caller.tenant, caller.agent_id);
  auto made = MakeDirsNoSymlinks(dir, 0700);
  if (!made) {
    return std::move(made).error().Wrap("cannot prepare the tenant's workspace " + dir);
  }
  if (::geteuid() == 0) {
    // A directory root made is root's, and the sandbox never runs as root by default: give it
    // to the user the sandbox would run as (as the scratch dirs are), not through any link.
    auto ids = NumericUser(policy::SandboxUser(settings.sandbox.docker, 0, 0));
    auto info = InspectFd(made->get(), dir);
    if (ids && info && (info->uid != ids->first || info->gid != ids->second) &&
        ::fchownat(made->get(), "", ids->first, ids->second, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) !=
            0) {
      return Error::FromErrno(
          errno, "cannot give the tenant's workspace " + dir + " to " + std::to_string(ids->first));
    }
  }
  return dir;
}

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
  CallSettings picked = SettingsForCall(*cfg, caller.tenant, global.agent);
  call->settings = std::move(picked.settings);
  const config::AgentSettings& settings = call->settings;

  policy::DecisionInputs& in = call->inputs;
  call->global_tools = std::move(picked.global_tools);
  in.tools = {&call->global_tools, &settings.tools};
  in.analyse_always = purpose == Purpose::kCheck;
  policy::GateContext& ctx = in.ctx;
  ctx.settings = &call->settings;
  ctx.caller = caller;
  ctx.caller.host_execution = picked.host_execution;
  ctx.max_containers = picked.max_containers;
  if (ctx.caller.sender.empty() && ctx.caller.uid >= 0 &&
      settings.elevated.allow_from.count(Trim(ctx.caller.provider)) > 0) {
    ctx.caller.sender = UserName(static_cast<uid_t>(ctx.caller.uid));
  }
  ctx.state_dir = *state_dir;
  if (request.rm && purpose != Purpose::kCheck) ctx.call_id = FreshCallId();
  // What an operator set for this session (`/exec`, `/elevated`, the session API) applies to
  // every call of it (policy/session_overrides.h); an unreadable state file refuses the call.
  auto session = config::LoadSessionState(config::SessionStatePath(*state_dir, caller.tenant),
                                          caller.agent_id, caller.session_key);
  if (!session) return fail(Error::Refusal("invalid-config", session.error().ToString()));
  policy::ApplySessionState(*session, &call->settings, &ctx.caller);
  // A tenant's workspace is made here for `policy check` too: the verdict must be exec's.
  auto workspace = CallWorkspaceDir(global, caller, settings, *state_dir);
  if (!workspace) {
    Error e = std::move(workspace).error();
    return fail(e.code == ErrorCode::kRefused ? std::move(e) : std::move(e).WithWire("internal"));
  }
  ctx.workspace_dir = *workspace;
  std::error_code ec;
  // A tenant has no say in the runner's cwd, nor sees it: its workspace is its fallback too.
  ctx.cwd = !caller.tenant.empty() ? ctx.workspace_dir
            : !global.cwd.empty()  ? global.cwd
                                   : std::filesystem::current_path(ec).string();
  ctx.host_env = HostEnv();

  // What the decision will read depends on where the call goes: decide that much first.
  const policy::Decision where = policy::Decide(settings, request, ctx.caller);
  if (!where.allowed()) return call;  // DecideExec refuses it again, with nothing loaded
  // Every call that runs reads profiles: a missing directory (a damaged install) is named once,
  // before any loader reports one of its files.
  if (Status data = CheckDataDir(FindDataDir(DataKind::kProfiles)); !data) {
    return fail(Error::Refusal("invalid-config", "sandrun's profiles: " + data.error().message +
                                                     "; " + DataDirFix(DataKind::kProfiles)));
  }
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

#include "runner/policy/sandbox_spec.h"

#include <unistd.h>

#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "runner/config/ids.h"
#include "runner/policy/env_policy.h"
#include "runner/policy/host_checks.h"
#include "sandbox/base/strings.h"

namespace sandrun::policy {
namespace {

Error ConfigError(std::string message) {
  return Error::Refusal("invalid-config", std::move(message));
}

// "~" and "~/x" against `home`; nullopt when there is a tilde but no home.
std::optional<std::string> ExpandTilde(const std::string& path, const std::string& home) {
  if (path != "~" && path.rfind("~/", 0) != 0) return path;
  if (home.empty()) return std::nullopt;
  return home + path.substr(1);
}

const char* AccessName(config::WorkspaceAccess access) {
  return access == config::WorkspaceAccess::kRo ? "ro" : "rw";
}

// The probe with every empty member replaced by the real one.
HostProbe Completed(const HostProbe& given) {
  HostProbe real = DefaultHostProbe();
  if (given.inspect) real.inspect = given.inspect;
  if (given.inspect_real) real.inspect_real = given.inspect_real;
  if (given.dir_beneath) real.dir_beneath = given.dir_beneath;
  if (given.uid >= 0) real.uid = given.uid;
  if (given.gid >= 0) real.gid = given.gid;
  return real;
}

// The scratch root: sandbox.workspaceRoot (checked like a workspace by its text) or
// <state>/sandboxes.
Result<std::string> ScratchRoot(const GateContext& ctx, const std::string& home) {
  const config::SandboxSettings& sb = ctx.settings->sandbox;
  if (Trim(sb.workspace_root).empty()) {
    if (ctx.state_dir.empty() || ctx.state_dir[0] != '/') {
      return ConfigError("the state dir ($SANDRUN_HOME) is not an absolute path.");
    }
    return NormalizePosixPath(ctx.state_dir + "/sandboxes");
  }
  std::optional<std::string> expanded = ExpandTilde(Trim(sb.workspace_root), home);
  if (!expanded.has_value() || (*expanded)[0] != '/') {
    return ConfigError("sandbox.workspaceRoot \"" + sb.workspace_root +
                       "\" must be an absolute path.");
  }
  const std::string root = NormalizePosixPath(*expanded);
  if (auto why = BlockedPathReason(root, home)) {
    return ConfigError("sandbox.workspaceRoot \"" + root + "\" " + *why + ".");
  }
  return root;
}

// The real workspace for ro/rw: checked by text, then resolved and checked by identity.
Result<HostPathInfo> CheckedWorkspace(const GateContext& ctx, const HostProbe& probe,
                                      const std::string& home) {
  const config::WorkspaceAccess access = ctx.settings->sandbox.workspace_access;
  const std::string what = std::string("sandbox.workspaceAccess \"") + AccessName(access) + "\"";
  if (ctx.workspace_dir.empty() || ctx.workspace_dir[0] != '/') {
    return ConfigError(what + " needs the agent's workspace directory (absolute), got \"" +
                       ctx.workspace_dir + "\".");
  }
  const std::string ws = NormalizePosixPath(ctx.workspace_dir);
  const std::string refused = what + ": the workspace \"" + ws + "\" cannot be mounted: it ";
  if (ws == "/") return ConfigError(refused + "is the whole host.");
  if (auto why = BlockedPathReason(ws, home)) return ConfigError(refused + *why + ".");
  if (auto why = StateDirReason(ws, ctx.state_dir, /*workspace=*/true)) {
    return ConfigError(refused + *why + ".");
  }
  Result<HostPathInfo> info = probe.inspect(ws);
  if (!info) return ConfigError(refused + "does not resolve: " + info.error().ToString() + ".");
  if (!info->IsDirectory()) return ConfigError(refused + "is not a directory.");
  if (auto why = BlockedIdentityReason(*info, home, probe)) {
    return ConfigError(refused + *why + ".");
  }
  if (auto why = StateDirIdentityReason(*info, ctx.state_dir, /*workspace=*/true, probe)) {
    return ConfigError(refused + *why + ".");
  }
  return std::move(info).value();
}

// One bind: its text (ValidateBind), then the object its source resolves to.
Result<exec::HostMountSpec> CheckedBind(const std::string& bind, const GateContext& ctx,
                                        const HostProbe& probe, const std::string& home,
                                        const std::string& workdir,
                                        const std::vector<std::string>& writable_roots) {
  Result<std::string> text = ValidateBind(bind, home, workdir);
  if (!text) return text.error();
  exec::HostMountSpec m = ParseValidatedBind(*text);
  const std::string refused =
      "sandbox.docker.binds entry \"" + bind + "\": the source \"" + m.source + "\" ";
  if (auto why = StateDirReason(m.source, ctx.state_dir, /*workspace=*/false)) {
    return ConfigError(refused + *why + ".");
  }
  for (const std::string& root : writable_roots) {
    if (PathIsWithin(m.source, root)) {
      return ConfigError(refused + "lies where the sandbox can write (" + root +
                         "): it could be replaced before the next container is created.");
    }
  }
  Result<HostPathInfo> info = probe.inspect(m.source);
  if (!info) return ConfigError(refused + "does not resolve: " + info.error().ToString() + ".");
  if (auto why = SourceKindReason(*info)) return ConfigError(refused + *why + ".");
  if (auto why = BlockedIdentityReason(*info, home, probe)) {
    return ConfigError(refused + *why + ".");
  }
  if (auto why = StateDirIdentityReason(*info, ctx.state_dir, /*workspace=*/false, probe)) {
    return ConfigError(refused + *why + ".");
  }
  for (const std::string& root : writable_roots) {
    if (auto why = InsideByIdentity(*info, root, probe)) {
      return ConfigError(refused + "lies where the sandbox can write (" + root + ", " + *why +
                         "): it could be replaced before the next container is created.");
    }
  }
  m.id = info->id;
  return m;
}

}  // namespace

namespace {

std::string LocalScopeKey(config::SandboxScope scope, const Caller& caller) {
  switch (scope) {
    case config::SandboxScope::kShared:
      return "shared";
    case config::SandboxScope::kSession: {
      std::string key = Trim(caller.session_key);
      return key.empty() ? "main" : key;
    }
    case config::SandboxScope::kAgent: {
      std::string id = Trim(caller.agent_id);
      return "agent:" + (id.empty() ? std::string("main") : id);
    }
  }
  return "shared";
}

}  // namespace

std::string SandboxScopeKey(config::SandboxScope scope, const Caller& caller) {
  // '/' is in no tenant id, agent id or session key: "<tenant>/<key>" can never be another
  // tenant's key, nor a key of tenant "" (whose keys stay as they were).
  const std::string key = LocalScopeKey(scope, caller);
  return caller.tenant.empty() ? key : caller.tenant + "/" + key;
}

std::optional<Error> SessionScopeKeyError(const std::string& session_key) {
  const bool agent_key =
      session_key.starts_with("agent:") && !config::AgentIdError(session_key.substr(6)).has_value();
  if (session_key != "shared" && !agent_key) return std::nullopt;
  return Error::Refusal("invalid-request",
                        "session key \"" + session_key + "\" names another scope's sandbox (" +
                            (agent_key ? "an agent's" : "the shared one") +
                            ") under sandbox.scope \"session\"; use another session key "
                            "(nothing was run).");
}

std::optional<Error> ValidateCallerIds(const Caller& caller) {
  if (auto bad = config::CallerIdsError(caller.agent_id, caller.session_key)) {
    return Error::Refusal("invalid-request", *bad);
  }
  if (!caller.tenant.empty()) {
    if (auto bad = config::TenantIdError(caller.tenant)) {
      return Error::Refusal("invalid-request", *bad);
    }
  }
  return std::nullopt;
}

std::string NormalizePosixPath(std::string_view path) {
  const bool absolute = !path.empty() && path[0] == '/';
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string part(path.substr(start, end - start));
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
      } else if (!absolute) {
        parts.push_back(part);
      }
      continue;
    }
    parts.push_back(std::move(part));
  }
  std::string out = absolute ? "/" : "";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += "/";
    out += parts[i];
  }
  return out.empty() ? "." : out;
}

bool PathIsWithin(std::string_view path, std::string_view root) {
  std::string p = NormalizePosixPath(path);
  std::string r = NormalizePosixPath(root);
  if (r == "/") return !p.empty() && p[0] == '/';
  return p == r || (p.size() > r.size() && p.compare(0, r.size(), r) == 0 && p[r.size()] == '/');
}

std::string ScratchWorkspaceDir(const std::string& root, config::SandboxScope,
                                const std::string& scope_key) {
  std::string r = NormalizePosixPath(root);
  return (r == "/" ? std::string("") : r) + "/" + ScopeDirName(scope_key);
}

Result<std::string> ScopeScratchDir(const config::AgentSettings& settings,
                                    const std::string& state_dir, const std::string& home,
                                    const std::string& scope_key) {
  if (settings.sandbox.workspace_access != config::WorkspaceAccess::kNone) return std::string();
  GateContext ctx;
  ctx.settings = &settings;
  ctx.state_dir = state_dir;
  SANDRUN_ASSIGN_OR_RETURN(std::string root, ScratchRoot(ctx, home));
  return ScratchWorkspaceDir(root, settings.sandbox.scope, scope_key);
}

std::optional<Error> ValidateDockerSecurity(const config::DockerSettings& docker) {
  const std::string network = Lower(Trim(docker.network));
  if (network == "host") {
    return ConfigError(
        "sandbox.docker.network \"host\" is not allowed: the sandbox must not share the host's "
        "network namespace.");
  }
  if (network.rfind("container:", 0) == 0) {
    return ConfigError("sandbox.docker.network \"" + docker.network +
                       "\" is not allowed: joining another container's network namespace "
                       "escapes the sandbox.");
  }
  if (Lower(Trim(docker.seccomp_profile)) == "unconfined") {
    return ConfigError(
        "sandbox.docker.seccompProfile \"unconfined\" is not allowed: the sandbox always runs "
        "under a seccomp filter.");
  }
  if (Lower(Trim(docker.apparmor_profile)) == "unconfined") {
    return ConfigError("sandbox.docker.apparmorProfile \"unconfined\" is not allowed.");
  }
  return std::nullopt;
}

const std::map<std::string, std::string>& DefaultTmpfsOptions() {
  static const std::map<std::string, std::string> kOptions = {
      {"/tmp", "rw,exec,nosuid,nodev,size=256m,mode=1777"},
      {"/var/tmp", "rw,exec,nosuid,nodev,size=64m,mode=1777"},
      {"/run", "rw,noexec,nosuid,nodev,size=16m,mode=1777"},
  };
  return kOptions;
}

std::string SandboxUser(const config::DockerSettings& docker, int64_t owner_uid,
                        int64_t owner_gid) {
  // Nobody runs as root by accident: root only when sandbox.docker.user says so.
  if (!Trim(docker.user).empty()) return Trim(docker.user);
  if (owner_uid <= 0) return "65534:65534";
  return std::to_string(owner_uid) + ":" + std::to_string(owner_gid < 0 ? owner_uid : owner_gid);
}

HostProbe DefaultHostProbe() {
  HostProbe probe;
  probe.inspect = [](const std::string& path) { return InspectHostPath(path); };
  probe.inspect_real = [](const std::string& path) -> Result<HostPathInfo> {
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) {
      return Error::FromErrno(errno, "cannot resolve " + path);
    }
    return InspectHostPath(buf);
  };
  probe.dir_beneath = [](const std::string& root, const std::string& relative) {
    auto root_fd = OpenNoSymlinks(root);
    if (!root_fd) return false;
    auto fd = OpenBeneath(root_fd->get(), relative);
    if (!fd) return false;
    auto info = InspectFd(fd->get(), relative);
    return info && info->IsDirectory();
  };
  probe.uid = static_cast<int64_t>(::geteuid());
  probe.gid = static_cast<int64_t>(::getegid());
  return probe;
}

namespace {

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Error ChoiceRefused(std::string message) {
  return Error::Refusal("invalid-request", std::move(message) + "; nothing was run.");
}

bool Listed(const std::vector<std::string>& list, const std::string& value) {
  for (const std::string& item : list) {
    if (Trim(item) == value) return true;
  }
  return false;
}

// The call's image, network and limits within sandbox.allow.* (BuildSandboxSpec's contract).
std::optional<Error> ApplyChoices(const ExecRequest& r, const config::SandboxSettings& sb,
                                  exec::SandboxSpec* spec) {
  const config::SandboxAllowSettings& allow = sb.allow;
  if (r.image && *r.image != spec->image) {
    if (!Listed(allow.images, *r.image)) {
      return ChoiceRefused("image \"" + *r.image +
                           "\" is not allowed for this call: add it to sandbox.allow.images "
                           "(configured: " +
                           spec->image + ")");
    }
    spec->image = *r.image;
  }
  if (r.network && *r.network != spec->network) {
    config::DockerSettings probe;
    probe.network = *r.network;
    if (auto bad = ValidateDockerSecurity(probe)) return ChoiceRefused(bad->message);
    if (!Listed(allow.network, *r.network)) {
      return ChoiceRefused("network \"" + *r.network +
                           "\" is not allowed for this call: add it to sandbox.allow.network "
                           "(configured: " +
                           spec->network + ")");
    }
    spec->network = *r.network;
  }
  auto ceiling = [](double allowed, double configured) {
    return allowed > 0 ? allowed : configured;  // 0: none set (configured 0: unlimited)
  };
  const std::string quota_note = spec->tenant.empty() ? "" : " (the tenant's quotas clamp it)";
  if (r.memory_bytes) {
    const double top = ceiling(static_cast<double>(allow.memory_bytes),
                               static_cast<double>(sb.docker.memory_bytes));
    if (top > 0 && static_cast<double>(*r.memory_bytes) > top) {
      return ChoiceRefused("memory " + std::to_string(*r.memory_bytes) +
                           " bytes is above the ceiling of " +
                           std::to_string(static_cast<int64_t>(top)) +
                           " bytes: raise sandbox.allow.memory" + quota_note);
    }
    spec->memory_bytes = *r.memory_bytes;
    spec->memory_swap_bytes = *r.memory_bytes;  // no swap beyond the chosen memory
  }
  if (r.cpus) {
    const double top = ceiling(allow.cpus, sb.docker.cpus);
    if (top > 0 && *r.cpus > top) {
      return ChoiceRefused("cpus " + FormatNumber(*r.cpus) + " is above the ceiling of " +
                           FormatNumber(top) + ": raise sandbox.allow.cpus" + quota_note);
    }
    spec->nano_cpus = static_cast<int64_t>(std::llround(*r.cpus * 1e9));
  }
  if (r.pids) {
    const double top =
        ceiling(static_cast<double>(allow.pids), static_cast<double>(sb.docker.pids_limit));
    if (top > 0 && static_cast<double>(*r.pids) > top) {
      return ChoiceRefused("pids " + std::to_string(*r.pids) + " is above the ceiling of " +
                           std::to_string(static_cast<int64_t>(top)) +
                           ": raise sandbox.allow.pids" + quota_note);
    }
    spec->pids_limit = *r.pids;
  }
  return std::nullopt;
}

// HOME: a tmpfs the sandbox user owns when it is numeric (uid:gid), else one anybody may use.
void AddHomeTmpfs(exec::SandboxSpec* spec) {
  const std::string home(kSandboxHome);
  if (PathIsWithin(home, spec->workdir) || PathIsWithin(spec->workdir, home)) return;
  for (const std::string& mount : spec->tmpfs) {
    if (PathIsWithin(home, mount)) return;  // configured already
  }
  for (const exec::HostMountSpec& b : spec->binds) {
    if (PathIsWithin(home, b.target) || PathIsWithin(b.target, home)) return;
  }
  std::string owner = "mode=1777";
  const size_t colon = spec->user.find(':');
  auto numeric = [](std::string_view s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (colon != std::string::npos && numeric(std::string_view(spec->user).substr(0, colon)) &&
      numeric(std::string_view(spec->user).substr(colon + 1))) {
    owner = "mode=0700,uid=" + spec->user.substr(0, colon) + ",gid=" + spec->user.substr(colon + 1);
  }
  spec->tmpfs.push_back(home);
  spec->tmpfs_options[home] = "rw,exec,nosuid,nodev,size=256m," + owner;
}

}  // namespace

Result<exec::SandboxSpec> BuildSandboxSpec(const GateContext& ctx, const ExecRequest& request) {
  const config::SandboxSettings& sb = ctx.settings->sandbox;
  const config::DockerSettings& d = sb.docker;
  if (auto bad = ValidateCallerIds(ctx.caller)) return *bad;
  if (sb.scope == config::SandboxScope::kSession) {
    if (auto bad = SessionScopeKeyError(ctx.caller.session_key)) return *bad;
  }
  if (auto bad = ValidateDockerSecurity(d)) return *bad;
  auto home_it = ctx.host_env.find("HOME");
  const std::string home = home_it == ctx.host_env.end() ? "" : home_it->second;
  const HostProbe probe = Completed(ctx.host_probe);

  exec::SandboxSpec spec;
  spec.instance_id = ctx.instance_id;
  spec.tenant = ctx.caller.tenant;
  spec.max_containers = ctx.caller.tenant.empty() ? 0 : ctx.max_containers;
  spec.scope_key = SandboxScopeKey(sb.scope, ctx.caller);
  if (request.rm) {
    spec.scope_key += "#rm-" + (ctx.call_id.empty() ? std::string("call") : ctx.call_id);
    spec.remove_after = true;
  }
  spec.image = Trim(d.image);
  if (spec.image.empty()) return ConfigError("sandbox.docker.image is empty.");
  spec.container_prefix = d.container_prefix;
  if (d.workdir.empty() || d.workdir[0] != '/' || NormalizePosixPath(d.workdir) == "/") {
    return ConfigError("sandbox.docker.workdir \"" + d.workdir +
                       "\" must be an absolute path other than \"/\".");
  }
  spec.workdir = NormalizePosixPath(d.workdir);
  if (PathIsWithin(spec.workdir, kExecWrapperDir)) {
    return ConfigError("sandbox.docker.workdir \"" + d.workdir +
                       "\" is reserved (\"/.sandrun\" holds sandrun's exec wrapper).");
  }

  Result<std::string> scratch_root = ScratchRoot(ctx, home);
  if (!scratch_root) return scratch_root.error();
  std::vector<std::string> writable_roots = {*scratch_root};
  int64_t owner_uid = probe.uid, owner_gid = probe.gid;
  switch (sb.workspace_access) {
    case config::WorkspaceAccess::kNone:
      spec.workspace_host_dir = ScratchWorkspaceDir(*scratch_root, sb.scope, spec.scope_key);
      spec.workspace_read_only = false;
      spec.scratch = true;
      if (sb.scratch_limit_bytes < 0) return ConfigError("sandbox.scratchLimit must be >= 0.");
      spec.scratch_limit_bytes = sb.scratch_limit_bytes;
      break;
    case config::WorkspaceAccess::kRo:
    case config::WorkspaceAccess::kRw: {
      Result<HostPathInfo> ws = CheckedWorkspace(ctx, probe, home);
      if (!ws) return ws.error();
      spec.workspace_host_dir = ws->path;
      spec.workspace_id = ws->id;
      spec.workspace_read_only = sb.workspace_access == config::WorkspaceAccess::kRo;
      if (!spec.workspace_read_only) writable_roots.push_back(ws->path);
      owner_uid = ws->uid;
      owner_gid = ws->gid;
      break;
    }
  }
  spec.user = SandboxUser(d, owner_uid, owner_gid);

  spec.read_only_root = d.read_only_root;
  const auto& presets = ctx.tmpfs_options.empty() ? DefaultTmpfsOptions() : ctx.tmpfs_options;
  for (const std::string& entry : d.tmpfs) {
    const size_t colon = entry.find(':');
    const std::string mount = NormalizePosixPath(Trim(entry.substr(0, colon)));
    if (mount.empty() || mount[0] != '/' || mount == "/") {
      return ConfigError("sandbox.docker.tmpfs entry \"" + entry +
                         "\" must name an absolute mount point other than \"/\".");
    }
    if (PathIsWithin(mount, kExecWrapperDir)) {
      return ConfigError("sandbox.docker.tmpfs entry \"" + entry +
                         "\" is reserved (\"/.sandrun\" holds sandrun's exec wrapper).");
    }
    std::string options;
    if (colon != std::string::npos) {
      options = Trim(entry.substr(colon + 1));
    } else if (auto it = presets.find(mount); it != presets.end()) {
      options = it->second;
    } else {
      options = "rw,noexec,nosuid,nodev,size=64m,mode=1777";
    }
    spec.tmpfs.push_back(mount);
    spec.tmpfs_options[mount] = options;
  }
  spec.network = Trim(d.network).empty() ? "none" : Trim(d.network);
  spec.cap_drop = d.cap_drop;
  if (ctx.seccomp_profile_json.empty()) {
    return ConfigError("sandbox.docker.seccompProfile \"" + d.seccomp_profile +
                       "\": the profile was not loaded; refusing to start a container without "
                       "a seccomp filter.");
  }
  spec.seccomp_profile_name = Trim(d.seccomp_profile);
  spec.seccomp_profile_json = ctx.seccomp_profile_json;
  spec.no_new_privileges = true;
  spec.apparmor_profile = Trim(d.apparmor_profile);
  for (const auto& [key, value] : d.env) {
    if (!IsPortableEnvKey(key) || value.find('\0') != std::string::npos) {
      return ConfigError("sandbox.docker.env: invalid variable \"" + key +
                         "\" (keys must match [A-Za-z_][A-Za-z0-9_]*, values must not hold NUL).");
    }
  }
  spec.container_env = d.env;
  spec.setup_command = d.setup_command;
  spec.exec_agent = d.exec_agent;
  if (d.pids_limit < 0) return ConfigError("sandbox.docker.pidsLimit must be >= 0.");
  if (d.memory_bytes < 0) return ConfigError("sandbox.docker.memory must be >= 0.");
  if (d.memory_swap_bytes < -1) return ConfigError("sandbox.docker.memorySwap must be >= -1.");
  if (!std::isfinite(d.cpus) || d.cpus < 0 || d.cpus > 1024) {
    return ConfigError("sandbox.docker.cpus must be a number between 0 and 1024.");
  }
  spec.pids_limit = d.pids_limit;
  spec.memory_bytes = d.memory_bytes;
  spec.memory_swap_bytes = d.memory_swap_bytes == -1 ? d.memory_bytes : d.memory_swap_bytes;
  spec.nano_cpus = static_cast<int64_t>(std::llround(d.cpus * 1e9));
  spec.init = true;
  for (const std::string& bind : d.binds) {
    Result<exec::HostMountSpec> ok =
        CheckedBind(bind, ctx, probe, home, spec.workdir, writable_roots);
    if (!ok) return ok.error();
    spec.binds.push_back(std::move(ok).value());
  }
  spec.pool = exec::PoolSettings{sb.pool.min, sb.pool.max, sb.pool.idle_ttl_ms};
  spec.prune_idle_hours = sb.prune.idle_hours;
  spec.prune_max_age_days = sb.prune.max_age_days;
  spec.state_dir = ctx.state_dir;
  const exec::SandboxSpec configured = spec;
  if (auto refused = ApplyChoices(request, sb, &spec)) return *refused;
  // A call's own kind of sandbox is not kept warm, only the configured kinds are: a tenant
  // varying its limits call by call must not multiply warm containers.
  if (spec.image != configured.image || spec.network != configured.network ||
      spec.memory_bytes != configured.memory_bytes ||
      spec.memory_swap_bytes != configured.memory_swap_bytes ||
      spec.nano_cpus != configured.nano_cpus || spec.pids_limit != configured.pids_limit) {
    spec.pool = exec::PoolSettings{};
  }
  AddHomeTmpfs(&spec);
  return spec;
}

SandboxWorkdir MapSandboxWorkdir(const std::optional<std::string>& requested,
                                 const std::string& container_workdir, const std::string& host_dir,
                                 const DirBeneathFn& dir_beneath) {
  const std::string cw = NormalizePosixPath(container_workdir);
  const std::string hd = NormalizePosixPath(host_dir);
  SandboxWorkdir root{cw, hd, std::nullopt};
  if (!requested.has_value() || Trim(*requested).empty()) return root;
  const std::string raw = *requested;
  const std::string candidate = NormalizePosixPath(raw[0] == '/' ? raw : cw + "/" + raw);
  std::optional<std::string> rel;
  for (const std::string& base : {cw, hd}) {
    if (!rel.has_value() && PathIsWithin(candidate, base)) {
      rel = base == "/" ? candidate.substr(1)
                        : candidate.substr(std::min(candidate.size(), base.size() + 1));
    }
  }
  if (rel.has_value()) {
    if (rel->empty()) return root;
    if (dir_beneath && dir_beneath(hd, *rel)) {
      return SandboxWorkdir{(cw == "/" ? "" : cw) + "/" + *rel, (hd == "/" ? "" : hd) + "/" + *rel,
                            std::nullopt};
    }
  }
  // Container paths only: the host side of the mount is none of the sandbox's business.
  root.warning = "Warning: workdir \"" + raw + "\" is unavailable; using \"" + cw + "\".";
  return root;
}

}  // namespace sandrun::policy

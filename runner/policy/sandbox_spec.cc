#include "runner/policy/sandbox_spec.h"

#include <cctype>
#include <cmath>
#include <vector>

#include "runner/policy/env_policy.h"
#include "sandbox/base/sha256.h"
#include "sandbox/base/strings.h"

namespace sandrun::policy {
namespace {

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

// "~" and "~/x" against `home`; nullopt when there is a tilde but no home.
std::optional<std::string> ExpandTilde(const std::string& path, const std::string& home) {
  if (path != "~" && path.rfind("~/", 0) != 0) return path;
  if (home.empty()) return std::nullopt;
  return home + path.substr(1);
}

GateError ConfigError(std::string message) {
  return GateError{"invalid-config", std::move(message)};
}

constexpr std::string_view kBlockedHostPaths[] = {
    "/etc",  "/private/etc", "/proc", "/sys",     "/dev",
    "/root", "/boot",        "/run",  "/var/run", "/private/var/run",
};
constexpr std::string_view kBlockedHomeDirs[] = {
    ".aws", ".cargo", ".config", ".docker", ".gnupg", ".netrc", ".npm", ".ssh",
};
constexpr std::string_view kRuntimeSockets[] = {
    "containerd.sock", "podman.sock", "crio.sock", "cri-dockerd.sock", "buildkitd.sock",
};
constexpr std::string_view kBindModeOptions[] = {
    "ro",      "rw",     "z",        "Z",      "shared",     "slave",  "private",
    "rshared", "rslave", "rprivate", "nocopy", "consistent", "cached", "delegated",
};

// Checks a source against one blocked path; returns the refusal text or "".
std::string BlockedSourceReason(const std::string& src, const std::string& blocked) {
  if (PathIsWithin(src, blocked)) return "is inside the blocked host path \"" + blocked + "\"";
  if (PathIsWithin(blocked, src)) return "contains the blocked host path \"" + blocked + "\"";
  return "";
}

}  // namespace

std::string SandboxScopeKey(config::SandboxScope scope, const Caller& caller) {
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

std::string SlugifyScopeKey(std::string_view key) {
  std::string trimmed = Trim(key);
  if (trimmed.empty()) trimmed = "session";
  const std::string hash = Sha256Hex(trimmed).substr(0, 8);
  std::string safe;
  bool in_run = false;
  for (char ch : Lower(trimmed)) {
    const bool ok =
        (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    if (ok) {
      safe += ch;
      in_run = false;
    } else if (!in_run) {
      safe += '-';
      in_run = true;
    }
  }
  size_t b = safe.find_first_not_of('-');
  if (b == std::string::npos) {
    safe.clear();
  } else {
    safe = safe.substr(b, safe.find_last_not_of('-') - b + 1);
  }
  std::string base = safe.substr(0, 32);
  if (base.empty()) base = "session";
  return base + "-" + hash;
}

std::string NormalizePosixPath(std::string_view path) {
  const bool absolute = !path.empty() && path[0] == '/';
  std::vector<std::string> parts;
  for (std::string& part : Split(path, '/')) {
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

std::string ScratchWorkspaceDir(const std::string& root, config::SandboxScope scope,
                                const std::string& scope_key) {
  std::string r = NormalizePosixPath(root);
  if (scope == config::SandboxScope::kShared) return r;
  return (r == "/" ? std::string("") : r) + "/" + SlugifyScopeKey(scope_key);
}

GateResult<std::string> ValidateBind(const std::string& bind, const std::string& home,
                                     const std::string& container_workdir) {
  const std::string where = "sandbox.docker.binds entry \"" + bind + "\": ";
  std::vector<std::string> parts = Split(bind, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty()) {
    return ConfigError(where + "expected SRC:DST[:MODE].");
  }
  std::optional<std::string> expanded = ExpandTilde(parts[0], home);
  if (!expanded.has_value()) {
    return ConfigError(where + "cannot expand \"~\": HOME is not set.");
  }
  if ((*expanded)[0] != '/') {
    return ConfigError(where +
                       "the source must be an absolute host path (named volumes are "
                       "not allowed).");
  }
  const std::string src = NormalizePosixPath(*expanded);
  if (src == "/") return ConfigError(where + "the source \"/\" would expose the whole host.");
  for (std::string_view blocked : kBlockedHostPaths) {
    std::string reason = BlockedSourceReason(src, std::string(blocked));
    if (!reason.empty()) return ConfigError(where + "the source \"" + src + "\" " + reason + ".");
  }
  if (!home.empty() && home[0] == '/') {
    for (std::string_view dir : kBlockedHomeDirs) {
      std::string blocked = NormalizePosixPath(home + "/" + std::string(dir));
      std::string reason = BlockedSourceReason(src, blocked);
      if (!reason.empty()) {
        return ConfigError(where + "the source \"" + src + "\" " + reason + ".");
      }
    }
  }
  for (const std::string& component : Split(src, '/')) {
    if (Lower(component) == "docker.sock") {
      return ConfigError(where + "the source \"" + src +
                         "\" is a Docker socket (control of the engine is control of the host).");
    }
    // The other container engines' API sockets give the same control of the host.
    for (std::string_view runtime : kRuntimeSockets) {
      if (Lower(component) == runtime) {
        return ConfigError(where + "the source \"" + src +
                           "\" is a container runtime socket (control of the runtime is control "
                           "of the host).");
      }
    }
  }
  if (parts[1][0] != '/') return ConfigError(where + "the target must be an absolute path.");
  const std::string dst = NormalizePosixPath(parts[1]);
  if (dst == "/") return ConfigError(where + "the target \"/\" is not allowed.");
  for (const std::string& reserved :
       {std::string("/workspace"), std::string("/agent"), NormalizePosixPath(container_workdir)}) {
    if (reserved != "/" && PathIsWithin(dst, reserved)) {
      return ConfigError(where + "the target \"" + dst + "\" is reserved (\"" + reserved +
                         "\" is the workspace mount).");
    }
  }
  std::string out = src + ":" + dst;
  if (parts.size() == 3) {
    for (const std::string& option : Split(parts[2], ',')) {
      bool known = false;
      for (std::string_view k : kBindModeOptions) known = known || option == k;
      if (!known) return ConfigError(where + "unknown mount option \"" + option + "\".");
    }
    out += ":" + parts[2];
  }
  return out;
}

std::optional<GateError> ValidateDockerSecurity(const config::DockerSettings& docker) {
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

GateResult<exec::SandboxSpec> BuildSandboxSpec(const GateContext& ctx) {
  const config::SandboxSettings& sb = ctx.settings->sandbox;
  const config::DockerSettings& d = sb.docker;
  if (auto bad = ValidateDockerSecurity(d)) return *bad;
  auto home_it = ctx.host_env.find("HOME");
  const std::string home = home_it == ctx.host_env.end() ? "" : home_it->second;

  exec::SandboxSpec spec;
  spec.instance_id = ctx.instance_id;
  spec.scope_key = SandboxScopeKey(sb.scope, ctx.caller);
  spec.image = Trim(d.image);
  if (spec.image.empty()) return ConfigError("sandbox.docker.image is empty.");
  spec.container_prefix = d.container_prefix;
  if (d.workdir.empty() || d.workdir[0] != '/' || NormalizePosixPath(d.workdir) == "/") {
    return ConfigError("sandbox.docker.workdir \"" + d.workdir +
                       "\" must be an absolute path other than \"/\".");
  }
  spec.workdir = NormalizePosixPath(d.workdir);

  switch (sb.workspace_access) {
    case config::WorkspaceAccess::kNone: {
      std::string root;
      if (!Trim(sb.workspace_root).empty()) {
        std::optional<std::string> expanded = ExpandTilde(Trim(sb.workspace_root), home);
        if (!expanded.has_value() || (*expanded)[0] != '/') {
          return ConfigError("sandbox.workspaceRoot \"" + sb.workspace_root +
                             "\" must be an absolute path.");
        }
        root = *expanded;
      } else {
        if (ctx.state_dir.empty() || ctx.state_dir[0] != '/') {
          return ConfigError("the state dir ($SANDRUN_HOME) is not an absolute path.");
        }
        root = ctx.state_dir + "/sandboxes";
      }
      spec.workspace_host_dir = ScratchWorkspaceDir(root, sb.scope, spec.scope_key);
      spec.workspace_read_only = false;
      break;
    }
    case config::WorkspaceAccess::kRo:
    case config::WorkspaceAccess::kRw:
      if (ctx.workspace_dir.empty() || ctx.workspace_dir[0] != '/') {
        return ConfigError(
            "sandbox.workspaceAccess \"" +
            std::string(sb.workspace_access == config::WorkspaceAccess::kRo ? "ro" : "rw") +
            "\" needs the agent's workspace directory (absolute), got \"" + ctx.workspace_dir +
            "\".");
      }
      spec.workspace_host_dir = NormalizePosixPath(ctx.workspace_dir);
      spec.workspace_read_only = sb.workspace_access == config::WorkspaceAccess::kRo;
      break;
  }

  spec.read_only_root = d.read_only_root;
  const auto& presets = ctx.tmpfs_options.empty() ? DefaultTmpfsOptions() : ctx.tmpfs_options;
  for (const std::string& entry : d.tmpfs) {
    const size_t colon = entry.find(':');
    const std::string mount = NormalizePosixPath(Trim(entry.substr(0, colon)));
    if (mount.empty() || mount[0] != '/' || mount == "/") {
      return ConfigError("sandbox.docker.tmpfs entry \"" + entry +
                         "\" must name an absolute mount point other than \"/\".");
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
  spec.security_opt = {"no-new-privileges:true", "seccomp=" + ctx.seccomp_profile_json};
  if (!Trim(d.apparmor_profile).empty()) {
    spec.security_opt.push_back("apparmor=" + Trim(d.apparmor_profile));
  }
  for (const auto& [key, value] : d.env) {
    if (!IsPortableEnvKey(key) || value.find('\0') != std::string::npos) {
      return ConfigError("sandbox.docker.env: invalid variable \"" + key +
                         "\" (keys must match [A-Za-z_][A-Za-z0-9_]*, values must not hold NUL).");
    }
  }
  spec.container_env = d.env;
  spec.user = d.user;
  spec.setup_command = d.setup_command;
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
    GateResult<std::string> ok = ValidateBind(bind, home, spec.workdir);
    if (!ok) return ok.error();
    spec.binds.push_back(std::move(ok).value());
  }
  spec.prune_idle_hours = sb.prune.idle_hours;
  spec.prune_max_age_days = sb.prune.max_age_days;
  spec.state_dir = ctx.state_dir;
  return spec;
}

SandboxWorkdir MapSandboxWorkdir(const std::optional<std::string>& requested,
                                 const std::string& container_workdir, const std::string& host_dir,
                                 const DirExistsFn& dir_exists) {
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
    const std::string host_path = (hd == "/" ? "" : hd) + "/" + *rel;
    if (dir_exists && dir_exists(host_path)) {
      return SandboxWorkdir{(cw == "/" ? "" : cw) + "/" + *rel, host_path, std::nullopt};
    }
  }
  root.warning = "Warning: workdir \"" + raw + "\" is unavailable; using \"" + hd + "\".";
  return root;
}

}  // namespace sandrun::policy

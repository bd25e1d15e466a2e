#include "runner/policy/host_checks.h"

#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include "runner/policy/sandbox_spec.h"
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

Error ConfigError(std::string message) {
  return Error::Refusal("invalid-config", std::move(message));
}

constexpr std::string_view kBlockedHostPaths[] = {
    "/etc",
    "/private/etc",
    "/proc",
    "/sys",
    "/dev",
    "/root",
    "/boot",
    "/run",
    "/var/run",
    "/private/var/run",
    // The host's programs and libraries (a writable /usr is the next root login), and the
    // container engines' data roots (every container's files and configs).
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/var/lib/docker",
    "/var/lib/containerd",
    "/var/lib/containers",
    "/var/lib/kubelet",
};
constexpr std::string_view kBlockedHomeDirs[] = {
    ".aws", ".cargo", ".config", ".docker", ".gnupg", ".netrc", ".npm", ".ssh",
};
constexpr std::string_view kRuntimeSockets[] = {
    "containerd.sock", "podman.sock", "crio.sock", "cri-dockerd.sock", "buildkitd.sock",
};
// Options the hardened mounts honour: ro/rw become the mount's read-only flag; private and
// rprivate are what every sandbox mount is anyway; nocopy (volumes only) and the macOS
// consistency hints mean nothing for a bind on Linux.
constexpr std::string_view kBindModeOptions[] = {
    "ro", "rw", "private", "rprivate", "nocopy", "consistent", "cached", "delegated",
};
// Known options that would undo the hardening or need HostConfig.Binds.
constexpr std::string_view kRefusedBindOptions[] = {"shared", "slave", "rshared",
                                                    "rslave", "z",     "Z"};

// Checks a source against one blocked path; returns the refusal text or "".
std::string BlockedSourceReason(const std::string& src, const std::string& blocked) {
  if (PathIsWithin(src, blocked)) return "is inside the blocked host path \"" + blocked + "\"";
  if (PathIsWithin(blocked, src)) return "contains the blocked host path \"" + blocked + "\"";
  return "";
}

std::vector<std::string> BlockedPaths(const std::string& home) {
  std::vector<std::string> out(std::begin(kBlockedHostPaths), std::end(kBlockedHostPaths));
  if (!home.empty() && home[0] == '/') {
    for (std::string_view dir : kBlockedHomeDirs) {
      out.push_back(NormalizePosixPath(home + "/" + std::string(dir)));
    }
  }
  return out;
}

bool Contains(const std::vector<PathIdentity>& ids, const PathIdentity& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Strictly below <state>/sandboxes/ or <state>/tenants/<t>/workspaces/.
bool IsWorkspaceArea(const std::string& path, const std::string& state) {
  const std::string rel = path.size() > state.size() ? path.substr(state.size() + 1) : "";
  std::vector<std::string> parts = Split(rel, '/');
  if (parts.size() >= 2 && parts[0] == "sandboxes") return true;
  return parts.size() >= 4 && parts[0] == "tenants" && parts[2] == "workspaces";
}

}  // namespace

std::optional<std::string> BlockedPathReason(const std::string& path, const std::string& home) {
  if (path == "/") return "is the whole host";
  for (const std::string& blocked : BlockedPaths(home)) {
    std::string reason = BlockedSourceReason(path, blocked);
    if (!reason.empty()) return reason;
  }
  return std::nullopt;
}

std::optional<std::string> BlockedIdentityReason(const HostPathInfo& info, const std::string& home,
                                                 const HostProbe& probe) {
  for (const std::string& blocked : BlockedPaths(home)) {
    Result<HostPathInfo> real = probe.inspect_real(blocked);
    if (!real) continue;  // not on this host
    const std::string where = "the blocked host path \"" + blocked + "\"" +
                              (real->path != blocked ? " (" + real->path + ")" : "");
    if (real->id == info.id || Contains(info.ancestors, real->id)) {
      return "is inside " + where + " (the same directory under another name)";
    }
    if (Contains(real->ancestors, info.id)) return "contains " + where;
  }
  return std::nullopt;
}

std::optional<std::string> StateDirReason(const std::string& path, const std::string& state_dir,
                                          bool workspace) {
  if (state_dir.empty() || state_dir[0] != '/') return std::nullopt;
  const std::string state = NormalizePosixPath(state_dir);
  if (PathIsWithin(path, state)) {
    if (workspace && IsWorkspaceArea(path, state)) return std::nullopt;
    return "is the runner's state dir or inside it (\"" + state + "\")";
  }
  if (PathIsWithin(state, path)) return "contains the runner's state dir (\"" + state + "\")";
  return std::nullopt;
}

std::optional<std::string> StateDirIdentityReason(const HostPathInfo& info,
                                                  const std::string& state_dir, bool workspace,
                                                  const HostProbe& probe) {
  if (state_dir.empty() || state_dir[0] != '/') return std::nullopt;
  Result<HostPathInfo> real = probe.inspect_real(NormalizePosixPath(state_dir));
  if (!real) return std::nullopt;
  if (real->id == info.id || Contains(info.ancestors, real->id)) {
    // The resolved path has no link in it: when it is textually below the state dir as it
    // really is, the workspace areas can be told apart; another name for it (a bind) cannot.
    if (workspace && PathIsWithin(info.path, real->path) &&
        IsWorkspaceArea(info.path, real->path)) {
      return std::nullopt;
    }
    return "is the runner's state dir or inside it (\"" + real->path + "\")";
  }
  if (Contains(real->ancestors, info.id)) {
    return "contains the runner's state dir (\"" + real->path + "\")";
  }
  return std::nullopt;
}

std::optional<std::string> InsideByIdentity(const HostPathInfo& info, const std::string& root,
                                            const HostProbe& probe) {
  Result<HostPathInfo> real = probe.inspect_real(root);
  if (!real) return std::nullopt;
  if (real->id == info.id || Contains(info.ancestors, real->id)) {
    return "the same directory under another name";
  }
  return std::nullopt;
}

std::optional<std::string> SourceKindReason(const HostPathInfo& info) {
  const mode_t type = static_cast<mode_t>(info.mode) & S_IFMT;
  if (type == S_IFSOCK) {
    return "is a socket (a channel out of the sandbox; a Docker socket is control of the host)";
  }
  if (type == S_IFIFO) return "is a FIFO (a channel out of the sandbox)";
  if (type == S_IFBLK || type == S_IFCHR) return "is a device";
  if (type == S_IFREG && info.nlink > 1) {
    return "is a file with " + std::to_string(info.nlink) +
           " hard links (it may be a blocked file under another name)";
  }
  if (type != S_IFREG && type != S_IFDIR) return "is not a directory or a regular file";
  return std::nullopt;
}

Result<std::string> ValidateBind(const std::string& bind, const std::string& home,
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
  if (auto reason = BlockedPathReason(src, home)) {
    return ConfigError(where + "the source \"" + src + "\" " + *reason + ".");
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
  if (PathIsWithin(dst, kExecWrapperDir)) {
    return ConfigError(where + "the target \"" + dst +
                       "\" is reserved (\"/.sandrun\" holds sandrun's exec wrapper).");
  }
  std::string out = src + ":" + dst;
  if (parts.size() == 3) {
    for (const std::string& option : Split(parts[2], ',')) {
      for (std::string_view refused : kRefusedBindOptions) {
        if (option == refused) {
          return ConfigError(where + "the mount option \"" + option +
                             "\" is not supported: sandbox mounts are private (no propagation "
                             "to or from the host) and are not relabeled (label the source "
                             "yourself).");
        }
      }
      bool known = false;
      for (std::string_view k : kBindModeOptions) known = known || option == k;
      if (!known) return ConfigError(where + "unknown mount option \"" + option + "\".");
    }
    out += ":" + parts[2];
  }
  return out;
}

exec::HostMountSpec ParseValidatedBind(const std::string& validated) {
  std::vector<std::string> parts = Split(validated, ':');
  exec::HostMountSpec m;
  m.source = parts.size() > 0 ? parts[0] : "";
  m.target = parts.size() > 1 ? parts[1] : "";
  if (parts.size() > 2) {
    for (const std::string& option : Split(parts[2], ',')) {
      if (option == "ro") m.read_only = true;
      if (option == "rw") m.read_only = false;
      if (option == "private" || option == "rprivate") m.propagation = option;
    }
  }
  return m;
}

}  // namespace sandrun::policy

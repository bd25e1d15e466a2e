#include "runner/api/doctor.h"

#include <fcntl.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <optional>

#include "runner/config/config.h"
#include "runner/config/state_dir.h"
#include "runner/policy/safe_bins.h"
#include "runner/policy/sandbox_spec.h"
#include "sandbox/base/strings.h"
#include "sandbox/docker/client.h"
#include "sandbox/docker/image_build.h"
#include "sandbox/executors/docker/agent_link.h"
#include "sandbox/executors/docker/exec_wrapper.h"
#include "sandbox/executors/docker/host_mounts.h"
#include "sandbox/harden/confine.h"
#include "sandbox/harden/container_preset.h"
#include "sandbox/harden/host_hardening.h"
#include "sandbox/harden/profile_file.h"
#include "sandbox/harden/seccomp_compiler.h"
#include "sandbox/harden/seccomp_profile.h"
#include "sandbox/harden/seccomp_support.h"
#include "sandbox/os/data_dir.h"
#include "sandbox/os/host_path.h"
#include "sandbox/os/mounts.h"
#include "sandbox/os/process_tree.h"

namespace sandrun::api {
namespace {

using Level = DoctorCheck::Level;

constexpr const char* kImages[] = {"minimal", "bookworm"};
constexpr auto kEngineTimeout = std::chrono::seconds(4);  // the whole doctor stays under 5 s

DoctorCheck Check(std::string name, Level level, std::string detail, std::string fix = "") {
  return DoctorCheck{std::move(name), level, std::move(detail), std::move(fix)};
}

DoctorCheck StateDirCheck() {
  auto path = config::StateDirPath();
  if (!path) {
    return Check("state-dir", Level::kFail, path.error().ToString(),
                 "set SANDRUN_HOME to an absolute directory");
  }
  if (auto ok = config::EnsureStateDir(*path); !ok) {
    return Check("state-dir", Level::kFail, ok.error().ToString(),
                 "fix the directory's owner and mode (chmod 700), or point SANDRUN_HOME elsewhere");
  }
  return Check("state-dir", Level::kOk, *path + " (0700)");
}

// Every scope of the config that runs sandbox commands (sandbox.mode not off), with the key
// path of its settings: "" (the global level), "agents.<id>.", "tenants.<t>.",
// "tenants.<t>.agents.<id>."; and the scope it inherits from (null: none).
struct SandboxScope {
  std::string prefix;
  const config::AgentSettings* settings;
  const config::AgentSettings* parent;
};

std::vector<SandboxScope> SandboxScopes(const config::Config& cfg) {
  std::vector<SandboxScope> all = {{"", &cfg.global, nullptr}};
  for (const auto& [id, s] : cfg.agents) all.push_back({"agents." + id + ".", &s, &cfg.global});
  for (const auto& [tenant, layer] : cfg.tenants) {
    const std::string prefix = "tenants." + tenant + ".";
    all.push_back({prefix, &layer.global, &cfg.global});
    for (const auto& [id, s] : layer.agents) {
      all.push_back({prefix + "agents." + id + ".", &s, &layer.global});
    }
  }
  std::erase_if(all, [](const SandboxScope& scope) {
    return scope.settings->sandbox.mode == config::SandboxMode::kOff;
  });
  return all;
}

// config.json (or --config) loads, and its container settings pass what every sandbox call
// checks (a refused network or profile, a seccomp profile that does not load): else every call
// (or every sandbox call) is refused. The loaded config, when it loads.
std::optional<config::Config> ConfigCheck(const std::string& config_file,
                                          std::vector<DoctorCheck>& checks) {
  auto state_dir = config::StateDirPath();
  if (!state_dir && config_file.empty()) {
    checks.push_back(Check("config", Level::kFail, "not checked: the state dir is unusable",
                           "fix the state dir first"));
    return std::nullopt;
  }
  auto cfg = config::LoadConfigFor(config_file, state_dir.value_or(""));
  if (!cfg) {
    checks.push_back(Check("config", Level::kFail, cfg.error().ToString(),
                           "fix the file at the line and column named (every call is refused "
                           "with invalid-config until then)"));
    return std::nullopt;
  }
  const std::string source =
      cfg->source_path.empty()
          ? "no config file (" + state_dir.value_or("") + "/config.json): the built-in defaults"
          : cfg->source_path;
  bool refused = false;  // each refused scope is a failed check of its own
  for (const SandboxScope& scope : SandboxScopes(*cfg)) {
    const config::DockerSettings& docker = scope.settings->sandbox.docker;
    std::optional<Error> bad = policy::ValidateDockerSecurity(docker);
    if (!bad) {
      auto profile =
          harden::LoadSeccompProfileJson(harden::DefaultProfilesDir(), docker.seccomp_profile);
      if (!profile) bad = profile.error();
    }
    if (!bad) continue;
    checks.push_back(Check(
        "config", Level::kFail,
        source + ": " +
            (scope.prefix.empty() ? "" : scope.prefix.substr(0, scope.prefix.size() - 1) + ": ") +
            bad->ToString(),
        "fix " + scope.prefix +
            "sandbox.docker in the config: every sandbox command there is "
            "refused until then"));
    refused = true;
  }
  if (refused) return std::move(*cfg);
  if (!cfg->warnings.empty()) {
    checks.push_back(Check(
        "config", Level::kWarn,
        source + ": " + cfg->warnings.front() + (cfg->warnings.size() > 1 ? " (and more)" : ""),
        "remove or correct the keys named (they are ignored)"));
    return std::move(*cfg);
  }
  checks.push_back(Check(
      "config", Level::kOk,
      source + (cfg->source_path.empty() ? ""
                                         : ": " + std::to_string(cfg->agents.size()) + " agents, " +
                                               std::to_string(cfg->tenants.size()) + " tenants")));
  return std::move(*cfg);
}

// An image a check looks for: the built-in ones, then each other image the config names, with
// the keys that name it (only where a scope sets an image other than the one it inherits).
struct ImageUse {
  std::string ref;
  std::vector<std::string> keys;
};

std::vector<ImageUse> ImagesToCheck(const config::Config* cfg) {
  std::vector<ImageUse> images;
  for (const char* name : kImages) {
    images.push_back({std::string(docker::kImageRepository) + ":" + name, {}});
  }
  if (cfg == nullptr) return images;
  for (const SandboxScope& scope : SandboxScopes(*cfg)) {
    const std::string ref = Trim(scope.settings->sandbox.docker.image);
    if (scope.parent != nullptr && scope.parent->sandbox.mode != config::SandboxMode::kOff &&
        Trim(scope.parent->sandbox.docker.image) == ref) {
      continue;  // inherited: its parent's key names it
    }
    auto it = std::find_if(images.begin(), images.end(),
                           [&](const ImageUse& use) { return use.ref == ref; });
    if (it == images.end()) it = images.insert(images.end(), {ref, {}});
    it->keys.push_back(scope.prefix + "sandbox.docker.image");
  }
  return images;
}

std::string UsedBy(const ImageUse& use) {
  if (use.keys.empty()) return "";
  std::string keys;
  for (const std::string& k : use.keys) keys += (keys.empty() ? "" : ", ") + k;
  return " (" + keys + ")";
}

// Which path sandbox commands take: the in-container agent (a unix socket per container, about
// a millisecond per command) or the Engine API exec (the engine's runc exec, tens of ms).
DoctorCheck ExecPathCheck(bool engine_is_local, const config::Config* cfg) {
  const config::DockerSettings docker = cfg ? cfg->global.sandbox.docker : config::DockerSettings();
  exec::SandboxSpec probe;
  probe.exec_agent = docker.exec_agent;
  // The default user is the workspace owner or nobody; either is a numeric non-root uid:gid.
  probe.user = Trim(docker.user).empty() ? "65534:65534" : Trim(docker.user);
  exec::ExecWrapper binary = exec::FindAgentBinary(engine_is_local);
  const std::string why = exec::AgentUnusableReason(probe, binary);
  if (why.empty()) {
    return Check("exec-path", Level::kOk,
                 "sandbox agent: " + binary.host_path + " at " + agent::kAgentBinaryPath +
                     " in each sandbox; commands start through its unix socket, not the engine");
  }
  return Check(
      "exec-path", Level::kWarn,
      "Engine API exec (slower): " + why + (engine_is_local ? "" : "; the engine is remote"),
      "run sandrun as root with a local engine, sandrun-agent next to sandrun, "
      "sandbox.docker.user a numeric non-root uid:gid and sandbox.docker.execAgent true");
}

// Whether a running server keeps started containers for new scopes (sandbox.pool): it needs
// the agent path and host-side mounts (a root runner, a local engine).
DoctorCheck WarmPoolCheck(bool engine_is_local, const config::Config* cfg) {
  const config::SandboxSettings sandbox = cfg ? cfg->global.sandbox : config::SandboxSettings();
  const config::PoolSettings& pool = sandbox.pool;
  if (pool.min <= 0 && pool.max <= 0) {
    return Check("warm-pool", Level::kOk,
                 "no warm pool (sandbox.pool not set): a new scope's first command waits for its "
                 "container to be created and started");
  }
  exec::SandboxSpec probe;
  probe.exec_agent = sandbox.docker.exec_agent;
  probe.user = Trim(sandbox.docker.user).empty() ? "65534:65534" : Trim(sandbox.docker.user);
  std::string why = exec::AgentUnusableReason(probe, exec::FindAgentBinary(engine_is_local));
  if (!why.empty()) {
    why = "no sandbox agent: " + why;
  } else if (exec::MountSupport mounts = exec::DetectMountSupport(engine_is_local);
             !mounts.staged) {
    why = mounts.reason;
  }
  if (!why.empty()) {
    return Check("warm-pool", Level::kWarn,
                 "sandbox.pool is set but no container is kept warm: " + why,
                 "the warm pool needs what the sandbox agent needs (see exec-path)");
  }
  return Check("warm-pool", Level::kOk,
               "a running server keeps " + std::to_string(pool.min) + " (up to " +
                   std::to_string(std::max(pool.min, pool.max)) +
                   " under demand) started containers of each kind of sandbox for new scopes "
                   "(only `sandrun serve` keeps them)");
}

void EngineChecks(std::vector<DoctorCheck>& checks, const std::vector<ImageUse>& images,
                  const config::Config* cfg) {
  auto client = docker::Client::FromEnvironment({std::chrono::milliseconds(3000)});
  if (!client) {
    checks.push_back(Check("engine", Level::kFail, client.error().ToString(),
                           "set DOCKER_HOST to unix:///path or tcp://host:port"));
    return;
  }
  CallOptions opts{Deadline::After(kEngineTimeout), nullptr};
  std::string where = (*client)->endpoint().ToString();
  auto version = (*client)->Version(opts);
  if (!version) {
    checks.push_back(Check("engine", Level::kFail, version.error().ToString(),
                           "start dockerd (bash scripts/setup does), or point DOCKER_HOST at a "
                           "running engine"));
    for (const ImageUse& use : images) {
      checks.push_back(Check("image", Level::kFail,
                             use.ref + UsedBy(use) + " not checked: the engine is unreachable",
                             "start the engine first"));
    }
    return;
  }
  checks.push_back(Check(
      "engine", Level::kOk,
      where + ": Docker " + version->version + " (" + version->os + "/" + version->arch + ")"));

  auto api = (*client)->ApiVersion(opts);
  if (!api) {
    checks.push_back(Check("api-version", Level::kFail, api.error().ToString(),
                           "use Docker 20.10 (API 1.41) or newer"));
    return;
  }
  checks.push_back(Check("api-version", Level::kOk,
                         "engine API " + version->api_version + " (min " +
                             (version->min_api_version.empty() ? "?" : version->min_api_version) +
                             "), using " + *api));
  // Which exec path sandbox commands take: through the wrapper, a signal death is reported as
  // the signal; without it (a remote engine, no trusted binary) as exit code 128+N.
  exec::ExecWrapper wrapper =
      exec::FindExecWrapper((*client)->endpoint().kind == docker::Endpoint::Kind::kUnix);
  if (wrapper.usable()) {
    checks.push_back(Check("exec-wrapper", Level::kOk,
                           wrapper.host_path + " at " + exec::kExecWrapperPath +
                               " in each sandbox: signal deaths are reported as signals"));
  } else {
    checks.push_back(Check("exec-wrapper", Level::kWarn,
                           wrapper.reason + "; sandbox commands run without it, and one killed "
                                            "by signal N is reported as exit code 128+N",
                           "install sandrun-exec next to sandrun (the build puts it there), owned "
                           "by root and writable only by its owner"));
  }
  const bool local = (*client)->endpoint().kind == docker::Endpoint::Kind::kUnix;
  checks.push_back(ExecPathCheck(local, cfg));
  checks.push_back(WarmPoolCheck(local, cfg));

  const std::string images_dir = docker::DefaultImagesDir();
  for (const ImageUse& use : images) {
    const std::string recipe = docker::RecipeForImage(images_dir, use.ref);
    auto info = (*client)->InspectImage(use.ref, opts);
    if (!info) {
      const bool missing = info.error().code == ErrorCode::kNotFound;
      checks.push_back(
          Check("image", Level::kFail,
                use.ref + UsedBy(use) + (missing ? " is missing" : ": " + info.error().ToString()) +
                    (use.keys.empty() ? "" : ": every sandbox command that uses it fails"),
                docker::MissingImageHint(images_dir, use.ref)));
      continue;
    }
    std::string detail = use.ref + UsedBy(use) + " " + info->id.substr(0, 19);
    auto label = info->labels.find(docker::kRecipeHashLabel);
    auto hash = recipe.empty() ? Result<std::string>(Error(ErrorCode::kNotFound, "no recipe"))
                               : docker::RecipeHash(images_dir, recipe);
    if (hash && (label == info->labels.end() || label->second != *hash)) {
      checks.push_back(Check("image", Level::kWarn,
                             detail + ": older than its recipe in " + images_dir,
                             "sandrun image build " + recipe));
      continue;
    }
    checks.push_back(Check("image", Level::kOk, detail));
  }
}

DoctorCheck SeccompCheck() {
  auto support = harden::ProbeSeccomp();
  if (!support) {
    return Check("seccomp", Level::kFail, support.error().ToString(),
                 "use a kernel with CONFIG_SECCOMP_FILTER; host commands need it");
  }
  return Check("seccomp", Level::kOk,
               "filter mode available; libseccomp " + support->library_version + " (API level " +
                   std::to_string(support->api_level) + ")");
}

// Which profiles and image recipes this sandrun uses, and where from (sandbox/os/data_dir.h).
// Without profiles nothing runs; without recipes only `sandrun image build` is lost. Returns
// whether the profiles directory is there.
bool DataDirChecks(std::vector<DoctorCheck>& checks) {
  bool profiles_present = true;
  for (DataKind kind : {DataKind::kProfiles, DataKind::kImages}) {
    const DataDir dir = FindDataDir(kind);
    const std::string name = DataKindName(kind);
    if (Status there = CheckDataDir(dir); !there) {
      const bool profiles = kind == DataKind::kProfiles;
      if (profiles) profiles_present = false;
      checks.push_back(Check(
          name, profiles ? Level::kFail : Level::kWarn,
          there.error().message +
              (profiles ? ": every call is refused" : ": `sandrun image build` has no recipes"),
          DataDirFix(kind)));
      continue;
    }
    checks.push_back(Check(name, Level::kOk, dir.path + " (" + DescribeSource(dir) + ")"));
  }
  return profiles_present;
}

// profiles/: every file of every kind loads with its loader; seccomp profiles also compile and
// pass the lint, host profiles are prepared as a command would use them.
void ProfileChecks(std::vector<DoctorCheck>& checks) {
  const std::string dir = harden::DefaultProfilesDir();
  const std::string fix = "fix the file named above (profiles/README.md describes the format)";
  auto list = [&](const char* kind) {
    auto names = harden::ListProfiles(dir, kind);
    if (!names) checks.push_back(Check("profile", Level::kFail, names.error().ToString(), fix));
    return names ? *names : std::vector<std::string>{};
  };
  for (const std::string& name : list("seccomp")) {
    const std::string file = "seccomp/" + name + ".json";
    auto profile = harden::LoadSeccompProfile(dir, name);
    if (!profile) {
      checks.push_back(Check("profile", Level::kFail, profile.error().ToString(), fix));
      continue;
    }
    auto filter = harden::CompileSeccompProfile(*profile);
    if (!filter) {
      checks.push_back(Check("profile", Level::kFail, filter.error().ToString(), fix));
      continue;
    }
    std::vector<std::string> notes = harden::LintSeccompProfile(*profile);
    notes.insert(notes.end(), filter->warnings.begin(), filter->warnings.end());
    std::string detail = file + ": " + std::to_string(profile->rules.size()) + " rules, " +
                         std::to_string(filter->program.size()) + " BPF instructions here";
    if (!notes.empty()) {
      checks.push_back(
          Check("profile", Level::kWarn,
                detail + "; " + notes.front() + (notes.size() > 1 ? " (and more)" : ""),
                "give every dangerous syscall a reason in its rule's comment"));
      continue;
    }
    checks.push_back(Check("profile", Level::kOk, detail));
  }
  for (const std::string& name : list("host")) {
    auto h = harden::HostHardening::Prepare(dir, name);
    if (!h) {
      checks.push_back(Check("profile", Level::kFail, h.error().ToString(), fix));
      continue;
    }
    const harden::HostProfile& p = (*h)->profile();
    std::string detail =
        "host/" + name + ".json: seccomp " + p.seccomp_profile +
        (p.seccomp_mode == harden::SeccompMode::kRequired ? " (required)" : " (optional)") +
        ", keeps " +
        (p.keep_capabilities.empty()
             ? std::string("no capabilities")
             : std::to_string(p.keep_capabilities.size()) + " capabilities");
    if (!(*h)->warnings().empty()) {
      checks.push_back(Check("profile", Level::kWarn, detail + "; " + (*h)->warnings().front(),
                             "use a kernel with CONFIG_SECCOMP_FILTER"));
      continue;
    }
    checks.push_back(Check("profile", Level::kOk, detail));
  }
  for (const std::string& name : list("containers")) {
    auto preset = harden::LoadContainerPreset(dir, name);
    if (!preset) {
      checks.push_back(Check("profile", Level::kFail, preset.error().ToString(), fix));
      continue;
    }
    auto seccomp = harden::LoadSeccompProfileJson(dir, preset->seccomp_profile);
    if (!seccomp) {
      checks.push_back(Check("profile", Level::kFail,
                             "containers/" + name + ".json: " + seccomp.error().ToString(), fix));
      continue;
    }
    checks.push_back(Check("profile", Level::kOk,
                           "containers/" + name + ".json: network " + preset->network_mode +
                               ", seccomp " + preset->seccomp_profile));
  }
  for (const std::string& name : list("safe-bins")) {
    auto bins = policy::LoadSafeBinProfiles(dir, name);
    if (!bins) {
      checks.push_back(Check("profile", Level::kFail, bins.error().ToString(), fix));
      continue;
    }
    checks.push_back(Check(
        "profile", Level::kOk,
        "safe-bins/" + name + ".json: " + std::to_string(bins->size()) + " safe-bin profiles"));
  }
}

// Filtering works here: a child loads the default host profile's filter and is refused unshare.
DoctorCheck FilterCheck() {
  const std::string fix = "run sandrun on a kernel with CONFIG_SECCOMP_FILTER (Linux 4.14+)";
  auto h = harden::HostHardening::Prepare(harden::DefaultProfilesDir(), "default");
  if (!h) return Check("seccomp", Level::kFail, h.error().ToString(), fix);
  if (!(*h)->seccomp_active()) {
    return Check("seccomp", Level::kWarn,
                 "host commands run without a system call filter on this host", fix);
  }
  auto probe = harden::ProbeFilter(**h);
  if (!probe) {
    return Check("seccomp", Level::kFail,
                 "loading the default host filter: " + probe.error().ToString(), fix);
  }
  if (!probe->filter_mode || probe->unshare_errno != EPERM) {
    return Check("seccomp", Level::kFail,
                 std::string("the default host filter did not take effect (filter mode ") +
                     (probe->filter_mode ? "on" : "off") + ", unshare errno " +
                     std::to_string(probe->unshare_errno) + ")",
                 fix);
  }
  return Check("seccomp", Level::kOk,
               "the default host filter loads in a child and denies unshare with EPERM");
}

// Host commands are confined (harden/confine.h): a private mount namespace, plus a user
// namespace for a non-root runner; a root runner's commands switch to tools.exec.hostUser.
DoctorCheck ConfineCheck() {
  const bool root = ::geteuid() == 0;
  Status probe = harden::ProbeConfinement(!root);
  if (!probe) {
    return Check(
        "confine", Level::kFail,
        std::string("host commands cannot be confined here (") + probe.error().ToString() +
            "): the default host profile refuses every gateway call",
        root ? "run sandrun where it may create mount namespaces (CAP_SYS_ADMIN), or use a host "
               "profile with \"confine\": {\"mode\": \"optional\"}"
             : "allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0, "
               "kernel.unprivileged_userns_clone=1), run as root, or use a host profile with "
               "\"confine\": {\"mode\": \"optional\"}");
  }
  std::string who = root ? "the runner is root: host commands run as tools.exec.hostUser "
                           "(default nobody) without supplementary groups, except under a "
                           "profile with \"identity\": \"runner\" (privileged)"
                         : "the runner is uid " + std::to_string(::geteuid()) +
                               ": host commands share it, in a user namespace of their own";
  if (root) {
    if (auto nobody = harden::ResolveIdentity("nobody"); !nobody) {
      return Check("confine", Level::kWarn, who + "; " + nobody.error().ToString(),
                   "create the user nobody or set tools.exec.hostUser");
    }
  }
  return Check("confine", Level::kOk,
               std::string("host commands run in a user and mount namespace of their own") +
                   (root ? " (the privileged profile: mount namespace only)" : "") +
                   " (state dir, server and engine sockets hidden; profiles, /proc/sys, /sys "
                   "read-only); " +
                   who);
}

// A trial in a private dir under the state dir: what the sandbox's mounts will get.
struct TrialDir {
  std::string path;
  ~TrialDir() {
    if (path.empty()) return;
    if (auto points = MountPointsUnder(path); points) {
      for (const std::string& p : *points) (void)DetachMount(p);
    }
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

Result<std::string> MakeTrialDir(const std::string& state_dir, const char* what) {
  const std::string path = state_dir + "/sandbox/doctor-" + what + "-" + std::to_string(::getpid());
  auto made = MakeDirsNoSymlinks(path, 0700);
  if (!made) return std::move(made).error();
  return path;
}

Status TryHardenedBind(const std::string& dir) {
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd base, OpenNoSymlinks(dir));
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd src, MakeDirAt(base.get(), "src", 0700));
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd dst, MakeDirAt(base.get(), "dst", 0700));
  SANDRUN_RETURN_IF_ERROR(BindMountHardened(src.get(), base.get(), "dst", /*read_only=*/true));
  return DetachMount(dir + "/dst");
}

Status TryBoundedScratch(const std::string& dir) {
  SANDRUN_RETURN_IF_ERROR(CreateExt4Image(dir + "/trial.img", 16 << 20, 65534, 65534));
  UniqueFd image(::open((dir + "/trial.img").c_str(), O_RDWR | O_CLOEXEC));
  if (!image.valid()) return Error::FromErrno(errno, "cannot open the trial image");
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd base, OpenNoSymlinks(dir));
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd point, MakeDirAt(base.get(), "mnt", 0700));
  SANDRUN_ASSIGN_OR_RETURN(LoopDevice loop, AttachLoopDevice(image.get()));
  SANDRUN_RETURN_IF_ERROR(MountExt4(loop.path, base.get(), "mnt"));
  return DetachMount(dir + "/mnt");
}

// Host-backed mounts (nosuid,nodev) and the scratch size bound, tried for real.
void MountChecks(std::vector<DoctorCheck>& checks) {
  auto client = docker::Client::FromEnvironment({std::chrono::milliseconds(3000)});
  const bool local = client && (*client)->endpoint().kind == docker::Endpoint::Kind::kUnix;
  const exec::MountSupport support = exec::DetectMountSupport(local);
  auto state_dir = config::StateDirPath();
  if (!support.staged) {
    checks.push_back(Check("mounts", Level::kWarn,
                           support.reason +
                               "; sandboxes run as a non-root user and one that may be root "
                               "(sandbox.docker.user) is refused",
                           "run sandrun as root with a local engine to get nosuid,nodev mounts"));
  } else if (!state_dir) {
    checks.push_back(Check("mounts", Level::kFail, state_dir.error().ToString()));
  } else {
    TrialDir trial;
    auto dir = MakeTrialDir(*state_dir, "mounts");
    if (dir) trial.path = *dir;
    Status ok = dir ? TryHardenedBind(*dir) : Status(dir.error());
    checks.push_back(
        ok ? Check("mounts", Level::kOk,
                   "host-backed mounts (workspace, scratch, binds) are bound nosuid,nodev "
                   "(read-only where asked) through " +
                       *state_dir + "/sandbox/mnt while a container starts")
           : Check("mounts", Level::kFail, "a nosuid,nodev bind failed: " + ok.error().ToString(),
                   "use a kernel with the mount API (Linux 5.12+) or bind remounts"));
  }
  if (!support.bounded) {
    checks.push_back(Check("scratch", Level::kWarn, support.bound_note,
                           "run sandrun as root with e2fsprogs and loop devices"));
    return;
  }
  if (!state_dir) return;
  TrialDir trial;
  auto dir = MakeTrialDir(*state_dir, "scratch");
  if (dir) trial.path = *dir;
  Status ok = dir ? TryBoundedScratch(*dir) : Status(dir.error());
  checks.push_back(
      ok ? Check("scratch", Level::kOk,
                 "scratch workspaces are sparse ext4 images bounded by sandbox.scratchLimit "
                 "(default 2g), mounted nosuid,nodev from loop devices (" +
                     FindMkfsExt4() + ")")
         : Check("scratch", Level::kFail,
                 "a bounded scratch image failed: " + ok.error().ToString(),
                 "check /dev/loop-control and e2fsprogs, or set sandbox.scratchLimit to 0"));
}

const char* LevelName(Level level) {
  switch (level) {
    case Level::kOk:
      return "ok";
    case Level::kWarn:
      return "warn";
    case Level::kFail:
      return "FAIL";
  }
  return "?";
}

}  // namespace

bool DoctorReport::ok() const {
  for (const auto& c : checks) {
    if (c.level == Level::kFail) return false;
  }
  return true;
}

DoctorReport RunDoctor(const std::string& config_file) {
  DoctorReport report;
  report.checks.push_back(StateDirCheck());
  std::optional<config::Config> cfg = ConfigCheck(config_file, report.checks);
  EngineChecks(report.checks, ImagesToCheck(cfg ? &*cfg : nullptr), cfg ? &*cfg : nullptr);
  report.checks.push_back(SeccompCheck());
  report.checks.push_back(FilterCheck());
  report.checks.push_back(ConfineCheck());
  MountChecks(report.checks);
  TreeTrackingInfo tree = DescribeTreeTracking();  // how a timed-out host command's tree dies
  report.checks.push_back(
      Check("process-tree", tree.cgroup ? Level::kOk : Level::kWarn, tree.detail));
  if (DataDirChecks(report.checks)) ProfileChecks(report.checks);
  return report;
}

std::string FormatDoctorText(const DoctorReport& report) {
  std::string out;
  size_t failed = 0;
  std::string failed_names;
  for (const auto& c : report.checks) {
    std::string level = LevelName(c.level);
    std::string name = c.name;
    level.resize(6, ' ');
    name.resize(13, ' ');
    out += "  " + level + name + c.detail + "\n";
    if (!c.fix.empty() && c.level != Level::kOk)
      out += "        " + std::string(13, ' ') + "fix: " + c.fix + "\n";
    if (c.level == Level::kFail) {
      ++failed;
      if (failed_names.find(c.name) == std::string::npos) {
        failed_names += (failed_names.empty() ? "" : ", ") + c.name;
      }
    }
  }
  if (failed == 0) {
    out += "all required checks passed\n";
  } else {
    out += std::to_string(failed) + " check" + (failed == 1 ? "" : "s") +
           " failed: " + failed_names + "\n";
  }
  return out;
}

std::string FormatDoctorJson(const DoctorReport& report) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("ok");
  w.Bool(report.ok());
  w.Key("checks");
  w.StartArray();
  for (const auto& c : report.checks) {
    w.StartObject();
    w.Key("name");
    w.String(c.name.c_str());
    w.Key("status");
    w.String(c.level == Level::kOk ? "ok" : c.level == Level::kWarn ? "warn" : "fail");
    w.Key("detail");
    w.String(c.detail.c_str());
    if (!c.fix.empty() && c.level != Level::kOk) {
      w.Key("fix");
      w.String(c.fix.c_str());
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace sandrun::api

#include "sandbox/harden/host_hardening.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "sandbox/base/sha256.h"
#include "sandbox/harden/probe_child.h"
#include "sandbox/harden/profile_file.h"
#include "sandbox/harden/seccomp_compiler.h"
#include "sandbox/harden/seccomp_profile.h"
#include "sandbox/harden/seccomp_support.h"
#include "sandbox/os/file.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::harden {
namespace {

Status ProbeKernel() {
  auto support = ProbeSeccomp();
  if (!support) return std::move(support).error();
  return Ok();
}

bool PathWithin(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root == "/" || path[root.size()] == '/'));
}

// A cached program is trusted only if this uid wrote it and nobody else can have changed it.
bool TrustedCacheFile(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  return st.st_uid == ::geteuid() && (st.st_mode & 022) == 0;
}

// What the command's mount namespace hides and protects, or nullopt when it runs unconfined.
Result<std::optional<ConfinePlan>> PlanConfinement(const HostProfile& p,
                                                   const HardeningEnvironment& env,
                                                   const std::optional<Identity>& identity,
                                                   std::vector<std::string>* warnings) {
  ConfineRequest request;
  // A user namespace of its own for every command that is not root: besides letting a non-root
  // runner mount at all, it puts the command outside the user namespace of every other process,
  // so ptrace-class access (/proc/<pid>/root, mem, environ, fd) to the host's processes of the
  // same uid (another agent's sandbox running as 65534, another host command) is refused.
  request.user_namespace = ::geteuid() != 0 || identity.has_value();
  if (identity) {
    request.map_uid = identity->uid;
    request.map_gid = identity->gid;
  }
  request.read_only = p.confine_read_only;
  request.read_only.insert(request.read_only.end(), env.read_only.begin(), env.read_only.end());
  request.masked = p.confine_mask;
  request.masked.insert(request.masked.end(), env.masked.begin(), env.masked.end());
  if (p.confine_mode == ConfineMode::kOptional) {
    Status support =
        env.confine_support ? *env.confine_support : ProbeConfinement(request.user_namespace);
    if (!support) {
      warnings->push_back(
          "Warning: this host refuses the namespaces host commands are confined "
          "in (" +
          support.error().ToString() + "); host profile \"" + p.name +
          "\" allows that (confine mode \"optional\"), so the command can "
          "reach the runner's state, sockets and profiles.");
      return std::optional<ConfinePlan>();
    }
  } else if (env.confine_support && !*env.confine_support) {
    return Error(env.confine_support->error())
        .Wrap("host profile \"" + p.name + "\" (" + p.path +
              ") requires confinement (confine mode \"required\"), which this host refuses");
  }
  SANDRUN_ASSIGN_OR_RETURN(ConfinePlan plan, PrepareConfinement(request));
  return std::optional<ConfinePlan>(std::move(plan));
}

}  // namespace

Result<std::shared_ptr<const HostHardening>> HostHardening::Prepare(
    const std::string& profiles_dir, const std::string& name, const HardeningEnvironment& env) {
  std::shared_ptr<HostHardening> h(new HostHardening());
  SANDRUN_ASSIGN_OR_RETURN(h->profile_, LoadHostProfile(profiles_dir, name));
  const HostProfile& p = h->profile_;
  const std::string what = "host profile \"" + p.name + "\" (" + p.path + ")";

  SANDRUN_ASSIGN_OR_RETURN(CapabilityPlan caps, PrepareCapabilities(p.keep_mask));
  std::optional<Identity> identity;
  if (::geteuid() == 0 && p.identity == HostIdentity::kHostUser) {
    auto resolved = ResolveIdentity(env.host_user.empty() ? "nobody" : env.host_user);
    if (!resolved) return std::move(resolved).error();
    identity = std::move(resolved).value();
  }
  SANDRUN_ASSIGN_OR_RETURN(std::optional<ConfinePlan> confine,
                           PlanConfinement(p, env, identity, &h->warnings_));
  // The compiled program is read back only from a directory the commands cannot write to.
  bool cache_protected = false;
  if (confine) {
    for (const std::string& hidden : confine->masked) {
      cache_protected = cache_protected || PathWithin(env.cache_dir, hidden);
    }
  }
  SeccompCompileOptions options;
  options.capabilities = CapabilityNames(caps.keep);
  std::vector<sock_filter> program;
  std::string cache_file;
  if (!env.cache_dir.empty() && cache_protected) {
    // A program compiled before from the same bytes, for the same capabilities and machine.
    auto text = ReadFile(ProfilePath(profiles_dir, "seccomp", p.seccomp_profile), 4u << 20);
    if (text) {
      std::string key = *text;
      for (const std::string& cap : options.capabilities) key += '\0' + cap;
      key += '\0' + SeccompCompilerFingerprint();
      cache_file = env.cache_dir + "/seccomp-" + p.seccomp_profile + "-" +
                   Sha256Hex(key).substr(0, 32) + ".bpf";
      auto cached = TrustedCacheFile(cache_file) ? ReadFile(cache_file, 1u << 20)
                                                 : Result<std::string>(std::string());
      if (cached && !cached->empty() && cached->size() % sizeof(sock_filter) == 0) {
        program.resize(cached->size() / sizeof(sock_filter));
        std::memcpy(program.data(), cached->data(), cached->size());
      }
    }
  }
  if (program.empty()) {
    // The seccomp file is loaded and compiled even where the kernel cannot use it: a broken
    // file is an error on every machine, not only on those with seccomp.
    auto seccomp = LoadSeccompProfile(profiles_dir, p.seccomp_profile);
    if (!seccomp) return std::move(seccomp).error().Wrap(what + ": seccomp.profile");
    auto filter = CompileSeccompProfile(*seccomp, options);
    if (!filter) return std::move(filter).error().Wrap(what);
    h->compile_warnings_ = filter->warnings;
    program = std::move(filter->program);
    if (!cache_file.empty() && EnsureDirectory(env.cache_dir, 0700)) {
      // Best effort: a failed write only means compiling again next time.
      (void)WriteFileAtomic(cache_file,
                            std::string_view(reinterpret_cast<const char*>(program.data()),
                                             program.size() * sizeof(sock_filter)),
                            0600, /*durable=*/false);
    }
  }

  ChildHardening::Spec spec;
  spec.confine = std::move(confine);
  spec.identity = std::move(identity);
  spec.caps = caps;
  spec.no_new_privs = p.no_new_privs;
  spec.rlimits = p.rlimits;
  Status support = env.seccomp_support ? *env.seccomp_support : ProbeKernel();
  if (support) {
    spec.bpf = std::move(program);
  } else if (p.seccomp_mode == SeccompMode::kRequired) {
    return std::move(support).error().Wrap(
        what +
        " requires seccomp, which is unavailable here; use a kernel with "
        "CONFIG_SECCOMP_FILTER, or a host profile with \"seccomp\": {\"mode\": "
        "\"optional\"}");
  } else {
    h->warnings_.push_back("Warning: seccomp is unavailable on this host (" +
                           support.error().ToString() + "); host profile \"" + p.name +
                           "\" allows that (seccomp mode \"optional\"), so the command runs "
                           "without a system call filter.");
  }
  auto child = ChildHardening::Create(std::move(spec));
  if (!child) return std::move(child).error().Wrap(what);
  h->child_ = std::move(child).value();
  return std::shared_ptr<const HostHardening>(std::move(h));
}

Result<std::shared_ptr<const HostHardening>> HardeningCache::Get(
    const std::string& profiles_dir, const std::string& name, const HardeningEnvironment& given) {
  HardeningEnvironment env = given;
  env.seccomp_support.reset();
  env.confine_support.reset();
  std::string key = profiles_dir + '\0' + name + '\0' + env.cache_dir + '\0' + env.host_user;
  for (const auto* list : {&env.masked, &env.read_only}) {
    key += '\1';
    for (const std::string& path : *list) key += path + '\0';
  }
  std::lock_guard<std::mutex> lock(mu_);  // held while compiling: one compile per profile
  if (auto it = prepared_.find(key); it != prepared_.end()) return it->second;
  SANDRUN_ASSIGN_OR_RETURN(std::shared_ptr<const HostHardening> h,
                           HostHardening::Prepare(profiles_dir, name, env));
  prepared_.emplace(key, h);
  return h;
}

namespace {

// What the probe child writes back: the failed step, or what it observed.
struct ProbeReport {
  int32_t step_errno = 0;
  char step[60] = {};
  int32_t mode = -1;
  int32_t unshare_errno = 0;
};

}  // namespace

Result<FilterProbe> ProbeFilter(const HostHardening& hardening) {
  SANDRUN_ASSIGN_OR_RETURN(
      ProbeReport report,
      RunProbeChild<ProbeReport>("the seccomp probe child", [&](ProbeReport* r) {
        const char* step = "harden";
        if (int err = hardening.child().Apply(&step); err != 0) {
          r->step_errno = err;
          CopyStep(r->step, step);
          return;
        }
        r->mode = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
        // unshare(0) changes nothing, so it is harmless if the filter lets it through.
        r->unshare_errno = ::syscall(SYS_unshare, 0) == 0 ? 0 : errno;
      }));
  if (report.step_errno != 0) {
    return Error::FromErrno(report.step_errno,
                            std::string(report.step, strnlen(report.step, sizeof(report.step))));
  }
  FilterProbe probe;
  probe.filter_mode = report.mode == 2;  // SECCOMP_MODE_FILTER
  probe.unshare_errno = report.unshare_errno;
  return probe;
}

}  // namespace sandrun::harden

#include "sandbox/harden/child_steps.h"

#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string_view>

namespace sandrun::harden {
namespace {

// Step names must be static: the child reports a pointer, never a built string.
struct LimitStep {
  int resource;
  const char* step;
};
constexpr LimitStep kLimitSteps[] = {
    {RLIMIT_AS, "harden: setrlimit RLIMIT_AS"},
    {RLIMIT_CORE, "harden: setrlimit RLIMIT_CORE"},
    {RLIMIT_CPU, "harden: setrlimit RLIMIT_CPU"},
    {RLIMIT_DATA, "harden: setrlimit RLIMIT_DATA"},
    {RLIMIT_FSIZE, "harden: setrlimit RLIMIT_FSIZE"},
    {RLIMIT_LOCKS, "harden: setrlimit RLIMIT_LOCKS"},
    {RLIMIT_MEMLOCK, "harden: setrlimit RLIMIT_MEMLOCK"},
    {RLIMIT_MSGQUEUE, "harden: setrlimit RLIMIT_MSGQUEUE"},
    {RLIMIT_NICE, "harden: setrlimit RLIMIT_NICE"},
    {RLIMIT_NOFILE, "harden: setrlimit RLIMIT_NOFILE"},
    {RLIMIT_NPROC, "harden: setrlimit RLIMIT_NPROC"},
    {RLIMIT_RSS, "harden: setrlimit RLIMIT_RSS"},
    {RLIMIT_RTPRIO, "harden: setrlimit RLIMIT_RTPRIO"},
    {RLIMIT_RTTIME, "harden: setrlimit RLIMIT_RTTIME"},
    {RLIMIT_SIGPENDING, "harden: setrlimit RLIMIT_SIGPENDING"},
    {RLIMIT_STACK, "harden: setrlimit RLIMIT_STACK"},
};

const char* LimitStepName(int resource) {
  for (const auto& l : kLimitSteps) {
    if (l.resource == resource) return l.step;
  }
  return "harden: setrlimit";
}

}  // namespace

Result<std::unique_ptr<ChildHardening>> ChildHardening::Create(Spec spec) {
  std::unique_ptr<ChildHardening> h(new ChildHardening());
  h->reset_signals_ = spec.reset_signals;
  h->close_fds_ = spec.close_fds;
  h->confine_ = std::move(spec.confine);
  h->caps_ = spec.caps;
  h->identity_ = std::move(spec.identity);
  if (h->identity_ && !h->caps_) {
    return Error(ErrorCode::kInvalidArgument, "an identity switch needs the capability steps");
  }
  if (h->confine_ && h->confine_->user_namespace && h->caps_) {
    // Inside its own user namespace the child holds CAP_SETPCAP there: the bounding set can
    // and should be emptied even though the runner itself has no capabilities.
    h->caps_->drop_bounding = true;
  }
  h->no_new_privs_ = spec.no_new_privs;
  if (spec.rlimits.size() > kMaxRlimits) {
    return Error(ErrorCode::kInvalidArgument, "too many rlimits");
  }
  for (const RlimitSetting& r : spec.rlimits) {
    rlimit current{};
    if (::getrlimit(static_cast<__rlimit_resource>(r.resource), &current) != 0) {
      return Error::FromErrno(errno, "getrlimit " + r.name);
    }
    Limit& l = h->limits_[h->limit_count_++];
    l.resource = r.resource;
    l.step = LimitStepName(r.resource);
    // Raising a hard limit needs CAP_SYS_RESOURCE, which the command is about to lose anyway:
    // a profile value above the runner's own hard limit means "as high as allowed".
    rlim_t hard = static_cast<rlim_t>(r.hard);
    if (current.rlim_max != RLIM_INFINITY && (hard == RLIM_INFINITY || hard > current.rlim_max)) {
      hard = current.rlim_max;
    }
    rlim_t soft = static_cast<rlim_t>(r.soft);
    if (hard != RLIM_INFINITY && (soft == RLIM_INFINITY || soft > hard)) soft = hard;
    l.value.rlim_cur = soft;
    l.value.rlim_max = hard;
  }
  if (spec.bpf) {
    if (spec.bpf->empty() || spec.bpf->size() > BPF_MAXINSNS) {
      return Error(ErrorCode::kInvalidArgument,
                   "seccomp program of " + std::to_string(spec.bpf->size()) + " instructions");
    }
    if (spec.caps && !spec.no_new_privs) {
      // After the capability drop only a no_new_privs process may install a filter.
      return Error(ErrorCode::kInvalidArgument, "a seccomp filter needs no_new_privs");
    }
    h->has_filter_ = true;
    h->program_ = std::move(*spec.bpf);
    h->fprog_.len = static_cast<unsigned short>(h->program_.size());
    h->fprog_.filter = h->program_.data();
  }
  return h;
}

int ChildHardening::Run(const void* self, const char** step) {
  return static_cast<const ChildHardening*>(self)->Apply(step);
}

// Between fork and exec: async-signal-safe calls only, nothing written but errno and *step.
int ChildHardening::Apply(const char** step) const {
  // 1. Signals: default dispositions and an empty mask. A handler of the runner must never run
  // here, and SIG_IGN or a blocked signal would be inherited across execve.
  if (reset_signals_) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);  // EINVAL for some
    }
    sigset_t none;
    sigemptyset(&none);
    if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) {
      *step = "harden: reset signals";
      return errno;
    }
  }
  // 2. Descriptors: everything above stdio closes on exec. Not closed now: the status pipe to the
  // parent must stay open until execve succeeds (it is close-on-exec itself).
  if (close_fds_ && ::close_range(3, UINT_MAX, CLOSE_RANGE_CLOEXEC) != 0 && errno != ENOSYS &&
      errno != EINVAL) {
    *step = "harden: close_range";
    return errno;
  }
  // 3. Confinement first where the runner's own privileges do it (a root runner that keeps its
  // identity: mounting needs CAP_SYS_ADMIN, which the next steps take away; a non-root runner:
  // the user namespace gives the capabilities the mounts need).
  const bool confine_after_identity = confine_ && identity_;
  if (confine_ && !confine_after_identity) {
    if (int err = ApplyConfinement(*confine_, step); err != 0) return err;
  }
  // 4. Capabilities: bounding set, the identity switch, then capset and ambient (caps.h says
  // why in this order). setresuid away from 0 clears the permitted and effective sets itself.
  if (caps_) {
    if (int err = DropBoundingSet(*caps_, step); err != 0) return err;
    if (identity_) {
      if (int err = ApplyIdentity(*identity_, step); err != 0) return err;
    }
    if (confine_after_identity) {
      // A root runner's command, now the host user, unshares its user namespace as that user
      // (mapping its own ids), then mounts with the capabilities it holds there only. A new
      // user namespace starts with a full bounding set: drop it again.
      if (int err = ApplyConfinement(*confine_, step); err != 0) return err;
      if (int err = DropBoundingSet(*caps_, step); err != 0) return err;
    }
    if (int err = SetCapabilitySets(*caps_, step); err != 0) return err;
  }
  // 6. no_new_privs after the drop: from here execve cannot gain privileges, and the kernel lets
  // this (now unprivileged) process install a seccomp filter.
  if (no_new_privs_ && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *step = "harden: no_new_privs";
    return errno;
  }
  // 7. Resource limits: lowering never needs a capability, and hard limits were clamped to the
  // runner's own in the parent.
  for (size_t i = 0; i < limit_count_; ++i) {
    const Limit& l = limits_[i];
    if (::setrlimit(static_cast<__rlimit_resource>(l.resource), &l.value) != 0) {
      *step = l.step;
      return errno;
    }
  }
  // 8. Seccomp last, with the raw system call: libseccomp's seccomp_load would allocate. Every
  // system call from here on, execve included, goes through the filter.
  if (has_filter_ && ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog_) != 0) {
    *step = "harden: seccomp";
    return errno;
  }
  return 0;
}

}  // namespace sandrun::harden

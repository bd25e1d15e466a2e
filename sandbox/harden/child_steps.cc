#include "sandbox/harden/child_steps.h"

#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
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
  h->BuildSteps();
  return h;
}

// Every step runs between clone and exec: async-signal-safe calls only, nothing written but
// errno and *step. The contexts point into this object.
void ChildHardening::BuildSteps() {
  const ChildStep confine{"confine",
                          [](const void* plan, const char** step) {
                            return ApplyConfinement(*static_cast<const ConfinePlan*>(plan), step);
                          },
                          confine_ ? &*confine_ : nullptr};
  const ChildStep bounding{"harden: bounding set",
                           [](const void* plan, const char** step) {
                             return DropBoundingSet(*static_cast<const CapabilityPlan*>(plan),
                                                    step);
                           },
                           caps_ ? &*caps_ : nullptr};
  // 1. Confinement first where the runner's own privileges do it (a root runner that keeps its
  // identity: mounting needs CAP_SYS_ADMIN, which the next steps take away; a non-root runner:
  // the user namespace gives the capabilities the mounts need).
  const bool confine_after_identity = confine_ && identity_;
  if (confine_ && !confine_after_identity) credentials_.push_back(confine);
  // 2, 3. Capabilities: bounding set, the identity switch, then capset and ambient (caps.h says
  // why in this order). setresuid away from 0 clears the permitted and effective sets itself.
  if (caps_) {
    credentials_.push_back(bounding);
    if (identity_) {
      credentials_.push_back({"identity",
                              [](const void* who, const char** step) {
                                return ApplyIdentity(*static_cast<const Identity*>(who), step);
                              },
                              &*identity_});
    }
    if (confine_after_identity) {
      // A root runner's command, now the host user, unshares its user namespace as that user
      // (mapping its own ids), then mounts with the capabilities it holds there only. A new
      // user namespace starts with a full bounding set: drop it again.
      credentials_.push_back(confine);
      credentials_.push_back(bounding);
    }
    credentials_.push_back({"harden: capset",
                            [](const void* plan, const char** step) {
                              return SetCapabilitySets(*static_cast<const CapabilityPlan*>(plan),
                                                       step);
                            },
                            &*caps_});
  }
  // 4. no_new_privs after the drop: from here execve cannot gain privileges, and the kernel lets
  // this (now unprivileged) process install a seccomp filter.
  if (no_new_privs_) {
    lockdown_.push_back({"harden: no_new_privs",
                         [](const void*, const char**) {
                           return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? 0 : errno;
                         },
                         nullptr});
  }
  // 5. Resource limits: lowering never needs a capability, and hard limits were clamped to the
  // runner's own in the parent.
  for (size_t i = 0; i < limit_count_; ++i) {
    lockdown_.push_back(
        {limits_[i].step,
         [](const void* limit, const char**) {
           const Limit& l = *static_cast<const Limit*>(limit);
           return ::setrlimit(static_cast<__rlimit_resource>(l.resource), &l.value) == 0 ? 0
                                                                                         : errno;
         },
         &limits_[i]});
  }
  // 6. Seccomp last, with the raw system call: libseccomp's seccomp_load would allocate. Every
  // system call from here on, execve included, goes through the filter.
  if (has_filter_) {
    lockdown_.push_back({"harden: seccomp",
                         [](const void* program, const char**) {
                           return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, program) == 0
                                      ? 0
                                      : errno;
                         },
                         &fprog_});
  }
}

int ChildHardening::Apply(const char** step) const {
  for (const auto* list : {&credentials_, &lockdown_}) {
    for (const ChildStep& s : *list) {
      *step = s.name;
      if (int err = s.run(s.context, step); err != 0) return err;
    }
  }
  return 0;
}

}  // namespace sandrun::harden

// The ordered, async-signal-safe hardening sequence a host command's child runs between fork and
// execve, and the immutable data it runs on (built in the parent).
//
// Pattern of use:
//   ChildHardening::Spec spec;
//   spec.caps = ...; spec.rlimits = ...; spec.bpf = filter.program;
//   SANDRUN_ASSIGN_OR_RETURN(std::unique_ptr<ChildHardening> h, ChildHardening::Create(spec));
//   SpawnOptions opts; opts.child_steps = h->steps();   // `h` must outlive the spawn
//
// The order (reference §6: everyone agrees on "drop privileges, then NNP, then seccomp last"):
//   1. reset signals      default dispositions, empty mask (a parent's SIG_IGN survives execve)
//   2. close_range        every descriptor above stdio close-on-exec (no runner fd leaks)
//   3. confine            a private mount namespace (+ a user namespace for a non-root runner):
//                         masked and read-only paths (confine.h); needs CAP_SYS_ADMIN, so early
//   4. bounding set       drop all but the kept capabilities (needs CAP_SETPCAP)
//   4b. identity          a root runner's command becomes tools.exec.hostUser: no supplementary
//                         groups, gid, uid (needs CAP_SETUID/CAP_SETGID, so before capset)
//   4c. capset            effective = permitted = inheritable = kept
//   5. ambient            cleared, kept ones raised
//   6. no_new_privs       execve can no longer add privileges (setuid, file caps); lets an
//                         unprivileged process install the filter
//   7. rlimits            soft/hard as prepared (never above the runner's hard limit)
//   8. seccomp            the BPF program, with the raw seccomp(2) call, as the very last step
// No step allocates, locks or logs; the child shares the parent's memory (CLONE_VM) and only
// reads this object. A failing step returns its errno and a static step name, which Subprocess
// reports to the parent as "<step>: <strerror>" before the child exits.
#pragma once

#include <linux/filter.h>
#include <sys/resource.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/harden/caps.h"
#include "sandbox/harden/confine.h"
#include "sandbox/harden/host_profile.h"
#include "sandbox/os/subprocess.h"

namespace sandrun::harden {

class ChildHardening {
 public:
  struct Spec {
    // Steps 1 and 2. HostHardening turns both off: Subprocess::Spawn's child has just done them.
    bool reset_signals = true;
    bool close_fds = true;
    std::optional<ConfinePlan> confine;  // nullopt: the runner's mount namespace
    std::optional<CapabilityPlan> caps;  // nullopt: capabilities untouched
    std::optional<Identity> identity;    // nullopt: the runner's uid/gid/groups
    bool no_new_privs = true;
    std::vector<RlimitSetting> rlimits;           // clamped to the runner's hard limits
    std::optional<std::vector<sock_filter>> bpf;  // nullopt: no seccomp filter
  };

  // Validates and freezes `spec`. Hard limits above the runner's own are lowered to it (raising
  // one needs CAP_SYS_RESOURCE), soft limits to at most the hard one.
  static Result<std::unique_ptr<ChildHardening>> Create(Spec spec);

  ChildHardening(const ChildHardening&) = delete;
  ChildHardening& operator=(const ChildHardening&) = delete;

  // For SpawnOptions::child_steps; valid while this object lives.
  ChildSteps steps() const {
    return ChildSteps{&ChildHardening::Run, this, confine_ && confine_->user_namespace};
  }

  // Runs the sequence in the calling process (a child between fork and exec). 0 on success, else
  // the errno with *step set to a static name such as "harden: seccomp".
  int Apply(const char** step) const;

  bool has_seccomp() const { return has_filter_; }
  size_t filter_instructions() const { return program_.size(); }
  const std::optional<CapabilityPlan>& caps() const { return caps_; }
  const std::optional<ConfinePlan>& confine() const { return confine_; }
  const std::optional<Identity>& identity() const { return identity_; }

 private:
  static constexpr size_t kMaxRlimits = 16;
  struct Limit {
    int resource = 0;
    rlimit value{};
    const char* step = "";
  };

  ChildHardening() = default;
  static int Run(const void* self, const char** step);

  bool reset_signals_ = true;
  bool close_fds_ = true;
  std::optional<ConfinePlan> confine_;
  std::optional<CapabilityPlan> caps_;
  std::optional<Identity> identity_;
  bool no_new_privs_ = true;
  Limit limits_[kMaxRlimits];
  size_t limit_count_ = 0;
  bool has_filter_ = false;
  std::vector<sock_filter> program_;
  sock_fprog fprog_{};  // points into program_
};

}  // namespace sandrun::harden

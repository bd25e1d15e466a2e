// The ordered, async-signal-safe hardening steps a host command's child runs between clone and
// execve, and the immutable data they run on (built in the parent). They are the hardening part
// of the child's one step list (Subprocess, subprocess.h): the process steps (cgroup, signals,
// process group, stdio, close_range, cwd) come first and are Subprocess's own.
//
// Pattern of use:
//   ChildHardening::Spec spec;
//   spec.caps = ...; spec.rlimits = ...; spec.bpf = filter.program;
//   SANDRUN_ASSIGN_OR_RETURN(std::unique_ptr<ChildHardening> h, ChildHardening::Create(spec));
//   SpawnOptions opts; opts.child_steps = h->steps();   // `h` must outlive the spawn
//
// The order (reference §6: everyone agrees on "drop privileges, then NNP, then seccomp last"):
//   credentials (ChildSteps::credentials, before Subprocess arms the parent-death signal, which
//   a change of the effective uid or gid clears):
//   1. confine            a private mount namespace (+ a user namespace for a non-root runner):
//                         masked and read-only paths (confine.h); needs CAP_SYS_ADMIN, so early
//   2. bounding set       drop all but the kept capabilities (needs CAP_SETPCAP)
//   2b. identity          a root runner's command becomes tools.exec.hostUser: no supplementary
//                         groups, gid, uid (needs CAP_SETUID/CAP_SETGID, so before capset); it
//                         is then confined as that user (1 moves here), and the new user
//                         namespace's full bounding set is dropped again
//   3. capset + ambient   effective = permitted = inheritable = kept; ambient cleared, kept raised
//   lockdown (ChildSteps::lockdown, after the parent-death signal):
//   4. no_new_privs       execve can no longer add privileges (setuid, file caps); lets an
//                         unprivileged process install the filter
//   5. rlimits            soft/hard as prepared (never above the runner's hard limit)
//   6. seccomp            the BPF program, with the raw seccomp(2) call, as the very last step
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
    return ChildSteps{credentials_, lockdown_, confine_ && confine_->user_namespace};
  }

  // Runs the same steps in the calling process (a probe child that never execs: ProbeFilter). 0
  // on success, else the errno with *step set to a static name such as "harden: seccomp".
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
  // The step lists, pointing into this object (which never moves: Create returns it boxed).
  void BuildSteps();

  std::optional<ConfinePlan> confine_;
  std::optional<CapabilityPlan> caps_;
  std::optional<Identity> identity_;
  bool no_new_privs_ = true;
  Limit limits_[kMaxRlimits];
  size_t limit_count_ = 0;
  bool has_filter_ = false;
  std::vector<sock_filter> program_;
  sock_fprog fprog_{};  // points into program_
  std::vector<ChildStep> credentials_;
  std::vector<ChildStep> lockdown_;
};

}  // namespace sandrun::harden

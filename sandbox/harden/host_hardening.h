// A host profile made ready to run: profiles/host/<name>.json loaded, its seccomp profile loaded
// and compiled to BPF, capabilities and rlimits prepared against this runner, all once per
// process and cached by profile name.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(auto h, HostHardening::Cached(DefaultProfilesDir(),
//   plan.host_profile)); spawn.child_steps = h->steps();            // keep `h` alive until Spawn
//   returns outcome.warnings += h->warnings();         // e.g. seccomp optional and unavailable
//   here
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/harden/child_steps.h"
#include "sandbox/harden/host_profile.h"

namespace sandrun::harden {

// Facts about this machine, injectable for tests.
struct HardeningEnvironment {
  // Whether the kernel can filter system calls; nullopt: ask it (ProbeSeccomp).
  std::optional<Status> seccomp_support;
  // Where compiled filters are kept between processes ("" = nowhere): a one-shot CLI call then
  // reads the program instead of compiling it (~1 ms). Keyed by the seccomp file's bytes, the
  // kept capabilities and SeccompCompilerFingerprint(); files are 0600 in a private directory.
  std::string cache_dir;
};

class HostHardening {
 public:
  // Loads and prepares profiles/host/<name>.json. Errors name the file, the key and the reason
  // (for the seccomp file too). A profile whose seccomp is "required" fails here on a kernel
  // without seccomp; "optional" succeeds without a filter and with a warning.
  static Result<std::shared_ptr<const HostHardening>> Prepare(const std::string& profiles_dir,
                                                              const std::string& name,
                                                              const HardeningEnvironment& env = {});
  // Prepare, once per process per (profiles_dir, name); later calls share the result. Thread-safe.
  // Failures are not cached: a fixed file works on the next call.
  static Result<std::shared_ptr<const HostHardening>> Cached(const std::string& profiles_dir,
                                                             const std::string& name,
                                                             const std::string& cache_dir = "");

  HostHardening(const HostHardening&) = delete;
  HostHardening& operator=(const HostHardening&) = delete;

  // For SpawnOptions::child_steps: capabilities, no_new_privs, rlimits, the filter. The signal
  // reset and close_range steps are left to Subprocess::Spawn, which does both just before.
  ChildSteps steps() const { return child_->steps(); }
  const ChildHardening& child() const { return *child_; }
  const HostProfile& profile() const { return profile_; }
  // To show with every command run under this profile ("Warning: ...").
  const std::vector<std::string>& warnings() const { return warnings_; }
  // From compiling the filter (unknown syscall names skipped); for `sandrun doctor`.
  const std::vector<std::string>& compile_warnings() const { return compile_warnings_; }
  bool seccomp_active() const { return child_->has_seccomp(); }

 private:
  HostHardening() = default;

  HostProfile profile_;
  std::unique_ptr<ChildHardening> child_;
  std::vector<std::string> warnings_;
  std::vector<std::string> compile_warnings_;
};

// What `sandrun doctor` reports about filtering on this machine.
struct FilterProbe {
  bool filter_mode = false;  // after loading, the child was in seccomp filter mode (2)
  int unshare_errno = 0;     // errno of unshare(0) under the filter; 0 = it was allowed
};

// Forks a child that runs `hardening`'s whole sequence (capability drop, no_new_privs, rlimits,
// the filter) and then tries unshare(0), which the default host filter denies with EPERM.
// An Error: the child could not be started or a step failed ("harden: seccomp: ...").
Result<FilterProbe> ProbeFilter(const HostHardening& hardening);

}  // namespace sandrun::harden

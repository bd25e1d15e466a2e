// A host profile made ready to run: profiles/host/<name>.json loaded, its seccomp profile loaded
// and compiled to BPF, capabilities and rlimits prepared against this runner; a HardeningCache
// keeps the prepared profiles of its owner (the host executor) by name.
//
// Pattern of use:
//   harden::HardeningCache cache;                                      // one per executor
//   SANDRUN_ASSIGN_OR_RETURN(auto h, cache.Get(DefaultProfilesDir(), plan.host_profile, env));
//   spawn.child_steps = h->steps();            // keep `h` alive until Spawn returns
//   outcome.warnings += h->warnings();         // e.g. seccomp optional and unavailable here
#pragma once

#include <map>
#include <memory>
#include <mutex>
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
  // Used only when it lies inside one of `masked` and commands are confined: a command must
  // never be able to plant a program that later commands load. A cached file not owned by this
  // uid, or writable by anyone else, is ignored.
  std::string cache_dir;
  // tools.exec.hostUser: who a root runner's commands run as under a profile whose identity is
  // "hostUser" ("" = "nobody"). Ignored when the runner is not root.
  std::string host_user;
  // The runner's own control surfaces, added to the profile's confine lists: hidden (the state
  // dir, the server's socket, the engine's socket) and read-only (the profiles, a config file).
  std::vector<std::string> masked;
  std::vector<std::string> read_only;
  // Whether this process can confine; nullopt: ask the kernel (ProbeConfinement) when the
  // profile's confine mode is "optional" ("required" profiles just try, and fail the call).
  std::optional<Status> confine_support;
};

class HostHardening {
 public:
  // Loads and prepares profiles/host/<name>.json. Errors name the file, the key and the reason
  // (for the seccomp file too). A profile whose seccomp is "required" fails here on a kernel
  // without seccomp; "optional" succeeds without a filter and with a warning.
  static Result<std::shared_ptr<const HostHardening>> Prepare(const std::string& profiles_dir,
                                                              const std::string& name,
                                                              const HardeningEnvironment& env = {});
  HostHardening(const HostHardening&) = delete;
  HostHardening& operator=(const HostHardening&) = delete;

  // For SpawnOptions::child_steps: confinement, capabilities and identity, then no_new_privs,
  // rlimits and the filter (child_steps.h). Signals, descriptors, stdio and the parent-death
  // signal are Subprocess's own steps.
  ChildSteps steps() const { return child_->steps(); }
  const ChildHardening& child() const { return *child_; }
  const HostProfile& profile() const { return profile_; }
  // To show with every command run under this profile ("Warning: ...").
  const std::vector<std::string>& warnings() const { return warnings_; }
  // From compiling the filter (unknown syscall names skipped); for `sandrun doctor`.
  const std::vector<std::string>& compile_warnings() const { return compile_warnings_; }
  bool seccomp_active() const { return child_->has_seccomp(); }
  bool confined() const { return child_->confine().has_value(); }
  // The identity commands switch to (a root runner under a "hostUser" profile), else nullopt.
  const std::optional<Identity>& identity() const { return child_->identity(); }

 private:
  HostHardening() = default;

  HostProfile profile_;
  std::unique_ptr<ChildHardening> child_;
  std::vector<std::string> warnings_;
  std::vector<std::string> compile_warnings_;
};

// HostHardening::Prepare, once per (profiles_dir, name, environment) for the cache's owner; later
// calls share the result. Thread-safe. Failures are not kept: a fixed file works on the next
// call. `env.seccomp_support` and `env.confine_support` are ignored here (the kernel is asked).
// An object, not a process-wide table: each executor (and so each runtime) has its own.
class HardeningCache {
 public:
  Result<std::shared_ptr<const HostHardening>> Get(const std::string& profiles_dir,
                                                   const std::string& name,
                                                   const HardeningEnvironment& env = {});

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const HostHardening>> prepared_;
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

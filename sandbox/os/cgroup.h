// cgroup v2 mechanics for holding one run's processes: a fresh cgroup per run, joined by the
// child before execve, so every descendant is inside whatever it does (setsid, double fork,
// daemonizing); signalled and killed as a whole (cgroup.kill); removed once empty.
//
// Pattern of use (Subprocess does this through ProcessTree, process_tree.h):
//   CgroupSupport support = RunCgroupSupport();
//   if (support.usable) {
//     SANDRUN_ASSIGN_OR_RETURN(auto cgroup, RunCgroup::Create(support));
//     // the child starts in cgroup->dir_fd() (clone3), or writes "0" to procs_fd()
//     ...
//     (void)cgroup->Remove(Deadline::After(2s));  // SIGKILL, wait until empty, rmdir
//   }
//
// Where: run cgroups are children of the cgroup this process runs in (<cgroup2 mount><own
// path>/sandrun-<pid>-<start ticks>-<n>), so they need no controller and no configuration, only
// write access there (root, or a delegated subtree). The owner's pid and start time in the name
// let a later sandrun process tell a live owner's cgroup from one left by a process that was
// killed: the first Create of every process kills and removes those (RemoveStaleRunCgroups).
// A process that exits normally while run cgroups still exist (background runs a server
// shutdown deliberately left running) releases them at exit: the processes move to the parent
// cgroup, untracked, and the run cgroups are removed. No run cgroup outlives its owner, except
// that of an owner that died from a signal, until the next sandrun process starts a run: it
// kills and removes those, but releases (as at a clean exit) the ones created with `keep`
// ("sandrun-keep-<pid>-<start>-<n>"), whose processes their owner was told to leave running.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun {

struct CgroupSupport {
  bool usable = false;
  std::string parent;   // the directory run cgroups are created in
  std::string why_not;  // when !usable: what is missing, for doctor
};

// Probed once per process, on first use, without side effects: a cgroup2 mount, this process's
// cgroup in it, and write access there (to create a cgroup and to move a process out of this
// one). Not usable any more once MarkRunCgroupsUnusable was called. Thread-safe.
CgroupSupport RunCgroupSupport();
// A run cgroup could not be created or joined after all (a delegation rule the probe cannot
// see, a cgroup limit): later runs use the sweep. `why` is what doctor then reports.
void MarkRunCgroupsUnusable(const std::string& why);

class RunCgroup {
 public:
  // A new, empty run cgroup under support.parent.
  // `keep`: the run is meant to outlive this process (a server's host sessions with
  // --keep-host-processes): should this process die from a signal, the next sandrun process
  // releases the cgroup (its processes go on, untracked) instead of killing it.
  static Result<std::unique_ptr<RunCgroup>> Create(const CgroupSupport& support, bool keep = false);
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;
  // Remove() with a bounded wait; errors are ignored.
  ~RunCgroup();

  // cgroup.procs, open for writing (close-on-exec): a child writes "0" there to move itself in.
  // It does not allocate, so it may run between fork and exec.
  int procs_fd() const { return procs_.get(); }
  // The cgroup's directory (O_RDONLY | O_DIRECTORY, close-on-exec), for clone3's
  // CLONE_INTO_CGROUP: the child starts inside.
  int dir_fd() const { return dir_.get(); }
  const std::string& path() const { return path_; }

  // Sends `sig` to every process in the cgroup and below it. SIGKILL goes through cgroup.kill;
  // another signal is sent with the cgroup frozen, so no process forks or exits (and no pid is
  // reused) between reading the members and signalling them. Nothing after Remove/Release.
  Status Signal(int sig);
  // Whether any live process is inside (zombies are not); false after Remove/Release.
  Result<bool> Populated() const;
  // SIGKILL to everything inside, a wait until it is empty (up to `deadline`), then the
  // cgroup's directory is removed (any sub-cgroups first). Idempotent. If processes are still
  // dying at the deadline (uninterruptible sleep), the directory stays and its removal is
  // retried by the next Create of this process. The descriptors are closed (a finished
  // background session may be kept for a long time).
  Status Remove(const Deadline& deadline);
  // Moves every process to the parent cgroup, where they run on untracked, and removes the
  // directory. Idempotent.
  Status Release();

 private:
  RunCgroup() = default;
  void CloseDescriptors();  // with mu_ held

  std::string path_;
  std::string parent_;
  bool has_kill_ = false;  // cgroup.kill (Linux 5.14); without it: freeze, SIGKILL each, thaw
  UniqueFd dir_;
  UniqueFd procs_;
  UniqueFd events_;
  mutable std::mutex mu_;  // guards removed_ and the descriptors' lifetime
  bool removed_ = false;
};

// Kills and removes every run cgroup under `parent` whose owner (by pid and start time) is no
// longer running. Errors are ignored: it is housekeeping. Owners are looked up in this
// process's pid namespace: two runners that share a cgroup but not a pid namespace would take
// each other's run cgroups for stale ones.
void RemoveStaleRunCgroups(const std::string& parent);

}  // namespace sandrun

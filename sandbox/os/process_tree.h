// ProcessTree: everything one spawned command started, however it tried to leave (a new process
// group or session, a double fork, nohup), so that a timeout or a kill leaves nothing behind.
// Subprocess owns one when SpawnOptions::tree asks for it.
//
// Two mechanisms, chosen per process (DescribeTreeTracking says which one kAuto uses here):
// - cgroup v2 (cgroup.h): the child starts in a fresh cgroup (clone3 CLONE_INTO_CGROUP) or
//   joins it before execve; membership is the kernel's and cannot be left by an unprivileged
//   process. Signal(SIGKILL) is cgroup.kill. Needs write access to this process's cgroup (root,
//   or a delegated subtree); a cgroup that cannot be created or joined after all turns this
//   process over to the sweep (MarkRunCgroupsUnusable; doctor says why). A command that
//   runs as uid 0 could move itself out (the cgroup files are root's, so no capability is
//   needed for that): the cgroup holds commands that run as another user (tools.exec.hostUser).
// - sweep: without a writable cgroup2. The child's environment carries a random marker
//   (kTreeTokenEnv, proc_table.h) and the tree is rebuilt from /proc whenever it is needed: the
//   leader, its process group (and session on a PTY), every process carrying the marker, and,
//   repeatedly, the children of members and the members of process groups and sessions that
//   members lead. Processes are signalled through pidfds checked against their start time.
//   What escapes it: a process that removes the marker from its environment (env -i, or by
//   overwriting its own memory) and also leaves the leader's lineage (a new session plus a
//   double fork, so that init adopts it), or one that makes itself unreadable (not dumpable)
//   to a runner that is not root. The runner does not become a child subreaper: adopted
//   orphans could not be told apart from the runner's other children (helpers, probes) without
//   a registry of everything it forks, and an adopted orphan without the marker is no more
//   attributable to a run than one adopted by init; the marker finds orphans wherever they are.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"
#include "sandbox/os/cgroup.h"
#include "sandbox/os/proc_table.h"

namespace sandrun {

enum class TreeTracking {
  kGroup,  // no tree: the leader's process group only (what a setsid child escapes)
  kAuto,   // a cgroup per run where this process can create one, else kSweep
  kSweep,  // the marker and lineage sweep, even where a cgroup would work (tests)
};

struct TreeTrackingInfo {
  bool cgroup = false;  // kAuto uses cgroups here
  std::string detail;   // "cgroup v2 per run under <dir>" or "sweep ... (<why no cgroup>)"
};
TreeTrackingInfo DescribeTreeTracking();

class ProcessTree {
 public:
  // A tree for a command about to be spawned; `tracking` is kAuto or kSweep. kAuto falls back
  // to the sweep if this one cgroup cannot be created. `keep`: the tree is meant to outlive
  // this process (RunCgroup::Create's `keep`).
  static Result<std::unique_ptr<ProcessTree>> Create(TreeTracking tracking, bool keep = false);
  ProcessTree(const ProcessTree&) = delete;
  ProcessTree& operator=(const ProcessTree&) = delete;
  // End() with a bounded wait.
  ~ProcessTree();

  bool uses_cgroup() const { return cgroup_ != nullptr; }
  // The child starts in this cgroup (clone3 CLONE_INTO_CGROUP), or writes "0" to the procs fd
  // before execve; both -1 for the sweep.
  int cgroup_dir_fd() const { return cgroup_ ? cgroup_->dir_fd() : -1; }
  int cgroup_procs_fd() const { return cgroup_ ? cgroup_->procs_fd() : -1; }
  // "KEY=VALUE" the child's environment must carry (the sweep), or "" (a cgroup).
  const std::string& env_entry() const { return env_entry_; }

  // The spawned leader. `session_leader`: it called setsid (a PTY), so its session is its tree.
  void Attach(pid_t leader, bool session_leader);

  // Sends `sig` to every live process of the tree. With the sweep, SIGKILL first stops every
  // member (SIGSTOP, repeated until no member is left running), so none forks in between.
  Status Signal(int sig);
  // Whether any process of the tree is alive (zombies are not).
  Result<bool> Alive();
  // Waits until nothing of the tree is alive or `deadline` passes. True if gone.
  Result<bool> WaitGone(const Deadline& deadline);
  // SIGKILL to everything, a wait until it is gone (up to `deadline`), and the cgroup removed.
  // Afterwards Signal does nothing and Alive is false. Idempotent.
  Status End(const Deadline& deadline);

 private:
  ProcessTree() = default;
  // The sweep's members now (live processes only).
  Result<std::vector<ProcStat>> SweepMembers();

  std::unique_ptr<RunCgroup> cgroup_;
  std::string env_entry_;
  std::mutex mu_;
  pid_t leader_ = -1;            // guarded by mu_
  bool session_leader_ = false;  // guarded by mu_
  bool ended_ = false;           // guarded by mu_
};

}  // namespace sandrun

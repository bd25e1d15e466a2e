// Subprocess: one child process in its own process group, owned through a pidfd.
//
// Pattern of use:
//   SpawnOptions opts;
//   opts.path = "/bin/sh";
//   opts.argv = {"/bin/sh", "-c", "echo hi"};
//   opts.env = {"PATH=/usr/bin:/bin"};
//   SANDRUN_ASSIGN_OR_RETURN(Subprocess proc, Subprocess::Spawn(opts));
//   UniqueFd out = proc.TakeStdout();   // non-blocking; poll it together with proc.pidfd()
//   ... read until EOF ...
//   SANDRUN_ASSIGN_OR_RETURN(ExitStatus status, proc.Reap());
//
// Spawn returns only after the child has called execve (or failed before it): a failure in the
// child (a missing cwd, a missing binary, a hardening step) comes back as an Error naming the
// step, "chdir /x: No such file or directory", and nothing ran.
//
// The child runs one ordered list of steps, built in the parent before the clone (each step
// async-signal-safe, reading only what the parent prepared; the first failure ends the child):
//   1. cgroup join     into the run's cgroup, where clone3 could not start the child inside it
//   2. signals         default dispositions, then an empty mask (the parent blocked them all
//                      around the clone, so no handler of the runner ever runs in the child)
//   3. setpgid         its own process group; with a PTY: setsid + TIOCSCTTY instead
//   4. dup2            stdin, stdout, stderr
//   5. close_range     every other descriptor close-on-exec (the report pipe closes at execve)
//   6. chdir           SpawnOptions::cwd, if any
//   7. credentials     ChildSteps::credentials: confinement, capabilities, identity
//   8. parent death    PR_SET_PDEATHSIG(SIGKILL) (SpawnOptions::die_with_parent), then a re-check:
//                      if getppid() is no longer the runner, it died before the signal was
//                      armed, and the child _exits at once. After 7: a uid/gid change clears it.
//   9. lockdown        ChildSteps::lockdown: no_new_privs, rlimits, the seccomp filter last
//  10. execve
//
// Lifetime: destroying a Subprocess whose leader has not been reaped kills the whole group (or,
// with SpawnOptions::tree, the whole tree) with SIGKILL and reaps the leader, so a Subprocess
// never leaks a running leader or a zombie. Without a tree, group members left after the leader
// was reaped are the owner's business (see KillGroup); with one, EndTree (or the destructor)
// kills them.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"
#include "sandbox/os/process_tree.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun {

// One step of the child's sequence between clone and execve. It runs in a child that shares the
// parent's memory (clone with CLONE_VM | CLONE_VFORK, as posix_spawn): it must not allocate, lock,
// log, or write memory the parent uses; everything it needs is prepared in the parent and reached
// through `context`. It returns 0, or the errno of its failure: the child then exits, nothing
// ran, and Spawn returns "<name>: <strerror>". `run` may point `*name` at a more precise static,
// NUL-terminated name first ("harden: setrlimit RLIMIT_NOFILE").
struct ChildStep {
  const char* name = "child step";
  int (*run)(const void* context, const char** name) = nullptr;
  const void* context = nullptr;
};

// The caller's steps (hardening: sandbox/harden/child_steps.h), in the two places of the child's
// one sequence where they belong (see Subprocess): `credentials` may change who the child is, so
// they run before the parent-death signal is armed (the kernel clears that signal when the
// effective uid or gid changes); `lockdown` runs after it, seccomp last.
struct ChildSteps {
  std::vector<ChildStep> credentials;  // confinement, capabilities, identity
  std::vector<ChildStep> lockdown;     // no_new_privs, rlimits, the seccomp filter (last)
  // The steps change state that lives in the memory descriptor (e.g. PR_SET_DUMPABLE, which a
  // non-dumpable runner's child needs to write its own uid_map): the child then gets a copy of
  // the parent's memory (fork semantics, ~1.5 ms more) instead of sharing it.
  bool own_memory = false;
};

struct SpawnOptions {
  std::string path;               // executed as given with execve (no PATH search)
  std::vector<std::string> argv;  // including argv[0]
  std::vector<std::string> env;   // "KEY=VALUE": exactly the child's environment
  std::string cwd;                // empty: the parent's working directory

  enum class Stdin {
    kNull,  // /dev/null: reads see EOF at once (a foreground exec)
    kPipe,  // a pipe whose write end the parent keeps (TakeStdin), for later input
  };
  Stdin stdin_mode = Stdin::kNull;

  // On a new pseudo-terminal instead of pipes: the child becomes a session leader with the
  // terminal as its controlling TTY and as stdin, stdout and stderr; stdin_mode is ignored.
  bool pty = false;
  unsigned pty_rows = 30;
  unsigned pty_cols = 120;

  // Requested capacity of the stdout/stderr pipes (F_SETPIPE_SZ; best effort). Larger pipes mean
  // fewer wake-ups when a command prints a lot. 0 keeps the kernel's default (64 KiB).
  int pipe_bytes = 0;

  ChildSteps child_steps;

  // The child gets SIGKILL when the thread that spawned it exits (PR_SET_PDEATHSIG: the signal
  // follows the parent *thread*, not the process), and exits at once if the runner died before
  // the signal was armed. So a child that should die with its runner but outlive the call that
  // started it is spawned from a thread that lives as long as the runner (a Spawner,
  // spawner.h); a caller that waits for the child itself (RunSubprocess) may spawn it directly.
  // false: the child outlives the runner (`serve --keep-host-processes`).
  bool die_with_parent = true;

  // What KillTree, TreeAlive and EndTree cover (process_tree.h). kGroup: the process group. A
  // tracked tree is set up before the child starts: with a cgroup the child starts in it (or
  // joins it first thing); with the sweep its environment gets the marker. A child that cannot
  // get into its cgroup fails before execve, and Spawn starts it again with the sweep (and
  // every later one: MarkRunCgroupsUnusable).
  TreeTracking tree = TreeTracking::kGroup;
};

// How the leader ended.
struct ExitStatus {
  int exit_code = -1;  // valid when signal == 0
  int signal = 0;      // the terminating signal; 0 for a normal exit
  bool core_dumped = false;

  bool exited() const { return signal == 0; }
};

class Subprocess {
 public:
  static Result<Subprocess> Spawn(const SpawnOptions& options);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }
  // The process group id (== pid: the child is its group's leader).
  pid_t pgid() const { return pid_; }
  // Polls readable (POLLIN) once the leader has exited; valid until the Subprocess is destroyed.
  int pidfd() const { return pidfd_.get(); }

  // The parent's stream ends, non-blocking and close-on-exec. Each can be taken once; an end
  // that does not exist in this mode is an invalid UniqueFd. In PTY mode only the master exists.
  UniqueFd TakeStdin() { return std::move(stdin_); }
  UniqueFd TakeStdout() { return std::move(stdout_); }
  UniqueFd TakeStderr() { return std::move(stderr_); }
  UniqueFd TakePtyMaster() { return std::move(pty_master_); }

  // Whether the leader has exited (it may still be unreaped). Never blocks.
  bool HasExited() const;
  // Waits until the leader has exited or `deadline` passes, without reaping it: an unreaped
  // leader keeps its pid, so signalling the group stays safe from pid reuse. True if exited.
  Result<bool> WaitForExit(const Deadline& deadline) const;
  // Reaps the leader, blocking until it exits. Idempotent: later calls return the same status.
  Result<ExitStatus> Reap();
  // WaitForExit + Reap: the status, or nullopt if the deadline passed first.
  Result<std::optional<ExitStatus>> Wait(const Deadline& deadline);
  bool reaped() const { return status_.has_value(); }

  // Sends `sig` to the leader only (pidfd_send_signal). An exited leader is not an error.
  Status Signal(int sig) const;
  // Sends `sig` to every process of the group. An empty group (ESRCH) is not an error.
  Status KillGroup(int sig) const;
  // Whether any process of the group is still alive (zombies do not count).
  Result<bool> GroupAlive() const;

  // The tree (SpawnOptions::tree), or the group without one. Signals every live process of it;
  // nothing after EndTree or once the leader was reaped.
  Status KillTree(int sig) const;
  // Whether any process of the tree is still alive (zombies do not count).
  Result<bool> TreeAlive() const;
  // With a tracked tree: SIGKILL to it, a wait until nothing of it is alive (up to `deadline`),
  // and its cgroup removed. Without one: SIGKILL to the group; wait for it after the Reap
  // (WaitForProcessGroupExit). Call it before Reap: an unreaped leader keeps its pid, so no
  // process reusing it is taken for the tree's. Idempotent; the destructor does it for an
  // unreaped leader.
  Status EndTree(const Deadline& deadline);
  bool tracks_tree() const { return tree_ != nullptr; }
  bool tree_uses_cgroup() const { return tree_ != nullptr && tree_->uses_cgroup(); }

 private:
  Subprocess() = default;
  void Destroy();
  static Result<Subprocess> SpawnWithoutCgroup(const SpawnOptions& options, const Error& why);

  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd stdin_;
  UniqueFd stdout_;
  UniqueFd stderr_;
  UniqueFd pty_master_;
  std::optional<ExitStatus> status_;
  std::unique_ptr<ProcessTree> tree_;  // null: the process group is the tree
};

// For tests: from now on, children join their cgroup by writing cgroup.procs themselves (what
// kernels without clone3's CLONE_INTO_CGROUP, other architectures and sanitizer builds do)
// instead of being started inside it. Process-wide.
void UseCgroupProcsWriteForTesting();

// Whether any live (non-zombie) process has process group `pgid`: kill(-pgid, 0) first, then a
// scan of /proc, because a zombie that nobody has reaped yet still counts for kill().
Result<bool> ProcessGroupAlive(pid_t pgid);

// Waits until ProcessGroupAlive(pgid) is false or `deadline` passes (a SIGKILLed process is gone
// a moment after kill() returns, and one in uninterruptible sleep later still). True if gone.
Result<bool> WaitForProcessGroupExit(pid_t pgid, const Deadline& deadline);

}  // namespace sandrun

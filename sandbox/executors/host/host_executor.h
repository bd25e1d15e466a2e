// HostExecutor: runs a gateway Plan as `<plan.shell> -c <plan.command>` on this machine, in its
// own process group and tracked process tree, with exactly plan.env, in plan.cwd, on pipes or a
// PTY.
//
// Pattern of use:
//   HostExecutor host;
//   SANDRUN_ASSIGN_OR_RETURN(ExecOutcome outcome, host.Run(plan, live_sink, &cancel_token));
//
// Contract (beyond Executor's):
// - Output: stdout and stderr are read with poll in big chunks and fed to an OutputCollector in
//   arrival order (a PTY is all Stream::kStdout). Between two pipes, "arrival order" is the order
//   the reads happen in: bytes written to both within one wake-up have no defined order.
// - The tree (Options::tree, process_tree.h): the shell and everything it starts, including
//   processes that left its process group or session (setsid, double forks, nohup): a cgroup v2
//   per run where the runner can create one, else a sweep of /proc by an environment marker and
//   lineage (the marker, SANDRUN_EXEC_TOKEN, is then in the command's environment).
// - Timeout (plan.timeout_ms > 0) and cancellation: SIGTERM to the whole tree, then SIGKILL to
//   the tree once plan.kill_grace_ms has passed with any live member left. A timeout is
//   kTimedOut; a cancelled run reports the status its leader ended with (usually kSignaled
//   SIGTERM), as OpenClaw does.
// - The end of a foreground run: once the shell has exited, output is drained until the pipes
//   reach EOF, for at most Options::drain_grace (a background `sleep 100 &` holding stdout must
//   not hang the call; OpenClaw waits for stdio to close, i.e. until its timeout). Then every
//   process left in the tree is killed with SIGKILL and Run returns once none is alive: a
//   foreground exec leaves nothing running, not even what left the process group (OpenClaw
//   leaves such children alone). The same holds for a background run when its shell exits, is
//   killed (RunningProcess::Kill signals the whole tree) or times out, and when the process
//   object is destroyed (a server shutting down). The tree is killed while the shell is still
//   unreaped, so its pid (the group id) cannot have been reused.
// - Spawn failures (missing shell, bad cwd, ...) are Errors: nothing ran.
// - Dying with the runner: every child is spawned by the executor's own long-lived spawner
//   thread (sandbox/os/spawner.h) with the parent-death signal armed, so a runner killed with
//   SIGKILL takes its commands' shells with it, whichever thread started them (a server's
//   request threads end long before their sessions). Foreground runs always die with the
//   runner; background ones (Start) unless Options::die_with_runner is false (`serve
//   --keep-host-processes`). What a shell started itself is not signalled: the next run finds
//   it in the dead runner's cgroup and kills it (process_tree.h). Destroying the executor ends
//   its spawner thread, so it must outlive the processes it started (a runtime destroys its
//   sessions first).
// - Hardening: every command runs under the host profile plan.host_profile ("" = "default"):
//   capabilities dropped, no_new_privs, rlimits and its seccomp filter loaded last, in the child
//   just before execve (sandbox/harden/child_steps.h). A profile that does not load, or a
//   hardening step that fails in the child, is an Error naming the file or the step ("harden:
//   seccomp: Invalid argument"); nothing ran. The profile's warnings (seccomp "optional" on a
//   kernel without seccomp) are added to the outcome's warnings.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/executors/executor.h"
#include "sandbox/harden/host_hardening.h"
#include "sandbox/os/spawner.h"
#include "sandbox/os/subprocess.h"

namespace sandrun::exec {

// How long a run may take and how much of its output to keep.
struct RunLimits {
  int64_t timeout_ms = 0;  // 0 = none
  int64_t kill_grace_ms = 3000;
  size_t max_output_chars = 200000;
  // After the leader exited (or the group was killed): how long to keep reading pipes that are
  // still open before giving up on them.
  std::chrono::milliseconds drain_grace{100};
};

// The executor's engine, shared with other host-side runners (the login-shell PATH probe, later
// background sessions): spawns `spawn` (through `spawner`, or from the calling thread, which is
// fine for a parent-death signal because it waits here until the child is reaped), pumps its
// output into a collector, enforces `limits` and `cancel`, kills what is left of the group, and
// reaps. Fills everything in the outcome except `cwd` and `where`.
Result<ExecOutcome> RunSubprocess(const SpawnOptions& spawn, const RunLimits& limits,
                                  const LiveSink& live, const CancelToken* cancel,
                                  Spawner* spawner = nullptr);

class HostExecutor : public Executor {
 public:
  struct Options {
    std::chrono::milliseconds drain_grace{100};
    // Capacity requested for the stdout/stderr pipes: fewer wake-ups for chatty commands.
    int pipe_bytes = 1 << 20;
    // Where profiles/host/<plan.host_profile>.json and the files it names are read from; ""
    // means harden::DefaultProfilesDir(). Each profile is loaded and its seccomp filter compiled
    // once per executor (its harden::HardeningCache).
    std::string profiles_dir;
    // Whether this kernel can filter system calls. nullopt: ask it (the normal case). Tests set
    // an Error to act as a kernel without seccomp; the profile is then prepared on every call
    // instead of once per executor.
    std::optional<Status> seccomp_support;
    // Where compiled seccomp programs are kept between processes ("" = not kept): see
    // harden::HardeningEnvironment::cache_dir (used only inside a masked path).
    std::string cache_dir;
    // The runner's control surfaces, out of the commands' reach (harden/confine.h): hidden
    // (state dir, server socket, engine socket) and read-only (profiles, config file).
    std::vector<std::string> masked_paths;
    std::vector<std::string> read_only_paths;
    // Tests: act as a kernel that refuses (or allows) confinement; nullopt asks the kernel.
    std::optional<Status> confine_support;
    // How the command's process tree is tracked; tests force kSweep where cgroups work.
    TreeTracking tree = TreeTracking::kAuto;
    // Whether background processes (Start) get SIGKILL when this process dies, as foreground
    // runs always do. false: they outlive a crash of the runner (Runtime::Options::
    // keep_host_processes, `serve --keep-host-processes`).
    bool die_with_runner = true;
  };

  HostExecutor() = default;
  explicit HostExecutor(Options options) : options_(std::move(options)) {}

  Result<ExecOutcome> Run(const Plan& plan, const LiveSink& live,
                          const CancelToken* cancel) override;
  // In the background: stdin is a pipe kept open (or the PTY), output goes to `sink` from a pump
  // thread; the plan's timeout applies; destroying the process kills its tree.
  Result<std::unique_ptr<RunningProcess>> Start(const Plan& plan, LiveSink sink) override;

 private:
  // The spawn options with the plan's hardening; `keep_alive` must outlive the spawn (the child
  // reads the prepared hardening through child_steps), `warnings` get the profile's warnings.
  Result<SpawnOptions> SpawnFor(const Plan& plan, SpawnOptions::Stdin stdin_mode,
                                std::shared_ptr<const void>* keep_alive,
                                std::vector<std::string>* warnings) const;
  RunLimits LimitsFor(const Plan& plan) const;

  Options options_;
  // Boxed: the executor stays movable. The spawner's thread is started on the first spawn.
  std::unique_ptr<Spawner> spawner_ = std::make_unique<Spawner>();
  std::unique_ptr<harden::HardeningCache> hardening_ = std::make_unique<harden::HardeningCache>();
};

}  // namespace sandrun::exec

#include "sandbox/executors/host/host_executor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/executors/host/login_path.h"
#include "sandbox/harden/host_hardening.h"
#include "sandbox/harden/profile_file.h"
#include "sandbox/os/pty.h"

namespace sandrun::exec {
namespace {

using std::chrono::milliseconds;

// Big reads keep the per-byte cost at one copy into the collector's tail: 1 GiB of output is
// ~4000 reads, not ~260000.
constexpr size_t kReadChunk = 256 * 1024;
// Reads from one descriptor per wake-up before looking at the others and at the clock again.
constexpr int kMaxReadsPerWakeup = 16;
// While terminating (or when a cancel token must be watched) we wake at least this often.
constexpr int64_t kCheckIntervalMs = 50;
// How long to wait for SIGKILLed processes to be gone before returning anyway (a process in
// uninterruptible sleep dies when its system call ends).
constexpr milliseconds kTreeExitWait{2000};

struct OutputStream {
  UniqueFd fd;
  Stream kind;
};

// Reads what `s` has now into `out`. Closes `s.fd` at EOF (a PTY master says EIO once the last
// slave descriptor is closed) and on errors.
void ReadAvailable(OutputStream& s, char* buf, OutputCollector& out) {
  for (int i = 0; i < kMaxReadsPerWakeup; ++i) {
    ssize_t n = ::read(s.fd.get(), buf, kReadChunk);
    if (n > 0) {
      out.Append(s.kind, std::string_view(buf, static_cast<size_t>(n)));
      if (static_cast<size_t>(n) < kReadChunk) return;  // most likely drained
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    s.fd.reset();  // 0 = EOF; EIO and anything else end the stream too
    return;
  }
}

int MsUntil(const Deadline& d) {
  if (d.is_never()) return INT_MAX;
  return static_cast<int>(std::min<int64_t>(d.remaining_ms(), INT_MAX));
}

enum class Phase {
  kRunning,      // the leader runs; watch the timeout and the cancel token
  kTerminating,  // SIGTERM sent to the tree; SIGKILL when the grace ends with members left
  kDraining,     // the leader exited on its own; read what the pipes still hold
  kFinalDrain,   // the tree got SIGKILL; read until EOF (bounded: a process in D state)
};

}  // namespace

namespace {

// The output ends of a spawned process, for the pump.
std::vector<OutputStream> TakeOutputs(Subprocess& proc, bool pty) {
  std::vector<OutputStream> streams;
  if (pty) {
    streams.push_back({proc.TakePtyMaster(), Stream::kStdout});
  } else {
    streams.push_back({proc.TakeStdout(), Stream::kStdout});
    streams.push_back({proc.TakeStderr(), Stream::kStderr});
  }
  return streams;
}

// Pumps a spawned process's output until it ended, enforcing the limits and the cancel token;
// kills what is left of the tree and reaps. `reap_mu` (optional) guards the reap against a
// concurrent KillTree from another thread.
Result<ExecOutcome> Pump(Subprocess& proc, std::vector<OutputStream> streams,
                         const RunLimits& limits, const LiveSink& live, const CancelToken* cancel,
                         Deadline::Clock::time_point started, std::mutex* reap_mu);

}  // namespace

Result<ExecOutcome> RunSubprocess(const SpawnOptions& spawn, const RunLimits& limits,
                                  const LiveSink& live, const CancelToken* cancel,
                                  Spawner* spawner) {
  auto started = Deadline::Clock::now();
  SANDRUN_ASSIGN_OR_RETURN(Subprocess proc,
                           spawner != nullptr ? spawner->Spawn(spawn) : Subprocess::Spawn(spawn));
  UniqueFd stdin_end = proc.TakeStdin();  // a kPipe stdin stays open until the run ends
  return Pump(proc, TakeOutputs(proc, spawn.pty), limits, live, cancel, started, nullptr);
}

namespace {

Result<ExecOutcome> Pump(Subprocess& proc, std::vector<OutputStream> streams,
                         const RunLimits& limits, const LiveSink& live, const CancelToken* cancel,
                         Deadline::Clock::time_point started, std::mutex* reap_mu) {
  OutputCollector out(limits.max_output_chars, live);
  auto buf = std::make_unique_for_overwrite<char[]>(kReadChunk);
  Deadline timeout =
      limits.timeout_ms > 0 ? Deadline::After(milliseconds(limits.timeout_ms)) : Deadline::Never();
  Deadline kill_at = Deadline::Never();
  Deadline drain_until = Deadline::Never();
  Phase phase = Phase::kRunning;
  bool leader_exited = false;
  bool timed_out = false;
  auto all_closed = [&] {
    return std::none_of(streams.begin(), streams.end(),
                        [](const OutputStream& s) { return s.fd.valid(); });
  };
  auto kill_tree_and_drain = [&] {
    // The leader is not reaped yet, so pgid still names our group and nothing else.
    (void)proc.KillTree(SIGKILL);
    phase = Phase::kFinalDrain;
    drain_until = Deadline::After(limits.drain_grace);
  };

  std::vector<pollfd> fds;
  for (;;) {
    // Decide what to do next, then wait for output, the leader's exit or the next deadline.
    if (phase == Phase::kRunning && !leader_exited) {
      bool cancelled = cancel != nullptr && cancel->cancelled();
      if (cancelled || timeout.expired()) {
        timed_out = !cancelled;
        (void)proc.KillTree(SIGTERM);
        phase = Phase::kTerminating;
        kill_at = Deadline::After(milliseconds(std::max<int64_t>(limits.kill_grace_ms, 0)));
      }
    }
    if (phase == Phase::kRunning && leader_exited) {
      phase = Phase::kDraining;
      drain_until = Deadline::After(limits.drain_grace);
    }
    if (phase == Phase::kTerminating) {
      bool done = kill_at.expired();
      if (!done && leader_exited) {
        // Zombies do not count: an unreaped leader, or orphans init has not reaped yet.
        Result<bool> alive = proc.TreeAlive();
        done = !alive || !*alive;
      }
      if (done) kill_tree_and_drain();
    }
    if (phase == Phase::kDraining && (all_closed() || drain_until.expired())) {
      kill_tree_and_drain();
    }
    if (phase == Phase::kFinalDrain && (all_closed() || drain_until.expired())) break;

    int wait_ms = INT_MAX;
    switch (phase) {
      case Phase::kRunning:
        wait_ms = MsUntil(timeout);
        if (cancel != nullptr) wait_ms = std::min<int>(wait_ms, kCheckIntervalMs);
        break;
      case Phase::kTerminating:
        wait_ms = MsUntil(kill_at);
        if (leader_exited) wait_ms = std::min<int>(wait_ms, kCheckIntervalMs);
        break;
      case Phase::kDraining:
      case Phase::kFinalDrain:
        wait_ms = MsUntil(drain_until);
        break;
    }
    fds.clear();
    for (const auto& s : streams) {
      if (s.fd.valid()) fds.push_back({s.fd.get(), POLLIN, 0});
    }
    size_t pidfd_index = fds.size();
    if (!leader_exited) fds.push_back({proc.pidfd(), POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), wait_ms == INT_MAX ? -1 : wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "poll");  // ~Subprocess kills the group and reaps
    }
    if (!leader_exited && (fds[pidfd_index].revents & POLLIN) != 0) leader_exited = true;
    // Output first, in stream order; a stream with POLLHUP may still hold data.
    size_t k = 0;
    for (auto& s : streams) {
      if (!s.fd.valid()) continue;
      if (fds[k++].revents != 0) ReadAvailable(s, buf.get(), out);
    }
  }

  ExecOutcome outcome;
  // The tree got SIGKILL above; a killed process closes its pipes before it is fully gone.
  // Kill again whatever started since, and wait until nothing of the run is alive (usually no
  // wait at all), so that nothing of it outlives Run; its cgroup goes with it. Before the
  // reap: an unreaped leader keeps its pid, so no process reusing it is taken for the run's.
  (void)proc.EndTree(Deadline::After(kTreeExitWait));
  std::unique_lock<std::mutex> reap_lock;
  if (reap_mu != nullptr) reap_lock = std::unique_lock<std::mutex>(*reap_mu);
  Result<ExitStatus> status = proc.Reap();  // exited, or died from the SIGKILL just sent
  if (reap_lock.owns_lock()) reap_lock.unlock();
  // Without a tree, the group's stragglers (usually none: the group is empty once the leader
  // is reaped). Reaped leader or not, the group id cannot be reused while a member remains.
  if (!proc.tracks_tree())
    (void)WaitForProcessGroupExit(proc.pgid(), Deadline::After(kTreeExitWait));
  if (status) {
    outcome.exit_code = status->exited() ? status->exit_code : -1;
    outcome.signal = status->signal;
    outcome.status =
        status->exited() ? ExecOutcome::Status::kExited : ExecOutcome::Status::kSignaled;
  }
  if (timed_out) outcome.status = ExecOutcome::Status::kTimedOut;
  outcome.duration_ms =
      std::chrono::duration_cast<milliseconds>(Deadline::Clock::now() - started).count();
  outcome.aggregated = out.Text();
  outcome.total_bytes = out.total_bytes();
  outcome.truncated = out.truncated();
  return outcome;
}

// A gateway command running in the background: a pump thread reads its output while the owner
// writes stdin, resizes the PTY or kills the tree. What the pump uses lives in a shared State, so
// that a released process (Release) keeps being pumped and reaped by the detached thread after
// its owner is gone.
class HostRunningProcess final : public RunningProcess {
 public:
  HostRunningProcess(Subprocess proc, bool pty, RunLimits limits, LiveSink sink, std::string cwd,
                     std::vector<std::string> warnings)
      : state_(std::make_shared<State>(std::move(proc))), pty_(pty) {
    pid_ = state_->proc.pid();
    std::vector<OutputStream> streams = TakeOutputs(state_->proc, pty_);
    if (pty_) {
      // The master is read by the pump and written by us: a second descriptor for writing.
      stdin_.reset(::fcntl(streams.front().fd.get(), F_DUPFD_CLOEXEC, 0));
    } else {
      stdin_ = state_->proc.TakeStdin();
    }
    thread_ =
        std::thread([state = state_, streams = std::move(streams), limits, sink = std::move(sink),
                     cwd = std::move(cwd), warnings = std::move(warnings)]() mutable {
          // Output goes to the owner's sink until it released us; after that it is read and
          // dropped.
          LiveSink guarded = [&state, &sink](Stream stream, std::string_view bytes) {
            std::lock_guard<std::mutex> lock(state->sink_mu);
            if (!state->released && sink) sink(stream, bytes);
          };
          auto result = Pump(state->proc, std::move(streams), limits, guarded, &state->cancel,
                             Deadline::Clock::now(), &state->reap_mu);
          std::lock_guard<std::mutex> lock(state->mu);
          if (result) {
            state->outcome = std::move(result).value();
          } else {
            state->outcome.status = ExecOutcome::Status::kAborted;
            state->outcome.warnings.push_back(result.error().ToString());
          }
          state->outcome.cwd = cwd;
          state->outcome.where = "host";
          state->outcome.warnings.insert(state->outcome.warnings.begin(), warnings.begin(),
                                         warnings.end());
          state->finished = true;
          state->done.notify_all();
        });
  }

  ~HostRunningProcess() override {
    if (released()) return;   // the detached pump owns the process now
    state_->cancel.Cancel();  // the pump kills the tree (TERM, then KILL after the grace)
    (void)Kill(SIGKILL);
    if (thread_.joinable()) thread_.join();
  }

  ProcessKind kind() const override { return ProcessKind::kHost; }
  int64_t pid() const override { return pid_; }

  Status Release() override {
    {
      std::lock_guard<std::mutex> sink_lock(state_->sink_mu);  // waits out a sink call
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->released) return Ok();
      state_->released = true;
      state_->done.notify_all();
    }
    if (thread_.joinable()) thread_.detach();
    return Ok();
  }

  Status WriteStdin(std::string_view data) override {
    std::lock_guard<std::mutex> lock(stdin_mu_);
    if (!stdin_.valid()) return Error(ErrorCode::kConflict, "stdin is closed");
    while (!data.empty()) {
      ssize_t n = ::write(stdin_.get(), data.data(), data.size());
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{stdin_.get(), POLLOUT, 0};
        if (::poll(&p, 1, 5000) == 0) return Error(ErrorCode::kTimeout, "stdin is not draining");
      } else {
        return Error::FromErrno(errno, "writing stdin");
      }
    }
    return Ok();
  }

  Status CloseStdin() override {
    std::lock_guard<std::mutex> lock(stdin_mu_);
    if (pty_) {
      // A terminal has no half-close: send the EOF character (^D) as a terminal user would.
      if (stdin_.valid() && ::write(stdin_.get(), "\x04", 1) != 1) {
        return Error::FromErrno(errno, "writing EOF to the terminal");
      }
      return Ok();
    }
    stdin_.reset();
    return Ok();
  }

  Status Resize(unsigned rows, unsigned cols) override {
    std::lock_guard<std::mutex> lock(stdin_mu_);
    if (!pty_ || !stdin_.valid()) return Error(ErrorCode::kInvalidArgument, "not a terminal");
    return SetWindowSize(stdin_.get(), rows, cols);
  }

  Status Kill(int signal) override {
    if (released()) return Error(ErrorCode::kConflict, "the process was released");
    std::lock_guard<std::mutex> lock(state_->reap_mu);
    if (state_->proc.reaped()) return Ok();  // the pump ended the tree before it reaped
    return state_->proc.KillTree(signal);
  }

  bool finished() const override {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->finished;
  }

  ExecOutcome Wait() override {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->done.wait(lock, [this] { return state_->finished || state_->released; });
    if (state_->finished) return state_->outcome;
    ExecOutcome released;
    released.status = ExecOutcome::Status::kAborted;
    released.where = "host";
    released.warnings.push_back("released: the process was left running");
    return released;
  }

 private:
  struct State {
    explicit State(Subprocess p) : proc(std::move(p)) {}
    Subprocess proc;
    std::mutex reap_mu;
    CancelToken cancel;
    std::mutex sink_mu;  // held while the owner's sink runs, and by Release
    std::mutex mu;       // guards the fields below
    std::condition_variable done;
    bool finished = false;
    bool released = false;
    ExecOutcome outcome;
  };

  bool released() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->released;
  }

  std::shared_ptr<State> state_;
  bool pty_;
  int64_t pid_ = 0;
  UniqueFd stdin_;
  std::mutex stdin_mu_;
  std::thread thread_;  // last: started after everything it uses exists
};

}  // namespace

Result<ExecOutcome> HostExecutor::Run(const Plan& plan, const LiveSink& live,
                                      const CancelToken* cancel) {
  if (cancel != nullptr && cancel->cancelled()) {
    // Cancelled before it started: nothing is spawned (a child signalled while it is still
    // setting itself up may only die at the end of the kill grace).
    ExecOutcome aborted;
    aborted.status = ExecOutcome::Status::kAborted;
    aborted.cwd = plan.cwd;
    aborted.where = "host";
    return aborted;
  }
  std::shared_ptr<const void> hardening;
  std::vector<std::string> warnings;
  SANDRUN_ASSIGN_OR_RETURN(SpawnOptions spawn,
                           SpawnFor(plan, SpawnOptions::Stdin::kNull, &hardening, &warnings));
  spawn.die_with_parent = true;  // nobody would read a foreground run left by a dead runner
  RunLimits limits = LimitsFor(plan);
  SANDRUN_ASSIGN_OR_RETURN(ExecOutcome outcome,
                           RunSubprocess(spawn, limits, live, cancel, spawner_.get()));
  outcome.warnings.insert(outcome.warnings.begin(), warnings.begin(), warnings.end());
  if (plan.cwd.empty()) {
    char here[PATH_MAX];
    if (::getcwd(here, sizeof(here)) != nullptr) outcome.cwd = here;
  } else {
    outcome.cwd = plan.cwd;
  }
  outcome.where = "host";
  return outcome;
}

Result<std::unique_ptr<RunningProcess>> HostExecutor::Start(const Plan& plan, LiveSink sink) {
  std::shared_ptr<const void> hardening;
  std::vector<std::string> warnings;
  SANDRUN_ASSIGN_OR_RETURN(SpawnOptions spawn,
                           SpawnFor(plan, SpawnOptions::Stdin::kPipe, &hardening, &warnings));
  spawn.die_with_parent = options_.die_with_runner;
  // From the spawner's thread: the caller's (a request's) may end long before the process.
  SANDRUN_ASSIGN_OR_RETURN(Subprocess proc, spawner_->Spawn(spawn));
  return std::unique_ptr<RunningProcess>(std::make_unique<HostRunningProcess>(
      std::move(proc), plan.pty, LimitsFor(plan), std::move(sink), plan.cwd, std::move(warnings)));
}

RunLimits HostExecutor::LimitsFor(const Plan& plan) const {
  RunLimits limits;
  limits.timeout_ms = plan.timeout_ms;
  limits.kill_grace_ms = plan.kill_grace_ms;
  limits.max_output_chars = plan.max_output_chars;
  limits.drain_grace = options_.drain_grace;
  return limits;
}

Result<SpawnOptions> HostExecutor::SpawnFor(const Plan& plan, SpawnOptions::Stdin stdin_mode,
                                            std::shared_ptr<const void>* keep_alive,
                                            std::vector<std::string>* warnings) const {
  if (plan.target != Target::kGateway) {
    return Error(ErrorCode::kInvalidArgument, "the host executor runs gateway plans only");
  }
  if (plan.shell.empty()) return Error(ErrorCode::kInvalidArgument, "no shell in the plan");

  SpawnOptions spawn;
  spawn.path = plan.shell;
  if (spawn.path.find('/') == std::string::npos) {
    // A bare name is looked up in the command's own PATH, as a shell would.
    auto path = plan.env.find("PATH");
    spawn.path = FindExecutable(
        plan.shell, path == plan.env.end() ? kMinimalDaemonPath : std::string_view(path->second));
    if (spawn.path.empty()) {
      return Error(ErrorCode::kNotFound, "shell not found in PATH: " + plan.shell);
    }
  }
  // "--" for the POSIX shells: a command that starts with '-' is the command, not an option.
  const std::string base = plan.shell.substr(plan.shell.rfind('/') + 1);
  const bool posix = base == "sh" || base == "bash" || base == "dash" || base == "zsh" ||
                     base == "ksh" || base == "mksh" || base == "ash" || base == "busybox";
  spawn.argv = posix ? std::vector<std::string>{plan.shell, "-c", "--", plan.command}
                     : std::vector<std::string>{plan.shell, "-c", plan.command};
  for (const auto& [key, value] : plan.env) {
    if (plan.pty && key == "TERM") continue;
    spawn.env.push_back(key + "=" + value);
  }
  if (plan.pty) {
    // As node-pty: the terminal's name is the child's TERM.
    auto term = plan.env.find("TERM");
    std::string name = !plan.term.empty()       ? plan.term
                       : term != plan.env.end() ? term->second
                                                : "xterm-256color";
    spawn.env.push_back("TERM=" + name);
  }
  spawn.cwd = plan.cwd;
  spawn.stdin_mode = stdin_mode;
  spawn.pty = plan.pty;
  spawn.pty_rows = plan.pty_rows;
  spawn.pty_cols = plan.pty_cols;
  spawn.pipe_bytes = options_.pipe_bytes;
  spawn.tree = options_.tree;

  // Loaded and compiled once per executor; the child only reads the prepared result.
  const std::string profile = plan.host_profile.empty() ? "default" : plan.host_profile;
  const std::string dir =
      options_.profiles_dir.empty() ? harden::DefaultProfilesDir() : options_.profiles_dir;
  harden::HardeningEnvironment env;
  env.cache_dir = options_.cache_dir;
  env.host_user = plan.host_user;
  env.masked = options_.masked_paths;
  env.read_only = options_.read_only_paths;
  // The profiles every later command is hardened with (absolute: SANDRUN_PROFILES_DIR may be
  // relative).
  char resolved[PATH_MAX];
  env.read_only.push_back(::realpath(dir.c_str(), resolved) != nullptr ? resolved : dir);
  auto hardening = [&] {
    if (!options_.seccomp_support && !options_.confine_support) {
      return hardening_->Get(dir, profile, env);
    }
    env.seccomp_support = options_.seccomp_support;
    env.confine_support = options_.confine_support;
    env.cache_dir.clear();
    return harden::HostHardening::Prepare(dir, profile, env);
  }();
  if (!hardening) return std::move(hardening).error().Wrap("host hardening");
  spawn.child_steps = (*hardening)->steps();
  warnings->insert(warnings->end(), (*hardening)->warnings().begin(),
                   (*hardening)->warnings().end());
  if (const auto& who = (*hardening)->identity()) {
    // As su(1) does: the command's own name and home, not the runner's (root's HOME is not
    // readable by the host user, and tools would try to write there).
    auto set = [&spawn](const std::string& key, const std::string& value) {
      std::string entry = key + "=" + value;
      for (std::string& e : spawn.env) {
        if (e.compare(0, key.size() + 1, key + "=") == 0) {
          e = entry;
          return;
        }
      }
      spawn.env.push_back(entry);
    };
    if (!who->home.empty()) set("HOME", who->home);
    if (!who->name.empty()) {
      set("USER", who->name);
      set("LOGNAME", who->name);
    }
  }
  *keep_alive = std::move(hardening).value();
  return spawn;
}

}  // namespace sandrun::exec

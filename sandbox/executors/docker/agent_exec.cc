#include "sandbox/executors/docker/agent_exec.h"

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>
#include <utility>

#include "sandbox/executors/docker/docker_executor.h"
#include "sandbox/os/random.h"

namespace sandrun::exec {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kKeyPrefix[] = "sandrun-agent-v1|";
constexpr auto kConnectTimeout = seconds(5);

Stream StreamOf(uint8_t stream) {
  return stream == agent::kStderr ? Stream::kStderr : Stream::kStdout;
}

// Output and acknowledgements of one command, in order: a replay after ATTACH may repeat bytes
// the runner already has; those are skipped.
class Receiver {
 public:
  Receiver(AgentLink& link, OutputCollector& collector, uint64_t start)
      : link_(link), collector_(collector), received_(start), acked_(start) {}

  // Until EXIT (filled into `exit`), an error of the link, or the options' cancel/deadline.
  Status PumpToExit(const CallOptions& options, AgentEvent* exit) {
    for (;;) {
      SANDRUN_ASSIGN_OR_RETURN(AgentEvent e, link_.Next(options));
      if (e.kind == AgentEvent::Kind::kExit) {
        (void)link_.Ack(e.offset, /*done=*/true);
        acked_ = received_ = e.offset;
        *exit = std::move(e);
        return Ok();
      }
      if (e.offset > received_) {
        return Error(ErrorCode::kProtocol, "sandbox agent: output skipped ahead");
      }
      const uint64_t skip = received_ - e.offset;
      if (skip < e.data.size()) {
        collector_.Append(StreamOf(e.stream), std::string_view(e.data).substr(skip));
        received_ = e.offset + e.data.size();
      }
      // Each delivered chunk is acknowledged: a runner that dies now repeats at most this one.
      AckNow();
    }
  }
  // Acknowledges everything delivered so far (before leaving a command running).
  void AckNow() {
    if (received_ > acked_ && link_.Ack(received_, false)) acked_ = received_;
  }

 private:
  AgentLink& link_;
  OutputCollector& collector_;
  uint64_t received_;
  uint64_t acked_;
};

void EndFromAgent(const AgentEvent& e, ExecOutcome* outcome) {
  outcome->exit_code = -1;
  outcome->signal = 0;
  if (e.timed_out) {
    outcome->status = ExecOutcome::Status::kTimedOut;
  } else if (e.signal > 0) {
    outcome->status = ExecOutcome::Status::kSignaled;
    outcome->signal = e.signal;
  } else if (e.exit_code >= 0) {
    outcome->status = ExecOutcome::Status::kExited;
    outcome->exit_code = e.exit_code;
  } else {
    outcome->status = ExecOutcome::Status::kAborted;
  }
}

std::string AdoptionKey(const std::string& dir, const std::string& id, bool pty) {
  return kKeyPrefix + dir + "|" + id + "|" + (pty ? "1" : "0");
}

// A command in the background: a thread pumps its output to the sink until it ends.
class AgentProcess final : public RunningProcess {
 public:
  AgentProcess(AgentLink link, std::string dir, std::string id, bool pty_flag, int64_t pid,
               size_t max_output, LiveSink sink, AgentFinish finish, uint64_t start)
      : link_(std::move(link)),
        dir_(std::move(dir)),
        id_(std::move(id)),
        key_(AdoptionKey(dir_, id_, pty_flag)),
        pid_(pid),
        pty_(pty_flag),
        collector_(max_output, std::move(sink)),
        receiver_(link_, collector_, start),
        finish_(std::move(finish)) {
    thread_ = std::thread([this] { Pump(); });
  }

  ~AgentProcess() override {
    if (!finished() && !released_) (void)AgentLink::Kill(dir_, id_, SIGKILL);
    stop_.Cancel();
    if (thread_.joinable()) thread_.join();
  }

  Status Release() override {
    released_ = true;
    stop_.Cancel();
    if (thread_.joinable()) thread_.join();
    if (!end_.done()) {    // the thread is gone: nobody else sets it
      receiver_.AckNow();  // the next runner resumes after what this one delivered
      link_.Shutdown();
      ExecOutcome released;
      released.status = ExecOutcome::Status::kAborted;
      end_.Set(std::move(released));
    }
    return Ok();
  }

  ProcessKind kind() const override { return ProcessKind::kContainer; }
  std::string adoption_key() const override { return key_; }
  bool recovers_output() const override { return true; }
  int64_t pid() const override { return pid_; }
  Status WriteStdin(std::string_view data) override { return link_.Stdin(data); }
  Status CloseStdin() override { return link_.StdinEof(); }
  Status Resize(unsigned rows, unsigned cols) override {
    if (!pty_) return Error(ErrorCode::kInvalidArgument, "not a terminal");
    if (finished()) return Ok();
    return link_.Resize(rows, cols);
  }
  Status Kill(int signal) override {
    if (finished()) return Ok();
    return AgentLink::Kill(dir_, id_, signal);  // never behind input the command does not read
  }
  bool finished() const override { return end_.done(); }
  ExecOutcome Wait() override { return end_.Wait(); }

 private:
  void Pump() {
    const auto started_at = Deadline::Clock::now();
    AgentEvent exit;
    Status pumped = receiver_.PumpToExit({Deadline::Never(), &stop_}, &exit);
    if (!pumped && pumped.error().code == ErrorCode::kCancelled) return;  // Release or delete
    ExecOutcome outcome;
    if (pumped) {
      EndFromAgent(exit, &outcome);
    } else {
      outcome.status = ExecOutcome::Status::kAborted;
      outcome.warnings.push_back(pumped.error().ToString());
    }
    outcome.duration_ms =
        std::chrono::duration_cast<milliseconds>(Deadline::Clock::now() - started_at).count();
    if (finish_) {
      finish_(outcome, collector_);
    } else {
      outcome.aggregated = collector_.Text();
      outcome.total_bytes = collector_.total_bytes();
      outcome.truncated = collector_.truncated();
    }
    end_.Set(std::move(outcome));
  }

  AgentLink link_;
  std::string dir_;
  std::string id_;
  std::string key_;
  int64_t pid_;
  bool pty_;
  OutputCollector collector_;
  Receiver receiver_;
  AgentFinish finish_;
  CancelToken stop_;
  std::atomic<bool> released_{false};
  OutcomeLatch end_;
  std::thread thread_;  // last: started after everything it uses exists
};

}  // namespace

Result<AgentStart> AgentStartFor(const Plan& plan, bool stdin_open, bool kill_on_disconnect) {
  auto ids = ParseNumericUser(plan.sandbox.user);
  if (!ids) return Error(ErrorCode::kInvalidArgument, "the sandbox user is not a numeric uid:gid");
  AgentStart s;
  SANDRUN_ASSIGN_OR_RETURN(s.id, RandomHex(16));
  s.uid = ids->first;
  s.gid = ids->second;
  s.pty = plan.pty;
  s.stdin_open = stdin_open;
  s.kill_on_disconnect = kill_on_disconnect;
  s.rows = static_cast<uint16_t>(std::min(plan.pty_rows, 65535u));
  s.cols = static_cast<uint16_t>(std::min(plan.pty_cols, 65535u));
  s.timeout_ms = plan.timeout_ms > 0 ? static_cast<uint64_t>(plan.timeout_ms) : 0;
  s.kill_grace_ms = plan.kill_grace_ms > 0 ? static_cast<uint64_t>(plan.kill_grace_ms) : 0;
  s.cwd = plan.cwd;
  // Exactly the Engine API exec's command and environment (DockerExecutor::ExecSpecFor).
  s.argv = {"/bin/sh", "-lc", "--",
            (plan.prepend_path.empty() ? std::string() : std::string(kPathPrefix)) + plan.command};
  for (const auto& [k, v] : plan.env) s.env.push_back(k + "=" + v);
  if (!plan.prepend_path.empty()) s.env.push_back("SANDRUN_PREPEND_PATH=" + plan.prepend_path);
  if (plan.pty) s.env.push_back("TERM=" + plan.term);
  return s;
}

Result<ExecOutcome> RunOnAgent(const std::string& dir, const Plan& plan, OutputCollector& collector,
                               const CancelToken* cancel, bool* started) {
  *started = false;
  SANDRUN_ASSIGN_OR_RETURN(AgentStart start, AgentStartFor(plan, false, true));
  SANDRUN_ASSIGN_OR_RETURN(AgentLink link,
                           AgentLink::Connect(dir, Deadline::After(kConnectTimeout)));
  SANDRUN_RETURN_IF_ERROR(link.Start(start, Deadline::After(kConnectTimeout)));
  *started = true;
  // The agent enforces the timeout; this deadline only guards against an agent that stopped
  // answering.
  const int64_t grace = std::max<int64_t>(plan.kill_grace_ms, 0);
  Deadline guard = plan.timeout_ms > 0
                       ? Deadline::After(milliseconds(plan.timeout_ms + grace) + seconds(10))
                       : Deadline::Never();
  Receiver receiver(link, collector, 0);
  AgentEvent exit;
  ExecOutcome outcome;
  Status pumped = receiver.PumpToExit({guard, cancel}, &exit);
  if (pumped) {
    EndFromAgent(exit, &outcome);
    return outcome;
  }
  const ErrorCode code = pumped.error().code;
  if (code == ErrorCode::kCancelled || code == ErrorCode::kTimeout) {
    // TERM to the tree, KILL after the grace; what it printed meanwhile is still collected.
    (void)link.Signal(code == ErrorCode::kCancelled ? SIGTERM : SIGKILL);
    if (!receiver.PumpToExit({Deadline::After(milliseconds(grace)), nullptr}, &exit)) {
      (void)link.Signal(SIGKILL);
      (void)receiver.PumpToExit({Deadline::After(seconds(5)), nullptr}, &exit);
    }
    outcome.status = code == ErrorCode::kCancelled ? ExecOutcome::Status::kAborted
                                                   : ExecOutcome::Status::kTimedOut;
    return outcome;
  }
  outcome.status = ExecOutcome::Status::kAborted;
  outcome.warnings.push_back(pumped.error().ToString());
  return outcome;
}

Result<std::unique_ptr<RunningProcess>> StartOnAgent(const std::string& dir, const Plan& plan,
                                                     LiveSink sink, AgentFinish finish) {
  SANDRUN_ASSIGN_OR_RETURN(AgentStart start, AgentStartFor(plan, true, false));
  SANDRUN_ASSIGN_OR_RETURN(AgentLink link,
                           AgentLink::Connect(dir, Deadline::After(kConnectTimeout)));
  SANDRUN_ASSIGN_OR_RETURN(auto started, link.Start(start, Deadline::After(kConnectTimeout)));
  return std::unique_ptr<RunningProcess>(
      std::make_unique<AgentProcess>(std::move(link), dir, start.id, plan.pty, started.pid,
                                     plan.max_output_chars, std::move(sink), std::move(finish), 0));
}

bool IsAgentAdoptionKey(const std::string& key) { return key.rfind(kKeyPrefix, 0) == 0; }

Result<std::unique_ptr<RunningProcess>> AdoptOnAgent(const std::string& key, LiveSink sink) {
  std::vector<std::string> f;
  for (size_t start = 0;;) {
    const size_t bar = key.find('|', start);
    f.push_back(key.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  if (f.size() != 4 || f[0] + "|" != kKeyPrefix || f[1].empty() || f[1][0] != '/' ||
      !agent::ValidCommandId(f[2]) || (f[3] != "0" && f[3] != "1")) {
    return Error(ErrorCode::kInvalidArgument, "not an agent adoption key: " + key);
  }
  auto link = AgentLink::Connect(f[1], Deadline::After(kConnectTimeout));
  if (!link) {
    return Error(ErrorCode::kNotFound, "the sandbox agent is gone: " + link.error().ToString());
  }
  // The agent replays from what the last runner acknowledged (delivered to its sink).
  auto started = link->Attach(f[2], agent::kFromAcked, Deadline::After(kConnectTimeout));
  if (!started) return Error(ErrorCode::kNotFound, started.error().ToString());
  return std::unique_ptr<RunningProcess>(std::make_unique<AgentProcess>(
      std::move(link).value(), f[1], f[2], f[3] == "1", started->pid, Plan().max_output_chars,
      std::move(sink), nullptr, started->offset));
}

}  // namespace sandrun::exec

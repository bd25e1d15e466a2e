#include "sandbox/executors/docker/docker_executor.h"

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>
#include <utility>

#include "sandbox/docker/models.h"
#include "sandbox/executors/docker/adopted_exec.h"
#include "sandbox/executors/docker/agent_exec.h"
#include "sandbox/executors/docker/exec_wrapper.h"

namespace sandrun::exec {

DockerExecutor::DockerExecutor(std::shared_ptr<docker::Client> client,
                               std::optional<ExecWrapper> exec_wrapper,
                               std::optional<ExecWrapper> agent_binary)
    : client_(client), pool_(std::move(client), std::move(exec_wrapper), std::move(agent_binary)) {}

Status DockerExecutor::KillExecTree(const ExecTree& tree, int signal, int64_t grace_ms) {
  return KillContainerExecTree(*client_, tree, signal, grace_ms);
}

docker::ExecSpec DockerExecutor::ExecSpecFor(const Plan& plan, bool attach_stdin) {
  docker::ExecSpec spec;
  spec.cmd = {
      // "--": a command that starts with '-' is the command, not a shell option.
      "/bin/sh", "-lc", "--",
      (plan.prepend_path.empty() ? std::string() : std::string(kPathPrefix)) + plan.command};
  for (const auto& [k, v] : plan.env) spec.env.push_back(k + "=" + v);
  if (!plan.prepend_path.empty()) spec.env.push_back("SANDRUN_PREPEND_PATH=" + plan.prepend_path);
  spec.working_dir = plan.cwd;
  // Always the sandbox user by name: a container with the agent runs as root (agent_link.h).
  spec.user = plan.sandbox.user;
  spec.tty = plan.pty;
  spec.attach_stdin = attach_stdin || plan.pty;
  if (plan.pty) {
    spec.console_size = std::make_pair(plan.pty_rows, plan.pty_cols);
    spec.env.push_back("TERM=" + plan.term);
  }
  return spec;
}

Result<DockerExecutor::CreatedExec> DockerExecutor::CreateExecFor(
    const Plan& plan, const docker::ExecSpec& spec, std::vector<std::string>* warnings) {
  SANDRUN_ASSIGN_OR_RETURN(EnsuredContainer container,
                           pool_.EnsureContainer(plan.sandbox, warnings));
  docker::ExecSpec marked = spec;
  SANDRUN_ASSIGN_OR_RETURN(ExecTree tree, MarkExec(marked));
  // The command goes through the exec wrapper where the container has it (exec_wrapper.h).
  auto create = [&] {
    docker::ExecSpec wrapped = marked;
    wrapped.cmd = WrapCommand(container.exec_wrapper, std::move(wrapped.cmd));
    tree.wrapped = container.exec_wrapper;
    return client_->CreateExec(container.id, wrapped);
  };
  auto exec_id = create();
  if (!exec_id && exec_id.error().code != ErrorCode::kDockerUnreachable) {
    // The container is there but cannot run anything (stopped, paused, pids exhausted, hung):
    // kill it and try once more in a fresh one.
    warnings->push_back("Sandbox container " + container.name + " was wedged (" +
                        exec_id.error().ToString() + "); recreated it.");
    (void)client_->RemoveContainer(container.id, true);
    RemoveAgentDir(plan.sandbox.state_dir, container.agent_dir);
    SANDRUN_ASSIGN_OR_RETURN(container, pool_.EnsureContainer(plan.sandbox, warnings));
    exec_id = create();
  }
  if (!exec_id) return SandboxUnavailable(std::move(exec_id).error(), "creating the exec");
  tree.container = container.id;
  tree.exec_id = *exec_id;
  return CreatedExec{std::move(container), *exec_id, std::move(tree)};
}

ExecOutcome DockerExecutor::Finish(const Plan& plan, const CreatedExec& exec, Status streamed,
                                   OutputCollector& collector, const CancelToken* cancel,
                                   Deadline::Clock::time_point started_at) {
  const std::string& exec_id = exec.exec_id;
  const std::string& container = exec.container.name;
  ExecOutcome outcome;
  outcome.cwd = plan.cwd;
  outcome.where = "container " + container;
  if (!streamed) {
    ErrorCode code = streamed.error().code;
    if (auto killed = KillExecTree(exec.tree, SIGTERM, plan.kill_grace_ms); !killed) {
      outcome.warnings.push_back(killed.error().ToString());
    } else {
      DiscardExecRecord(*client_, exec.tree);  // its end is the timeout or the cancel
    }
    if (code == ErrorCode::kTimeout && plan.timeout_ms > 0) {
      outcome.status = ExecOutcome::Status::kTimedOut;
    } else {
      outcome.status = ExecOutcome::Status::kAborted;
      if (code != ErrorCode::kCancelled) outcome.warnings.push_back(streamed.error().ToString());
    }
  } else {
    auto exit = client_->WaitExecExit(exec_id, {Deadline::After(std::chrono::seconds(10)), cancel});
    if (exit) {
      EndFromExitCode(*client_, exec.tree, *exit, &outcome);
    } else {
      outcome.status = ExecOutcome::Status::kAborted;
    }
  }
  Complete(plan, container, collector, started_at, &outcome);
  return outcome;
}

void DockerExecutor::Complete(const Plan& plan, const std::string& container,
                              const OutputCollector& collector,
                              Deadline::Clock::time_point started_at, ExecOutcome* outcome) {
  outcome->cwd = plan.cwd;
  outcome->where = "container " + container;
  outcome->aggregated = collector.Text();
  outcome->total_bytes = collector.total_bytes();
  outcome->truncated = collector.truncated();
  outcome->duration_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::Clock::now() - started_at)
          .count();
  // A command that ended by itself (an exit code, or a signal it got in the container) and
  // quickly is not checked: the check reads the engine's stats, which takes about a second.
  const bool ended_itself = outcome->status == ExecOutcome::Status::kExited ||
                            outcome->status == ExecOutcome::Status::kSignaled;
  if (!ended_itself || outcome->duration_ms >= 1000) {
    pool_.RemoveIfExhausted(plan.sandbox.state_dir, container, &outcome->warnings);
  }
  pool_.MaybePrune(plan.sandbox);
}

namespace {

std::string AgentFallbackWarning(const std::string& container, const Error& e) {
  return "Warning: the sandbox agent of " + container + " did not answer (" + e.ToString() +
         "); ran through the Engine API exec (slower).";
}

}  // namespace

namespace {

CallOptions StreamOptions(const Plan& plan, const CancelToken* cancel) {
  CallOptions opts;
  opts.cancel = cancel;
  if (plan.timeout_ms > 0) {
    opts.deadline = Deadline::After(std::chrono::milliseconds(plan.timeout_ms));
  }
  return opts;
}

docker::OutputSink CollectorSink(OutputCollector& collector) {
  return [&collector](docker::StreamKind kind, std::string_view bytes) {
    collector.Append(kind == docker::StreamKind::kStderr ? Stream::kStderr : Stream::kStdout,
                     bytes);
  };
}

}  // namespace

void DockerExecutor::RemoveCallScope(const Plan& plan, std::vector<std::string>* warnings) {
  const SandboxSpec& sb = plan.sandbox;
  if (!sb.remove_after) return;
  auto removed = pool_.RemoveScope(sb.instance_id, sb.state_dir, sb.tenant, sb.scope_key,
                                   sb.scratch ? sb.workspace_host_dir : "", false);
  if (!removed) {
    warnings->push_back("Warning: the call's own sandbox (rm) was not removed: " +
                        removed.error().ToString() + "; `sandrun sandbox prune` removes it.");
  }
}

namespace {

// Runs RemoveCallScope when the call is over, however it ends.
class CallScopeRemoval {
 public:
  CallScopeRemoval(DockerExecutor* executor, const Plan& plan) : executor_(executor), plan_(plan) {}
  ~CallScopeRemoval() {
    std::vector<std::string> ignored;
    if (armed_) executor_->RemoveCallScope(plan_, &ignored);
  }
  void Disarm() { armed_ = false; }
  // Removes now, reporting into `warnings`, instead of at destruction.
  void Now(std::vector<std::string>* warnings) {
    armed_ = false;
    executor_->RemoveCallScope(plan_, warnings);
  }
  CallScopeRemoval(const CallScopeRemoval&) = delete;
  CallScopeRemoval& operator=(const CallScopeRemoval&) = delete;

 private:
  DockerExecutor* executor_;
  const Plan& plan_;
  bool armed_ = true;
};

}  // namespace

Result<ExecOutcome> DockerExecutor::Run(const Plan& plan, const LiveSink& live,
                                        const CancelToken* cancel) {
  auto started_at = Deadline::Clock::now();
  std::vector<std::string> warnings;
  docker::ExecSpec spec = ExecSpecFor(plan, /*attach_stdin=*/false);
  CallScopeRemoval removal(this, plan);
  std::optional<EnsuredContainer> recent = pool_.Recent(plan.sandbox);
  EnsuredContainer container;
  if (recent) {
    container = *recent;
  } else {
    SANDRUN_ASSIGN_OR_RETURN(container, pool_.EnsureContainer(plan.sandbox, &warnings));
  }
  if (!container.agent_dir.empty()) {
    OutputCollector collector(plan.max_output_chars, live);
    bool started = false;
    auto outcome = RunOnAgent(container.agent_dir, plan, collector, cancel, &started);
    if (!outcome && !started && recent) {
      // The container found a moment ago is gone (its agent with it): find it again.
      pool_.Forget(plan.sandbox);
      SANDRUN_ASSIGN_OR_RETURN(container, pool_.EnsureContainer(plan.sandbox, &warnings));
      if (!container.agent_dir.empty()) {
        outcome = RunOnAgent(container.agent_dir, plan, collector, cancel, &started);
      }
    }
    if (outcome) {
      Complete(plan, container.name, collector, started_at, &*outcome);
      removal.Now(&warnings);
      outcome->warnings.insert(outcome->warnings.begin(), warnings.begin(), warnings.end());
      return outcome;
    }
    if (started) return std::move(outcome).error().Wrap("running in " + container.name);
    warnings.push_back(AgentFallbackWarning(container.name, outcome.error()));
  }
  SANDRUN_ASSIGN_OR_RETURN(CreatedExec created, CreateExecFor(plan, spec, &warnings));

  OutputCollector collector(plan.max_output_chars, live);
  docker::OutputSink sink = CollectorSink(collector);
  CallOptions opts = StreamOptions(plan, cancel);
  Status streamed = Ok();
  if (plan.pty) {
    auto stream = client_->AttachExec(created.exec_id, spec, opts);
    streamed = stream ? (*stream)->PumpToEnd(sink, opts) : Status(std::move(stream).error());
  } else {
    streamed = client_->StartExec(created.exec_id, false, sink, opts);
  }
  if (!streamed && streamed.error().code != ErrorCode::kTimeout &&
      streamed.error().code != ErrorCode::kCancelled) {
    (void)KillExecTree(created.tree, SIGTERM, plan.kill_grace_ms);
    return std::move(streamed).error().Wrap("running in " + created.container.name);
  }
  ExecOutcome outcome = Finish(plan, created, std::move(streamed), collector, cancel, started_at);
  removal.Now(&warnings);
  outcome.warnings.insert(outcome.warnings.begin(), warnings.begin(), warnings.end());
  return outcome;
}

// A sandbox command running in the background over a hijacked exec stream: a pump thread
// delivers output while the owner writes stdin, resizes the TTY or kills the exec's tree.
class DockerRunningProcess final : public RunningProcess {
 public:
  DockerRunningProcess(std::shared_ptr<DockerExecutor> keep_alive, DockerExecutor* executor,
                       std::shared_ptr<docker::Client> client, Plan plan,
                       DockerExecutor::CreatedExec created,
                       std::unique_ptr<docker::ExecStream> stream, LiveSink sink,
                       std::vector<std::string> warnings, int64_t pid)
      : keep_alive_(std::move(keep_alive)),
        executor_(executor),
        client_(std::move(client)),
        plan_(std::move(plan)),
        created_(std::move(created)),
        stream_(std::move(stream)),
        collector_(plan_.max_output_chars, std::move(sink)),
        warnings_(std::move(warnings)),
        pid_(pid) {
    started_at_ = Deadline::Clock::now();
    thread_ = std::thread([this] {
      CallOptions opts = StreamOptions(plan_, &cancel_);
      Status streamed = stream_->PumpToEnd(CollectorSink(collector_), opts);
      ExecOutcome outcome =
          executor_->Finish(plan_, created_, std::move(streamed), collector_, nullptr, started_at_);
      executor_->RemoveCallScope(plan_, &warnings_);  // before Wait() returns: nothing is left
      outcome.warnings.insert(outcome.warnings.begin(), warnings_.begin(), warnings_.end());
      end_.Set(std::move(outcome));
    });
  }

  ~DockerRunningProcess() override {
    if (!finished()) {
      (void)Kill(SIGKILL);
      cancel_.Cancel();
    }
    if (thread_.joinable()) thread_.join();
  }

  ProcessKind kind() const override { return ProcessKind::kContainer; }
  std::string adoption_key() const override { return ExecAdoptionKey(created_.tree); }
  int64_t pid() const override { return pid_; }
  Status WriteStdin(std::string_view data) override {
    std::lock_guard<std::mutex> lock(write_mu_);
    return stream_->WriteStdin(data, {Deadline::After(std::chrono::seconds(10)), nullptr});
  }
  Status CloseStdin() override {
    std::lock_guard<std::mutex> lock(write_mu_);
    if (plan_.pty) {
      return stream_->WriteStdin("\x04", {Deadline::After(std::chrono::seconds(10)), nullptr});
    }
    return stream_->CloseStdin();
  }
  Status Resize(unsigned rows, unsigned cols) override {
    if (!plan_.pty) return Error(ErrorCode::kInvalidArgument, "not a terminal");
    Status resized = client_->ResizeExec(created_.exec_id, rows, cols);
    // Resizing an exec that has ended is no error: there is no terminal left to size.
    if (!resized) {
      auto info = client_->InspectExec(created_.exec_id);
      if (info && !info->running) return Ok();
    }
    return resized;
  }
  Status Kill(int signal) override {
    if (finished()) return Ok();
    return KillContainerExecTree(*client_, created_.tree, signal, 0);
  }
  bool finished() const override { return end_.done(); }
  ExecOutcome Wait() override { return end_.Wait(); }

 private:
  std::shared_ptr<DockerExecutor> keep_alive_;  // null when the executor is not shared-owned
  DockerExecutor* executor_;
  std::shared_ptr<docker::Client> client_;
  Plan plan_;
  DockerExecutor::CreatedExec created_;
  std::unique_ptr<docker::ExecStream> stream_;
  OutputCollector collector_;
  std::vector<std::string> warnings_;
  int64_t pid_;
  Deadline::Clock::time_point started_at_;
  CancelToken cancel_;
  std::mutex write_mu_;
  OutcomeLatch end_;
  std::thread thread_;  // last: started after everything it uses exists
};

Result<std::unique_ptr<RunningProcess>> DockerExecutor::Start(const Plan& plan, LiveSink sink) {
  std::vector<std::string> warnings;
  docker::ExecSpec spec = ExecSpecFor(plan, /*attach_stdin=*/true);
  CallScopeRemoval removal(this, plan);  // until the process owns the removal
  SANDRUN_ASSIGN_OR_RETURN(EnsuredContainer container,
                           pool_.EnsureContainer(plan.sandbox, &warnings));
  if (!container.agent_dir.empty()) {
    const auto started_at = Deadline::Clock::now();
    std::shared_ptr<DockerExecutor> keep_alive = weak_from_this().lock();
    AgentFinish finish = [this, keep_alive, plan, name = container.name, warnings, started_at](
                             ExecOutcome& outcome, OutputCollector& collector) {
      std::vector<std::string> all = warnings;
      Complete(plan, name, collector, started_at, &outcome);
      RemoveCallScope(plan, &all);  // before Wait() returns: nothing is left
      outcome.warnings.insert(outcome.warnings.begin(), all.begin(), all.end());
    };
    auto process = StartOnAgent(container.agent_dir, plan, sink, std::move(finish));
    if (process) {
      removal.Disarm();
      return process;
    }
    warnings.push_back(AgentFallbackWarning(container.name, process.error()));
  }
  SANDRUN_ASSIGN_OR_RETURN(CreatedExec created, CreateExecFor(plan, spec, &warnings));
  auto stream = client_->AttachExec(created.exec_id, spec);
  if (!stream) return SandboxUnavailable(std::move(stream).error(), "starting the exec");
  int64_t pid = 0;
  if (auto info = client_->InspectExec(created.exec_id); info) pid = info->pid;
  auto process = std::make_unique<DockerRunningProcess>(
      weak_from_this().lock(), this, client_, plan, std::move(created), std::move(stream).value(),
      std::move(sink), std::move(warnings), pid);
  removal.Disarm();
  return std::unique_ptr<RunningProcess>(std::move(process));
}

Result<std::unique_ptr<RunningProcess>> DockerExecutor::Adopt(const std::string& key, LiveSink sink,
                                                              int64_t timeout_ms) {
  if (IsAgentAdoptionKey(key)) return AdoptOnAgent(key, std::move(sink));  // its own timeout
  return AdoptExec(client_, key, std::move(sink), timeout_ms);
}

}  // namespace sandrun::exec

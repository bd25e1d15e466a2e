// Runs plans in the scope's sandbox container: finds or creates the container (one per scope
// and instance, SPEC §4) and runs `/bin/sh -lc PREFIX+command` in it, through the container's
// agent where it has one (the fast path, agent_exec.h), else as an Engine API exec (through the
// exec wrapper where the container has it, exec_wrapper.h); streams its output and enforces the
// timeout by killing the command's process tree in the container. An agent that does not
// answer gets the call the Engine API exec, with a warning.
// Fails closed: when the engine, the image or the container is unavailable, nothing runs.
//
// Pattern of use:
//   DockerExecutor executor(client);
//   SANDRUN_ASSIGN_OR_RETURN(ExecOutcome out, executor.Run(plan, live, &cancel));
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/docker/client.h"
#include "sandbox/executors/docker/container_kill.h"
#include "sandbox/executors/docker/container_pool.h"
#include "sandbox/executors/executor.h"

namespace sandrun::exec {

// The script prefix that puts SANDRUN_PREPEND_PATH first after the login profile reset PATH.
inline constexpr char kPathPrefix[] =
    "export PATH=\"${SANDRUN_PREPEND_PATH}:$PATH\"; unset SANDRUN_PREPEND_PATH; ";

class DockerExecutor final : public Executor, public std::enable_shared_from_this<DockerExecutor> {
 public:
  // `exec_wrapper`, `agent_binary`: see ContainerPool.
  explicit DockerExecutor(std::shared_ptr<docker::Client> client,
                          std::optional<ExecWrapper> exec_wrapper = std::nullopt,
                          std::optional<ExecWrapper> agent_binary = std::nullopt);

  Result<ExecOutcome> Run(const Plan& plan, const LiveSink& live,
                          const CancelToken* cancel) override;
  // In the background over a hijacked stream (stdin open, TTY when plan.pty). The process keeps
  // the executor alive when it is owned by a shared_ptr; otherwise it must outlive the process.
  Result<std::unique_ptr<RunningProcess>> Start(const Plan& plan, LiveSink sink) override;
  // An exec a previous server started (adopted_exec.h): killable, its timeout enforced, its exit
  // code read; output after the restart is not recovered.
  Result<std::unique_ptr<RunningProcess>> Adopt(const std::string& key, LiveSink sink,
                                                int64_t timeout_ms) override;

  // Drains the warm pool (container_pool.h).
  void Shutdown() override { pool_.DrainWarmPool(); }
  void ConfigChanged() override { pool_.ResetWarmPool(); }

  // The scope's containers (container_pool.h).
  ContainerPool& pool() { return pool_; }
  Result<EnsuredContainer> EnsureContainer(const SandboxSpec& spec,
                                           std::vector<std::string>* warnings) {
    return pool_.EnsureContainer(spec, warnings);
  }
  Result<std::vector<std::string>> Prune(const std::string& instance_id,
                                         const std::string& state_dir, double idle_hours,
                                         double max_age_days) {
    return pool_.Prune(instance_id, state_dir, idle_hours, max_age_days);
  }
  Status ReleaseIdleScratch(const std::string& instance_id, const std::string& state_dir) {
    return pool_.ReleaseIdleScratch(instance_id, state_dir);
  }

  struct CreatedExec {
    EnsuredContainer container;
    std::string exec_id;
    ExecTree tree;  // what finds the exec's processes in the container (container_kill.h)
  };
  // The outcome of an exec whose stream ended (or failed with `streamed`): kills the tree on a
  // timeout or cancellation, reads the exit code, fills the output fields.
  ExecOutcome Finish(const Plan& plan, const CreatedExec& exec, Status streamed,
                     OutputCollector& collector, const CancelToken* cancel,
                     Deadline::Clock::time_point started_at);
  // The outcome's output fields, place and duration, then the container's health (after a long
  // or killed run) and the periodic prune: the end of every run, agent or Engine API.
  void Complete(const Plan& plan, const std::string& container, const OutputCollector& collector,
                Deadline::Clock::time_point started_at, ExecOutcome* outcome);
  // exec --rm (plan.sandbox.remove_after): removes the call's own scope, its container and
  // scratch data; a failure is a warning appended to `warnings`. Nothing for other plans.
  void RemoveCallScope(const Plan& plan, std::vector<std::string>* warnings);

 private:
  static docker::ExecSpec ExecSpecFor(const Plan& plan, bool attach_stdin);
  // Ensures the container and creates the exec, recreating a wedged container once.
  Result<CreatedExec> CreateExecFor(const Plan& plan, const docker::ExecSpec& spec,
                                    std::vector<std::string>* warnings);
  Status KillExecTree(const ExecTree& tree, int signal, int64_t grace_ms);

  std::shared_ptr<docker::Client> client_;
  ContainerPool pool_;
};

}  // namespace sandrun::exec

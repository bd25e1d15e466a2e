// The executors of a runtime, keyed by the plan's target: the runtime, its sessions and the tool
// code ask the registry for "the executor of this plan" (or of this kind of process, to re-adopt
// it after a restart) instead of switching on targets themselves. An executor is made by its
// factory on first use, then shared by every later call (sessions started by concurrent calls
// share it); a failed creation is not remembered, so the next call tries again (an engine that
// comes up later is found). Only the interface lives here: the back-ends register themselves
// from the front end that owns the registry (runner/api/runtime.cc).
//
// Pattern of use:
//   ExecutorRegistry registry;
//   registry.Register(Target::kSandbox, [] { return MakeDockerExecutor(); });
//   SANDRUN_ASSIGN_OR_RETURN(std::shared_ptr<Executor> e, registry.For(plan.target));
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "sandbox/base/result.h"
#include "sandbox/executors/executor.h"
#include "sandbox/executors/plan.h"
#include "sandbox/executors/process.h"

namespace sandrun::exec {

// The name callers outside the process see for a target: "sandbox" | "gateway" (the tool
// result's `host`), "target N" for a value no front end knows.
std::string TargetName(Target target);

// The wire code of a target that could not run anything (no executor, or it failed to start the
// plan): sandbox-unavailable for the sandbox (fail closed, exit 123), spawn-failed otherwise.
const char* UnavailableWire(Target target);

// The target whose executor starts (and re-adopts) processes of `kind`.
Target TargetOfKind(ProcessKind kind);

class ExecutorRegistry {
 public:
  using Factory = std::function<Result<std::shared_ptr<Executor>>()>;

  // The factory of `target`'s executor, replacing an earlier one (and what it made).
  void Register(Target target, Factory make);

  // The executor of `target`, made now if it was not yet. Nothing runs without one, so every
  // error fails closed and says which target: wire code sandbox-unavailable for the sandbox
  // (nothing registered, or the factory failed: no engine client), spawn-failed otherwise.
  Result<std::shared_ptr<Executor>> For(Target target);

  // The executor that starts processes of `kind` (re-adoption after a restart), made if needed;
  // null when there is none (the session then is lost, as a process nobody can reach).
  Executor* ForKind(ProcessKind kind);
  // Executor::Shutdown, Executor::ConfigChanged of every executor made so far.
  void Shutdown();
  void ConfigChanged();

 private:
  struct Entry {
    Factory make;
    std::shared_ptr<Executor> made;
  };
  std::vector<std::shared_ptr<Executor>> Made();
  std::mutex mu_;  // held while a factory runs: concurrent first calls make one executor
  std::map<Target, Entry> entries_;
};

}  // namespace sandrun::exec

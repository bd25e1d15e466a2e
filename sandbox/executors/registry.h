// The executors of a runtime, keyed by the plan's target: the front ends and sessions ask the
// registry for "the executor of this plan" (or of this process kind) instead of switching on
// targets themselves. An executor is made on first use by its factory and then shared by every
// call (sessions started by concurrent calls share it); a failed creation is not remembered, so
// the next call tries again (an engine that comes up later is found).
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

class ExecutorRegistry {
 public:
  using Factory = std::function<Result<std::shared_ptr<Executor>>()>;

  // The factory of `target`'s executor, replacing an earlier one (and what it made).
  void Register(Target target, Factory make) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_[target] = Entry{std::move(make), nullptr};
  }

  // The executor of `target`, made now if it was not yet. kNotFound: nothing is registered.
  Result<std::shared_ptr<Executor>> For(Target target) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(target);
    if (it == entries_.end()) {
      return Error(ErrorCode::kNotFound, "no executor for this target");
    }
    if (!it->second.made) {
      SANDRUN_ASSIGN_OR_RETURN(it->second.made, it->second.make());
    }
    return it->second.made;
  }

  // The executor that starts processes of `kind` (re-adoption after a restart), made if needed;
  // null when there is none.
  Executor* ForKind(ProcessKind kind) {
    auto made = For(kind == ProcessKind::kHost ? Target::kGateway : Target::kSandbox);
    return made ? made->get() : nullptr;
  }

 private:
  struct Entry {
    Factory make;
    std::shared_ptr<Executor> made;
  };
  std::mutex mu_;
  std::map<Target, Entry> entries_;
};

}  // namespace sandrun::exec

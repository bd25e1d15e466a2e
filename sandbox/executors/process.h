// A command started in the background (a session's process): it runs on its own, its output
// arrives through the sink given at start (called from a reader thread), its stdin stays open for
// writes, a PTY can be resized and the whole tree killed. Sessions (runner/sessions) own these.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(auto proc, executor.Start(plan, sink));
//   proc->WriteStdin("hello\n");
//   ExecOutcome outcome = proc->Wait();   // blocks until it ended and all output was delivered
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "sandbox/base/result.h"
#include "sandbox/executors/output.h"

namespace sandrun::exec {

// Where a process runs: what a session may do with it when the server stops (a host process may
// be left running on request; a container exec is re-adopted or killed after a restart).
enum class ProcessKind { kHost, kContainer };
const char* ProcessKindName(ProcessKind kind);  // "host" | "container"

// The end of a background process: set once by the thread that watched it, awaited by its
// owner (RunningProcess::finished/Wait).
class OutcomeLatch {
 public:
  // The first call records `outcome` and wakes the waiters; later calls change nothing.
  void Set(ExecOutcome outcome) {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    outcome_ = std::move(outcome);
    done_ = true;
    cv_.notify_all();
  }
  bool done() const {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  ExecOutcome Wait() const {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    return outcome_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  ExecOutcome outcome_;
};

class RunningProcess {
 public:
  virtual ~RunningProcess() = default;  // kills the tree if still running (unless released)

  // Detaches from the process: it keeps running on its own (its own timeout may still end it),
  // nothing more is delivered to the sink once this returns, Wait() returns at once (kAborted
  // unless it had finished) and destroying this object leaves the process alone. Call it
  // without holding a lock the sink takes. kConflict: this kind cannot be left running (the
  // caller kills it instead).
  virtual Status Release() {
    return Error(ErrorCode::kConflict, "this process cannot be left running");
  }

  virtual ProcessKind kind() const = 0;
  // An opaque text the executor that started the process can find it again with after the
  // server restarted (Executor::Adopt); "" when it cannot be found again.
  virtual std::string adoption_key() const { return ""; }
  // Whether a process adopted after a restart delivers the output it printed meanwhile (the
  // sandbox agent keeps it); otherwise that output is lost.
  virtual bool recovers_output() const { return false; }

  // Host pid of the process (gateway), or the exec's pid as the engine reports it; 0 if unknown.
  virtual int64_t pid() const = 0;
  virtual Status WriteStdin(std::string_view data) = 0;
  virtual Status CloseStdin() = 0;                          // the process reads EOF
  virtual Status Resize(unsigned rows, unsigned cols) = 0;  // PTY only
  // Signals the whole process tree (group on the host, every descendant in the container).
  virtual Status Kill(int signal) = 0;
  virtual bool finished() const = 0;
  // Blocks until the process ended (or the plan's timeout killed it) and every byte of output
  // went to the sink. The outcome's `aggregated` is the plan's capped tail.
  virtual ExecOutcome Wait() = 0;
};

}  // namespace sandrun::exec

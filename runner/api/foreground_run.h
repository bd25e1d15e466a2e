// One foreground run of a prepared plan, the same for every front end: the one-shot CLI drives it
// from its own stdin and signals, the server's /v1/exec route from the frames of its client.
// It starts the plan as an exec::RunningProcess (so stdin can be fed and the tree killed), and
// cancelling it sends SIGTERM to the whole tree, then SIGKILL when it is still running 3 s later.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(auto run, ForegroundRun::Start(executor, plan, sink));
//   run->WriteStdin("data"); run->CloseStdin();   // from any thread
//   run->Cancel();                                 // from any thread, any number of times
//   exec::ExecOutcome outcome = run->Wait();       // once
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"
#include "sandbox/executors/executor.h"
#include "sandbox/executors/output.h"
#include "sandbox/executors/plan.h"
#include "sandbox/executors/process.h"

namespace sandrun::api {

// How long a cancelled run has between SIGTERM and SIGKILL.
inline constexpr std::chrono::milliseconds kCancelGrace{3000};

class ForegroundRun {
 public:
  // An Error means nothing started (as Executor::Start).
  static Result<std::unique_ptr<ForegroundRun>> Start(exec::Executor& executor,
                                                      const exec::Plan& plan, exec::LiveSink sink);
  ~ForegroundRun();  // waits for the run if Wait was not called (the process dies with it)
  ForegroundRun(const ForegroundRun&) = delete;
  ForegroundRun& operator=(const ForegroundRun&) = delete;

  Status WriteStdin(std::string_view data);
  Status CloseStdin();
  // SIGTERM to the tree now, SIGKILL after kCancelGrace unless it ended; returns at once.
  void Cancel();
  bool cancelled() const;
  // Blocks until the process ended and its output was delivered.
  exec::ExecOutcome Wait();

 private:
  explicit ForegroundRun(std::unique_ptr<exec::RunningProcess> process);

  std::unique_ptr<exec::RunningProcess> process_;
  mutable std::mutex mu_;
  std::condition_variable ended_cv_;
  bool ended_ = false;      // guarded by mu_
  bool cancelled_ = false;  // guarded by mu_
  bool waited_ = false;
  std::thread killer_;  // the SIGKILL after the grace period
};

// The one-shot CLI's loop around a ForegroundRun: copies `stdin_fd` to the command's stdin until
// EOF (-1: the command's stdin is closed at once), and cancels the run once `cancel` is set
// (polled every 50 ms). An Error means nothing started.
Result<exec::ExecOutcome> RunInForeground(exec::Executor& executor, const exec::Plan& plan,
                                          const exec::LiveSink& sink, int stdin_fd,
                                          const CancelToken* cancel);

}  // namespace sandrun::api

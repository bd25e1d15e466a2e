// The executor interface: runs a Plan to completion, streaming output as it comes.
#pragma once

#include <memory>

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"
#include "sandbox/executors/output.h"
#include "sandbox/executors/plan.h"
#include "sandbox/executors/process.h"

namespace sandrun::exec {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs the plan in the foreground. An Error means nothing could be run (spawn failed, no
  // sandbox: fail closed); a command that ran and failed is an ExecOutcome. Output goes to
  // `live` as it arrives and into the outcome's capped `aggregated`. `cancel` kills the run.
  virtual Result<ExecOutcome> Run(const Plan& plan, const LiveSink& live,
                                  const CancelToken* cancel) = 0;

  // Starts the plan in the background: stdin stays open (or a PTY when plan.pty), output goes to
  // `sink` from another thread, the plan's timeout still applies. An Error means nothing started.
  virtual Result<std::unique_ptr<RunningProcess>> Start(const Plan& plan, LiveSink sink) = 0;

  // Finds a process this kind of executor started before the server restarted, by its
  // RunningProcess::adoption_key(), and takes it over: killable, its remaining output to `sink`,
  // its timeout (`timeout_ms` from now, 0: none) enforced. kNotFound: it is gone.
  virtual Result<std::unique_ptr<RunningProcess>> Adopt(const std::string& key, LiveSink sink,
                                                        int64_t timeout_ms) {
    (void)key;
    (void)sink;
    (void)timeout_ms;
    return Error(ErrorCode::kNotFound, "this executor cannot re-adopt processes");
  }

  // The runtime is stopping: release what is kept ready for later calls (the sandbox's warm
  // pool). Processes already started are not touched.
  virtual void Shutdown() {}
  // The runtime's config was reloaded: drop what was kept ready under the old one.
  virtual void ConfigChanged() {}
};

}  // namespace sandrun::exec

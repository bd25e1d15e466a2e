// The executor interface: runs a Plan to completion, streaming output as it comes.
#pragma once

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"
#include "sandbox/executors/output.h"
#include "sandbox/executors/plan.h"

namespace sandrun::exec {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs the plan in the foreground. An Error means nothing could be run (spawn failed, no
  // sandbox: fail closed); a command that ran and failed is an ExecOutcome. Output goes to
  // `live` as it arrives and into the outcome's capped `aggregated`. `cancel` kills the run.
  virtual Result<ExecOutcome> Run(const Plan& plan, const LiveSink& live,
                                  const CancelToken* cancel) = 0;
};

}  // namespace sandrun::exec

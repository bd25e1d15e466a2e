// The exec tool end to end, in-process: config -> gate -> plan -> executor -> result JSON.
// Used by `sandrun call` and `sandrun exec` (and, later, the server).
#pragma once

#include <string>

#include "runner/api/cli_context.h"
#include "runner/api/tool_call.h"
#include "runner/policy/exec_request.h"
#include "sandbox/base/deadline.h"
#include "sandbox/executors/output.h"

namespace sandrun::api {

struct ExecToolResult {
  bool refused = false;   // the call was refused before anything ran (CLI exit 2)
  bool internal = false;  // sandrun itself failed (CLI exit 1)
  ToolError error;        // when refused or internal
  exec::ExecOutcome outcome;
  std::string host;  // "sandbox" | "gateway"
  int64_t timeout_seconds = 0;
  std::vector<std::string> warnings;  // OpenClaw's Warning: lines for the result text
  std::string json;                   // the one JSON object `sandrun call` prints
};

// Runs one exec request. `live` receives output as it arrives (may be null). `cancel` stops it.
// Config warnings go to stderr ("sandrun: ...").
ExecToolResult RunExecTool(const GlobalOptions& global, const policy::ExecRequest& request,
                           const exec::LiveSink& live, const CancelToken* cancel);

}  // namespace sandrun::api

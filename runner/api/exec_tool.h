// The exec tool end to end, in-process: config -> gate -> plan -> executor -> result JSON.
// Used by `sandrun call` and `sandrun exec` (and, later, the server).
#pragma once

#include <memory>
#include <string>

#include "runner/api/cli_context.h"
#include "runner/api/tool_call.h"
#include "runner/config/settings.h"
#include "runner/policy/exec_request.h"
#include "sandbox/base/deadline.h"
#include "sandbox/executors/output.h"

namespace sandrun::sessions {
class SessionManager;
}
namespace sandrun::exec {
class Executor;
}

namespace sandrun::api {

// What only a long-running server has: background sessions and executors that outlive a call.
// Without it (the one-shot CLI) every exec runs in the foreground.
struct ExecServices {
  sessions::SessionManager* sessions = nullptr;
  std::shared_ptr<exec::Executor> docker;  // created on first sandbox use when null
  std::shared_ptr<exec::Executor> host;
  std::string tenant;  // the token's tenant ("" for a local server)
};

struct ExecToolResult {
  bool refused = false;   // the call was refused before anything ran (CLI exit 2)
  bool internal = false;  // sandrun itself failed (CLI exit 1)
  ToolError error;        // when refused or internal
  exec::ExecOutcome outcome;
  std::string host;  // "sandbox" | "gateway"
  int64_t timeout_seconds = 0;
  std::vector<std::string> warnings;  // OpenClaw's Warning: lines for the result text
  std::string json;                   // the one JSON object `sandrun call` prints
  bool running = false;               // became a background session (json is the `running` result)
};

// Runs one exec request for `caller` (the CLI: provider "cli", the OS user). `live` receives
// output as it arrives (may be null). `cancel` stops it. Config warnings go to stderr
// ("sandrun: ..."). With `services` (the server), runs past their yield window (or
// background:true) become background sessions and the result is `running`.
ExecToolResult RunExecTool(const GlobalOptions& global, const policy::Caller& caller,
                           const policy::ExecRequest& request, const exec::LiveSink& live,
                           const CancelToken* cancel, ExecServices* services = nullptr);

// The caller the CLI speaks for: provider "cli", the OS user's name, the agent and session of
// the global options.
policy::Caller CliCaller(const GlobalOptions& global);

// The name of a user id (its passwd entry), or the number.
std::string UserName(uid_t uid);

// The agent's workspace (SPEC §1): --workspace, else agents.<id>.workspace, else the current
// directory; made absolute.
std::string WorkspaceDir(const GlobalOptions& global, const config::AgentSettings& settings);

}  // namespace sandrun::api

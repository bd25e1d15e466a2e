// The exec tool end to end, in-process: config -> gate -> plan -> executor -> result JSON.
// Called only by the Runtime (runner/api/runtime.h), whichever front end carries the call.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "runner/api/cli_context.h"
#include "runner/api/exec_inputs.h"
#include "runner/api/tool_call.h"
#include "runner/config/settings.h"
#include "runner/policy/exec_request.h"
#include "runner/policy/gate.h"
#include "sandbox/base/deadline.h"
#include "sandbox/executors/host/host_executor.h"
#include "sandbox/executors/output.h"
#include "sandbox/executors/plan.h"

namespace sandrun::sessions {
class SessionManager;
}
namespace sandrun::exec {
class Executor;
class ExecutorRegistry;
}  // namespace sandrun::exec

namespace sandrun::api {

class ApprovalBroker;
struct ExecToolResult;
struct PendingApproval;

// Runs a plan in the foreground the caller's way (its stdin, its cancel, its stream). An Error
// means nothing started.
using ForegroundFn = std::function<Result<exec::ExecOutcome>(exec::Executor&, const exec::Plan&)>;

// How a front end follows a run through its yield window (MCP, issue 16): output as it arrives,
// a caller that gives up, and a finished run whose output is too long to show in one result.
struct YieldWatch {
  int64_t tick_ms = 500;  // how often the window looks at the run
  // Called on a tick when the run printed something since the last call: its last 2000
  // characters (sanitised) and everything it printed so far, in bytes.
  std::function<void(const std::string& tail, uint64_t total_bytes)> progress;
  // The caller went away (an MCP cancel, a closed stream): the run gets SIGTERM, then SIGKILL
  // after kill_grace_ms, and the call answers a refusal `cancelled` (nothing is left running).
  const CancelToken* cancel = nullptr;
  int64_t kill_grace_ms = 2000;
  // A run that ends inside its window having printed more than this many bytes is kept as a
  // finished background session (its full log, for `process log`); 0: never kept.
  uint64_t keep_over_bytes = 0;
  // The window never lasts past this (the front end's own limit, counted from the call's start:
  // time spent waiting for an approval shortens it).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// What the runtime lends a call: its executors and, in a long-running server, background
// sessions. Without sessions (the one-shot CLI) every exec runs in the foreground.
struct ExecServices {
  sessions::SessionManager* sessions = nullptr;
  // The runtime's executors, keyed by the plan's target (never null): the Docker one is made on
  // first sandbox use, an unregistered target fails closed.
  exec::ExecutorRegistry* executors = nullptr;
  std::string tenant;  // the token's tenant ("" for a local server)
  // Pending approvals (the server). Without it an exec that needs an approval has no route to
  // an operator: askFallback decides at once (OpenClaw's headless runs).
  ApprovalBroker* approvals = nullptr;
  // How a foreground run is carried out (the CLI's own stdin and signals; the server's /v1/exec
  // stream): when set, a run not asked to yield (no yield_ms, no background) goes to it instead
  // of Executor::Run or a yield-window session (so does every run when no
  // session can hold it). An Error means nothing started.
  ForegroundFn run_foreground;
  // Called once the call is allowed and its executor is about to start it (`host`: sandbox |
  // gateway): the audit's decision line is written before anything runs. An error: nothing
  // runs and the call fails (internal).
  std::function<Status(const std::string& host)> on_run;
  // Who makes the call, as the runtime records it with a pending approval (a restart decides
  // the call again in that name; see approval_restore.h).
  std::string principal_json;
  // A call that waits for its approval (`"wait": true`) is told so first, with the
  // approval-pending result (the exec stream shows the operator's command on stderr).
  std::function<void(const ExecToolResult& pending)> on_wait;
  // The MCP front end's way through the yield window (null: WaitFor the whole window).
  const YieldWatch* watch = nullptr;
};

struct ExecToolResult {
  bool refused = false;   // the call was refused before anything ran (CLI exit 2)
  bool internal = false;  // sandrun itself failed (CLI exit 1)
  Error error;            // when refused or internal: its wire code is the JSON's error code
  exec::ExecOutcome outcome;
  std::string host;  // "sandbox" | "gateway"
  int64_t timeout_seconds = 0;
  std::vector<std::string> warnings;  // OpenClaw's Warning: lines for the result text
  // What loading the config and approvals file had to say ("config.json:1:19: unknown key ...
  // (ignored)"): for the operator's stderr, not the result text. The runtime prints them on its
  // own stderr; the server also sends them to the CLI that made the call.
  std::vector<std::string> config_warnings;
  std::string json;         // the one JSON object `sandrun call` prints
  bool running = false;     // became a background session (json is the `running` result)
  bool pending = false;     // waits for an operator's approval (json is `approval-pending`)
  std::string approval_id;  // when pending: the approval's id
  // A run that finished inside its window and was kept as a session (YieldWatch::keep_over_bytes),
  // or the background session of a `running` result: its id.
  std::string session_id;
  // A kept run's output from its start (up to keep_over_bytes bytes of its log): the head a front
  // end shows with the outcome's tail.
  std::string output_head;
};

// The host executor's options every front end uses: compiled filters cached under the state
// dir, and the runner's control surfaces out of the commands' reach: the state dir (config,
// approvals, cache, sessions, the server socket) and the extra `sockets` hidden, the engine's
// socket ($DOCKER_HOST's unix path, /var/run/docker.sock) hidden, an explicit --config file
// read-only (the profiles dir is made read-only by the executor itself).
exec::HostExecutor::Options HostExecutorOptions(const GlobalOptions& global,
                                                const std::string& state_dir,
                                                const std::vector<std::string>& sockets = {});

// Runs one exec request for `caller` with the runtime's `services`. `live` receives output as it
// arrives (may be null). `cancel` stops it. Config warnings go to stderr ("sandrun: ...").
// With sessions (the server), runs past their yield window (or background:true) become
// background sessions and the result is `running`.
ExecToolResult RunExecTool(const GlobalOptions& global, const policy::Caller& caller,
                           const policy::ExecRequest& request, const exec::LiveSink& live,
                           const CancelToken* cancel, ExecServices& services);

// Starts `plan` as a background session of `caller` (the server): the session id. Used for
// runs past their yield window and for approved commands.
struct BackgroundRun {
  std::string command;  // shown in the session list
  bool notify_on_exit = true;
  bool notify_on_exit_empty_success = false;
};
Result<std::string> StartBackgroundSession(ExecServices& services, const policy::Caller& caller,
                                           const exec::Plan& plan, const BackgroundRun& run);

// After a restart: a recorded pending approval's call decided again under the config in force,
// as the PendingApproval to restore (the caller sets its id and times from the record). An error
// says why it cannot be kept: loading failed, or the call is no longer one an operator decides.
Result<PendingApproval> RebuildPendingApproval(const GlobalOptions& global,
                                               const policy::Caller& caller,
                                               const policy::ExecRequest& request,
                                               const std::string& tenant);

}  // namespace sandrun::api

// The server's side of `sandrun exec`: POST /v1/exec, upgraded to the exec stream
// (runner/api/exec_stream.h). The run is the CLI's in-process run, carried over the socket:
// stdout and stderr stream as separate byte-exact frames, stdin arrives as frames, the run yields
// only when the request asks (yieldMs/background), and a cancel frame or the connection ending
// kills the command (TERM, then KILL after 3 s).
//
// Who may ask what: the caller's working directory (X-Sandrun-Cwd) and workspace
// (X-Sandrun-Workspace) are honoured only from the server's own uid (SO_PEERCRED); from any other
// peer a request carrying them is refused (exit 125) instead of running in a directory of the
// server's choosing behind the caller's back.
#pragma once

#include <atomic>

#include "runner/api/http_server.h"
#include "runner/api/runtime.h"

namespace sandrun::api {

// Serves one upgraded connection; returns once the run ended and its report was sent (or the
// client went away and the run was killed). `who` is the request's principal; the run goes
// through `runtime` like every other call.
void ServeExecStream(const HttpRequestInfo& request, UpgradedConnection& conn,
                     const std::atomic<bool>& stopping, Runtime& runtime, Principal who);
// Ends an upgraded exec stream at once with `refusal` as its report (nothing was run).
void RefuseExecStream(UpgradedConnection& conn, const Error& refusal);

}  // namespace sandrun::api

// `sandrun serve`: the long-running server (SPEC §2.3) on $SANDRUN_HOME/sandrun.sock (0600), and
// with --listen HOST:PORT on TCP too (TLS with --tls-cert/--tls-key; plain only on loopback:
// listen_address.h), every listener serving the same routes under the same server.* limits.
//   POST /v1/tools/exec      an exec tool call (background sessions and yieldMs work here)
//   POST /v1/tools/process   a process tool call (list, poll, log, write, send-keys, ...)
//   GET  /v1/events          server-sent events: session.started, exec.finished, exec.failed
//   GET  /healthz, GET /metrics
// Headers X-Sandrun-Agent / X-Sandrun-Session choose the agent and session; the caller is
// provider "api" with the client's user name (SO_PEERCRED) as sender. SIGTERM/SIGINT: stop
// accepting, let calls in flight finish, persist sessions, kill host processes still running
// (sandbox ones keep running in their containers and are found lost by the next start).
#pragma once

#include <string>

#include "runner/api/cli_context.h"

namespace sandrun::api {

struct ServeOptions {
  std::string socket;                // "" = $SANDRUN_HOME/sandrun.sock (or --server)
  bool keep_host_processes = false;  // on shutdown, leave gateway sessions running
  std::string listen;                // --listen HOST:PORT: a TCP listener too ("" = none)
  std::string tls_cert, tls_key;     // PEM files: TLS on the TCP listener (both or neither)
  bool require_tokens = false;       // the unix socket needs tokens too
};

int RunServeCommand(const GlobalOptions& global, const ServeOptions& options);

}  // namespace sandrun::api

// `sandrun serve`: the long-running server (SPEC §2.3) on $SANDRUN_HOME/sandrun.sock (0600), and
// with --listen HOST:PORT on TCP too (TLS with --tls-cert/--tls-key; plain only on loopback:
// listen_address.h), every listener serving the same routes under the same server.* limits.
//   POST /v1/tools/exec      an exec tool call (background sessions and yieldMs work here)
//   POST /v1/tools/process   a process tool call (list, poll, log, write, send-keys, ...)
//   POST /v1/tools/apply_patch, POST /v1/policy/check, POST /v1/exec (the CLI's exec stream)
//   GET  /v1/approvals, POST /v1/approvals/{id}   (operator or admin)
//   GET  /v1/events          server-sent events: session.started, exec.finished, exec.failed
//   GET  /healthz, GET /metrics (operator or admin)
// Who calls (server_auth.h): a bearer token (tenant, role, agents) on every TCP request and,
// with --require-tokens, on the socket too; otherwise the socket's peer of the server's uid is
// the local admin. Headers X-Sandrun-Agent / X-Sandrun-Session choose the agent and session,
// X-Sandrun-Tenant an admin's tenant. SIGHUP reloads the tokens. SIGTERM/SIGINT: stop
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
  // The unix socket needs tokens too (platforms whose agents share the server's uid).
  bool require_tokens = false;
};

int RunServeCommand(const GlobalOptions& global, const ServeOptions& options);

}  // namespace sandrun::api

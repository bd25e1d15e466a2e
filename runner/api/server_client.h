// The CLI's side of `sandrun serve`: find a running server on its unix socket and send it tool
// calls (SPEC §2.2: when the socket answers, call/exec/process go through the server).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "runner/api/cli_context.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

struct ServerReply {
  int status = 0;    // HTTP status: 200 handled, 4xx refused, 5xx internal
  std::string body;  // one JSON object
};

// The socket to use: --server, else $SANDRUN_HOME/sandrun.sock.
std::string ServerSocketPath(const GlobalOptions& global, const std::string& state_dir);

// Whether a server answers GET /healthz on `socket` (quickly: a missing socket costs a stat). A
// server that refuses it as busy (503: all of server.maxConnections taken) counts: calls then go
// to it and report its refusal, rather than running in-process behind its back.
bool ServerAnswers(const std::string& socket);

// POSTs `body` to `path` with the CLI's agent/session/workspace as headers.
// Any method (GET /v1/approvals, ...); PostToServer is RequestServer with "POST".
Result<ServerReply> RequestServer(const std::string& socket, const std::string& method,
                                  const std::string& path, const std::string& body,
                                  const GlobalOptions& global);
Result<ServerReply> PostToServer(const std::string& socket, const std::string& path,
                                 const std::string& body, const GlobalOptions& global);

// CLI exit code for a server reply: 0 for 2xx, 2 for 4xx, 1 otherwise.
int ExitCodeFor(const ServerReply& reply);

// Prints the reply's JSON object on stdout (or a server-unreachable error object) and returns
// the CLI exit code for it.
int PrintServerReply(const Result<ServerReply>& reply);

}  // namespace sandrun::api

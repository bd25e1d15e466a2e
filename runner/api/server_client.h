// The CLI's side of `sandrun serve`: find a running server on its unix socket and send it tool
// calls (SPEC §2.2: when the socket answers, call/exec/process go through the server).
#pragma once

#include <atomic>
#include <functional>
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

// The running server's socket, or "" when none answers (then a call runs in-process).
std::string LiveServer(const GlobalOptions& global);

// Follows GET /v1/events (server-sent events) until `on_event` returns false, `*stop` is set or
// the server ends the stream: each event's type and data (its data lines joined by newlines).
// Pings are not passed on; "ready" (the stream is open) is. An Error when the stream could not be
// opened (with the server's refusal) or broke.
using EventFn = std::function<bool(const std::string& type, const std::string& data)>;
Status FollowEvents(const std::string& socket, const GlobalOptions& global,
                    const std::atomic<bool>* stop, const EventFn& on_event);

// A request whose reply may be an event stream: a 200 text/event-stream reply's events go to
// `on_event` as they come (`stream` set, until on_event returns false, `*stop` is set or the
// server ends it); any other reply comes back whole in `body`.
struct StreamedReply {
  int status = 0;
  bool stream = false;
  std::string body;
};
Result<StreamedReply> RequestStream(const std::string& socket, const std::string& request,
                                    const std::atomic<bool>* stop, const EventFn& on_event);
// One MCP message to the server's POST /mcp (the stdio bridge of `sandrun mcp`), with the CLI's
// agent/session/workspace as headers; SSE replies' messages come as "message" events.
Result<StreamedReply> PostMcpToServer(const std::string& socket, const std::string& body,
                                      const GlobalOptions& global, const std::atomic<bool>* stop,
                                      const EventFn& on_event);

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

namespace sandrun::api {

struct ExecReport;

// `sandrun exec` through the server (POST /v1/exec, upgraded to the exec stream): sends the
// call with the caller's agent/session/workspace and `cwd` as X-Sandrun-* headers, copies
// `stdin_fd` (-1: none, the command reads EOF) to the command, passes output to `out`/`err` as it
// arrives, and a cancel once `*cancelled` is set. Returns the server's report
// (an Error when the server could not be reached or broke the stream).
struct ExecStreamIo {
  int stdin_fd = -1;
  const std::atomic<bool>* cancelled = nullptr;
  std::function<void(bool is_stderr, std::string_view bytes)> output;
};
Result<ExecReport> ExecThroughServer(const std::string& socket, const std::string& body,
                                     const GlobalOptions& global, const std::string& cwd,
                                     const ExecStreamIo& io);

}  // namespace sandrun::api

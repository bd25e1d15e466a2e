// `sandrun mcp`: MCP over stdio (issue 16; 2025-11-25 and 2026-07-28 basic/transports/stdio.mdx):
// one JSON-RPC message per line on stdin and stdout (UTF-8, no embedded newlines), logs on stderr
// only. Requests are handled concurrently (a ping or a cancel is answered while an exec runs);
// notifications/cancelled kills the command of the request it names. stdin's end lets what is
// in flight finish (each request within mcp.maxBlockMs), then ends the server; SIGTERM / SIGINT /
// SIGHUP cancel what is in flight first. Nothing it started in-process keeps running.
//
// The CLI's rule: when a server answers on the socket, every message goes to its POST /mcp (the
// server's sessions, approvals and operators); otherwise the messages are served in-process by a
// runtime of this process's own (Runtime::Options::private_sessions: its background sessions die
// with it, and an exec that needs an approval is decided by askFallback, as for the one-shot
// CLI). The global --agent, --session (default main) and --workspace choose the caller.
#pragma once

#include "runner/api/cli_context.h"

namespace sandrun::api {

int RunMcpCommand(const GlobalOptions& global);

}  // namespace sandrun::api

// POST /mcp on `sandrun serve`: MCP's Streamable HTTP transport (issue 16) over McpServer.
//
// Both revisions' rules (docs/specification/{2025-11-25,2026-07-28}/basic/transports/
// streamable-http.mdx of modelcontextprotocol/modelcontextprotocol):
//   - an Origin header that is not allowed is 403 (DNS rebinding): loopback origins
//     (http(s)://localhost, 127.0.0.1, [::1], any port) and mcp.allowedOrigins;
//   - the body is one JSON-RPC message (Content-Type application/json, else 415); a notification
//     or a client's response is 202 with no body;
//   - a tools/call whose client accepts text/event-stream is answered as an SSE stream: progress
//     notifications, then the response; closing the stream cancels the call (the command is
//     killed). Every other request gets one JSON object;
//   - modern (2026-07-28) requests must mirror the body in MCP-Protocol-Version, Mcp-Method and
//     (tools/call) Mcp-Name headers, else 400 with HeaderMismatch (-32020); a legacy request's
//     MCP-Protocol-Version, when sent, must be a version this server speaks (400);
//   - no sessions: Mcp-Session-Id is neither issued nor read; GET and DELETE are 405.
// Who calls is the route's principal (bearer token on TCP, as for every route; agent and
// session from X-Sandrun-Agent / X-Sandrun-Session).
#pragma once

#include <functional>
#include <memory>

#include "runner/api/http_server.h"
#include "runner/api/mcp_server.h"

namespace sandrun::api {

// A held connection's slot (the tenant's share of server.maxConnections) for a tools/call, which
// may last up to mcp.maxBlockMs: null when the tenant holds them all (429, nothing runs); the
// slot is given back when the returned object goes (with the reply, whether or not it was
// written).
using McpSlot = std::function<std::shared_ptr<void>()>;

// The mcp.* settings (allowedOrigins) are read only for a request that has an Origin header:
// the call itself reads them once (McpServer).
HttpReply McpHttpReply(const HttpRequestInfo& r, const Principal& who, McpServer& mcp,
                       const McpSlot& slot);

// Whether `origin` (an Origin header's value) may call: a loopback one or one of `allowed`.
bool McpOriginAllowed(const std::string& origin, const std::vector<std::string>& allowed);

}  // namespace sandrun::api

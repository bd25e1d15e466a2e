// The Model Context Protocol over a Runtime (issue 16), whatever carries it: `sandrun mcp` on
// stdio (mcp_cmd.h) and POST /mcp on `sandrun serve` (mcp_route.h). One JSON-RPC message in, one
// response out (plus progress notifications on the way), the tools generated from the one
// definition the HTTP API validates against (runner/wire/tool_schemas.h).
//
// Dual-era, as the 2026-07-28 revision's versioning page describes
// (modelcontextprotocol/modelcontextprotocol docs/specification/2026-07-28/basic/versioning.mdx):
//   - legacy: `initialize` (2025-06-18, 2025-11-25, 2025-03-26) then requests without `_meta`;
//     requests before `initialize` are served too (a stateless HTTP client never sends it);
//   - modern (2026-07-28): no handshake; every request names its version in
//     params._meta["io.modelcontextprotocol/protocolVersion"]; `server/discover`; results carry
//     resultType "complete" (and ttlMs/cacheScope where cacheable: server/discover.mdx,
//     server/utilities/caching.mdx); an unknown version is UnsupportedProtocolVersionError
//     (-32022, data {supported, requested}).
// Tools (server/tools.mdx of both revisions): exec, process, apply_patch, policy_check; a
// refusal is a tool result with isError true and the OpenClaw message, not a protocol error.
// Long runs yield into a background session after mcp.maxBlockMs; progress
// (basic/patterns/progress.mdx) while they run; cancel (basic/patterns/cancellation.mdx):
// notifications/cancelled, or the transport's own (a closed HTTP stream), kills the command.
//
// Pattern of use (a transport):
//   McpServer mcp(runtime);
//   auto in = ParseMcpMessage(line);                 // or an error reply to send at once
//   McpReply r = mcp.Handle(message, who, notify, &cancel);   // any thread, concurrently
//   if (r.kind == McpReply::Kind::kResponse) send(r.json);
#pragma once

#include <rapidjson/document.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runner/api/runtime.h"
#include "sandbox/base/deadline.h"

namespace sandrun::api {

inline constexpr const char* kMcpModernVersion = "2026-07-28";
// The versions `initialize` accepts (the newest first: the answer to an unknown one).
inline const std::vector<std::string> kMcpLegacyVersions = {"2025-11-25", "2025-06-18",
                                                            "2025-03-26"};
// A message larger than this (one stdio line, one HTTP body) is refused unread.
inline constexpr size_t kMcpMaxMessageBytes = 4u << 20;

// JSON-RPC and MCP error codes.
inline constexpr int kJsonRpcParseError = -32700;
inline constexpr int kJsonRpcInvalidRequest = -32600;
inline constexpr int kJsonRpcMethodNotFound = -32601;
inline constexpr int kJsonRpcInvalidParams = -32602;
inline constexpr int kJsonRpcInternalError = -32603;
inline constexpr int kMcpHeaderMismatch = -32020;      // Streamable HTTP, 2026-07-28
inline constexpr int kMcpUnsupportedVersion = -32022;  // UnsupportedProtocolVersionError

// One incoming message, checked as JSON-RPC 2.0.
struct McpMessage {
  std::shared_ptr<rapidjson::Document> doc;
  bool request = false;          // has an id: a response is owed (else a notification)
  bool client_response = false;  // a response from the client (we send no requests: ignored)
  std::string id_json;           // the id as JSON text ("7", "\"a\"")
  std::string method;
  std::string protocol_version;      // _meta's: the modern era; "" for a legacy message
  std::string name;                  // tools/call params.name ("" when absent or not a string)
  std::string progress_token_json;   // params._meta.progressToken as JSON text, "" when none
  bool client_capabilities = false;  // _meta names the client's capabilities (an object)
};

// What handling one message produced.
struct McpReply {
  enum class Kind {
    kResponse,  // `json` is the response to send
    kNone,      // a notification or a client's response: nothing to send (HTTP 202)
    kCancelled  // the request was cancelled: nothing more may be sent for it
  };
  Kind kind = Kind::kResponse;
  std::string json;
  // HTTP status for the response: 200; 400 for a parse error, an invalid request or an
  // unsupported version; 404 for an unknown method in the modern era (streamable-http.mdx).
  int http_status = 200;
};

// A JSON-RPC error response (`id_json` "null" when the id is unknown); `data_json` (an object's
// JSON text) is added as `data` when not empty.
std::string McpErrorJson(const std::string& id_json, int code, const std::string& message,
                         const std::string& data_json = "");

// Parses and checks one message (a stdio line, an HTTP body): a JSON object with jsonrpc "2.0",
// a string method (or result/error: a client response), an id that is a string or an integer.
// A batch (array) is refused: 2025-06-18 removed batching and no later revision has it.
std::variant<McpMessage, McpReply> ParseMcpMessage(std::string_view text);

class McpServer {
 public:
  // Sends one notification for the request being handled (progress); false once the client is
  // gone. Called from the handling thread only.
  using Notify = std::function<bool(const std::string& json)>;

  McpServer(Runtime& runtime, std::string transport);  // transport: "stdio" | "http"

  // The mcp.* settings of the config as it is now.
  config::McpSettings Settings() const { return runtime_.McpSettings(); }

  // Handles one message for `who`. A request's response comes back as the reply; notifications
  // about it go to `notify` (may be empty: none are sent) before it. `cancel` (the transport's:
  // a closed stream, stdin's end) cancels it, and on stdio so does notifications/cancelled
  // naming it (over HTTP only the closed stream does). Thread-safe: requests are handled
  // concurrently.
  McpReply Handle(const McpMessage& message, const Principal& who, const Notify& notify,
                  const CancelToken* cancel);

 private:
  struct InFlight;
  McpReply Dispatch(const McpMessage& m, const Principal& who, const Notify& notify,
                    InFlight& flight);
  McpReply CallTool(const McpMessage& m, const Principal& who, const Notify& notify,
                    InFlight& flight);
  // The exec tool's structured result; *cancelled: the caller cancelled (nothing to send).
  std::string ExecResult(const rapidjson::Value* args, const Principal& who,
                         const config::McpSettings& settings, const Notify& notify,
                         const McpMessage& m, InFlight& flight, bool* cancelled, bool* is_error);
  // notifications/cancelled: the request it names, if in flight for the same caller.
  void CancelRequest(const Principal& who, const std::string& id_json);

  Runtime& runtime_;
  const std::string transport_;
  std::mutex mu_;
  std::multimap<std::string, InFlight*> in_flight_;  // guarded by mu_; key: caller + id
};

}  // namespace sandrun::api

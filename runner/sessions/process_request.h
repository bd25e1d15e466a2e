// The `process` tool call: parameters (OpenClaw's schema, declared in runner/wire/tool_schemas.h),
// refusals, and the exec tool's `running` result.
//
// Pattern of use:
//   auto parsed = ParseProcessRequest(doc);   // doc = {"tool":"process","action":"poll",...}
//   if (!parsed) return RenderToolError(parsed.error());   // the front end renders it; exit 2
//   ProcessResult r = manager.Process(*parsed, scope);
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::sessions {

class Session;

struct ProcessRequest {
  std::string action;  // list poll log write send-keys submit paste kill clear remove
  std::optional<std::string> session_id;
  std::optional<std::string> data;  // write
  bool eof = false;                 // write: close stdin afterwards
  std::vector<std::string> keys;    // send-keys
  std::vector<std::string> hex;     // send-keys
  std::optional<std::string> literal;
  std::optional<std::string> text;    // paste
  std::optional<bool> bracketed;      // paste (default true)
  std::optional<int64_t> offset;      // log
  std::optional<int64_t> limit;       // log
  std::optional<int64_t> timeout_ms;  // poll: wait up to this long (clamped to [0, 120000])
};

// The result of Process(): one JSON object, either a tool result
// {"content":[{"type":"text","text":...}],"details":{...}} or a refusal {"error":{...}}.
struct ProcessResult {
  std::string json;            // the tool result (empty when refused)
  bool refused = false;        // nothing happened: `error` says why (CLI exit 2)
  std::optional<Error> error;  // rendered by the front end (RenderToolError)
};

// Reads a process tool call object (the "tool" member is ignored, unknown members too; null
// means "not given"). Wrong types are refusals (Error::Refusal, wire code invalid-request)
// naming the parameter, checked against the process tool's spec (runner/wire/tool_schemas.h):
// nothing happened, the CLI exits 2.
Result<ProcessRequest> ParseProcessRequest(const rapidjson::Value& call);
// The same from JSON text (invalid-json when it does not parse).
Result<ProcessRequest> ParseProcessRequest(std::string_view json);

// The exec tool's `running` result for a backgrounded session: text
// "Command still running (session <id>, pid <pid|n/a>). Use process (list/poll/log/write/kill/
// clear/remove) for follow-up." (warnings first, then a blank line), details {status:"running",
// sessionId, pid?, startedAt, cwd?, tail?, host}.
std::string RenderRunning(const Session& session, const std::vector<std::string>& warnings);

}  // namespace sandrun::sessions

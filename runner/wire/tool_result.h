// The wire forms every tool shares (SPEC §2.1), rendered only at the edge: the tool result and
// the error object a refusal becomes.
//
// Pattern of use:
//   BeginToolResult(w, text);   // {"content":[{"type":"text","text":<text>}],"details":{
//   w.Key("status"); ...        // the tool's own details
//   EndToolResult(w);           // }}
//   RenderToolError(e.WireCode(), e.message)   // {"error":{"code","message"}}
#pragma once

#include <string>
#include <string_view>

#include "sandbox/base/json.h"
#include "sandbox/base/result.h"

namespace sandrun {

void BeginToolResult(JsonWriter& w, std::string_view text);
void EndToolResult(JsonWriter& w);

// A refusal: {"error":{"code":<code>,"message":<message>}}.
std::string RenderToolError(std::string_view code, std::string_view message);
// The same for an Error: its wire code and message (context included).
std::string RenderToolError(const Error& error);

}  // namespace sandrun

// The one definition of each tool's parameters and structured result (issue 16): the HTTP API and
// the CLI validate tool calls against it (ParseToolCall, ParseProcessRequest), and the MCP front
// end publishes it as each tool's inputSchema and outputSchema. No second copy of a schema exists
// anywhere: a parameter added here is both accepted and advertised.
//
// The checks here are the type checks every front end shares; what a value means (a command's
// size, a memory size's syntax, an action's name) stays with the parser that reads it.
//
// Pattern of use:
//   const wire::ToolSpec* spec = wire::FindToolSpec("exec");
//   SANDRUN_RETURN_IF_ERROR(wire::CheckToolParams(*spec, obj));  // invalid-request refusals
//   std::string schema = wire::InputSchemaJson(*spec);           // MCP tools/list
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::wire {

enum class ParamType {
  kString,
  kNumber,   // any JSON number
  kInteger,  // a whole number (JSON Schema "integer")
  kBoolean,
  kStringMap,        // an object whose values are strings (exec env)
  kStringArray,      // an array of strings (process keys, hex)
  kStringOrInteger,  // exec memory: "512m" or a byte count
};

struct ParamSpec {
  std::string_view name{};
  ParamType type = ParamType::kString;
  std::string_view description{};
  // The refusal's "must be ..." text when it is not the type's own ("a number of seconds");
  // empty: from the type ("a string", "a number", "a whole number", "a boolean", "an object of
  // strings", "an array of strings").
  std::string_view want{};
  std::vector<std::string_view> enum_values{};  // advertised; checked by the parser that reads it
  std::optional<double> minimum{};              // advertised bounds (JSON Schema minimum/maximum)
  std::optional<double> maximum{};
  bool required = false;
};

struct ToolSpec {
  std::string_view name{};  // the tool-call's "tool" and the MCP tool name: [A-Za-z0-9_.-]{1,128}
  std::string_view title{};
  std::string_view description{};
  std::vector<ParamSpec> params{};
  // The JSON Schema (2020-12) of the tool's structured result (MCP outputSchema): an object.
  std::string_view output_schema_json{};
  // MCP tool annotations.
  bool read_only = false;
  bool destructive = true;
  bool idempotent = false;
  bool open_world = false;
};

// exec, process, apply_patch, policy_check, in that (deterministic) order.
const std::vector<ToolSpec>& ToolSpecs();
// nullptr for an unknown name.
const ToolSpec* FindToolSpec(std::string_view name);
// The parameter `name` of `spec`, nullptr when the spec has none. A parser reads only the members
// the spec declares (after CheckToolParams, whose type checks its reads rely on): what it reads
// is what is advertised.
const ParamSpec* FindParam(const ToolSpec& spec, std::string_view name);

// Type-checks `call` (a JSON object; anything else is refused) against the spec: a parameter that
// is present and not null must have its type; a required one must be present and not null.
// Members the spec does not name are ignored (OpenClaw's schemas do the same), "tool" too.
// Refusal (Error::Refusal, wire code invalid-request):
//   <tool> parameter "<name>" must be <want>, got <json type>
//   <tool> parameter "<name>" is required
// (a required parameter's own message when the parser has a better one is the parser's: it may
// check presence first).
Status CheckToolParams(const ToolSpec& spec, const rapidjson::Value& call);

// {"type":"object","properties":{...},"required":[...]} with each parameter's type, description,
// enum and bounds: the MCP inputSchema. Deterministic (the spec's order).
std::string InputSchemaJson(const ToolSpec& spec);

}  // namespace sandrun::wire

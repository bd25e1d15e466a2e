// JSON helpers over RapidJSON: parsing with line/column errors, compact serialisation, and
// typed accessors that never throw or assert on missing or mistyped members.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body));
//   std::string id = JsonString(doc, "Id");
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun {

// How deep objects and arrays may nest in any JSON sandrun reads: tool calls, server bodies,
// config and approvals files, session files, profiles and Docker Engine replies all stay far
// below it.
inline constexpr size_t kMaxJsonDepth = 64;

struct JsonParseOptions {
  bool allow_comments_and_trailing_commas = false;  // config files allow both
  std::string source_name;                          // named in errors, e.g. a file path
  size_t max_depth = kMaxJsonDepth;                 // deeper nesting is an error
  bool validate_utf8 = false;  // strings must be valid UTF-8 (an error names where one is not)
};

// Parses `text`; errors say "<source>:<line>:<column>: <reason>". Parsing is iterative (no
// recursion on the call stack, whatever the input) and stops at the first object or array that
// opens a level deeper than `options.max_depth` ("<source>:L:C: objects and arrays nested deeper
// than 64 levels", L:C naming that bracket), so the document handed back is at most that deep and
// recursive consumers (ToJson, CopyFrom, ...) are safe on it.
Result<rapidjson::Document> ParseJson(std::string_view text, const JsonParseOptions& options = {});

// Compact serialisation.
std::string ToJson(const rapidjson::Value& value);

// Typed accessors: the fallback when `obj` is not an object, the member is missing or it has
// another type.
const rapidjson::Value* JsonMember(const rapidjson::Value& obj, const char* key);
std::string JsonString(const rapidjson::Value& obj, const char* key, std::string fallback = "");
int64_t JsonInt(const rapidjson::Value& obj, const char* key, int64_t fallback = 0);
bool JsonBool(const rapidjson::Value& obj, const char* key, bool fallback = false);
std::vector<std::string> JsonStringArray(const rapidjson::Value& obj, const char* key);
std::map<std::string, std::string> JsonStringMap(const rapidjson::Value& obj, const char* key);

// The JSON type of `v` as refusals name it: null, boolean, number, string, array or object.
const char* JsonTypeName(const rapidjson::Value& v);

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// A string value from any bytes (embedded NULs kept).
void WriteJsonString(JsonWriter& w, std::string_view s);
// A member `key`: `value` of the object being written.
void WriteJsonField(JsonWriter& w, const char* key, std::string_view value);

}  // namespace sandrun

#include "runner/wire/tool_result.h"

namespace sandrun {

void BeginToolResult(JsonWriter& w, std::string_view text) {
  w.StartObject();
  w.Key("content");
  w.StartArray();
  w.StartObject();
  w.Key("type");
  w.String("text");
  w.Key("text");
  WriteJsonString(w, text);
  w.EndObject();
  w.EndArray();
  w.Key("details");
  w.StartObject();
}

void EndToolResult(JsonWriter& w) {
  w.EndObject();
  w.EndObject();
}

std::string RenderToolError(std::string_view code, std::string_view message) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("error");
  w.StartObject();
  w.Key("code");
  WriteJsonString(w, code);
  w.Key("message");
  WriteJsonString(w, message);
  w.EndObject();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string RenderToolError(const Error& error) {
  return RenderToolError(error.WireCode(), error.ToString());
}

}  // namespace sandrun

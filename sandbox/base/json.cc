#include "sandbox/base/json.h"

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace sandrun {

Result<rapidjson::Document> ParseJson(std::string_view text, const JsonParseOptions& options) {
  rapidjson::Document doc;
  // Without kParseStopWhenDoneFlag RapidJSON rejects anything after the root value.
  if (options.allow_comments_and_trailing_commas) {
    doc.Parse<rapidjson::kParseCommentsFlag | rapidjson::kParseTrailingCommasFlag>(text.data(),
                                                                                   text.size());
  } else {
    doc.Parse(text.data(), text.size());
  }
  if (!doc.HasParseError()) return doc;

  size_t line = 1, column = 1;
  for (size_t i = 0; i < doc.GetErrorOffset() && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  std::string where = options.source_name.empty() ? "JSON" : options.source_name;
  return Error(ErrorCode::kInvalidArgument, where + ":" + std::to_string(line) + ":" +
                                                std::to_string(column) + ": " +
                                                rapidjson::GetParseError_En(doc.GetParseError()));
}

std::string ToJson(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

const rapidjson::Value* JsonMember(const rapidjson::Value& obj, const char* key) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(key);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

std::string JsonString(const rapidjson::Value& obj, const char* key, std::string fallback) {
  const rapidjson::Value* v = JsonMember(obj, key);
  return (v && v->IsString()) ? std::string(v->GetString(), v->GetStringLength()) : fallback;
}

int64_t JsonInt(const rapidjson::Value& obj, const char* key, int64_t fallback) {
  const rapidjson::Value* v = JsonMember(obj, key);
  return (v && v->IsInt64()) ? v->GetInt64() : fallback;
}

bool JsonBool(const rapidjson::Value& obj, const char* key, bool fallback) {
  const rapidjson::Value* v = JsonMember(obj, key);
  return (v && v->IsBool()) ? v->GetBool() : fallback;
}

std::vector<std::string> JsonStringArray(const rapidjson::Value& obj, const char* key) {
  std::vector<std::string> out;
  const rapidjson::Value* v = JsonMember(obj, key);
  if (!v || !v->IsArray()) return out;
  for (const auto& item : v->GetArray()) {
    if (item.IsString()) out.emplace_back(item.GetString(), item.GetStringLength());
  }
  return out;
}

std::map<std::string, std::string> JsonStringMap(const rapidjson::Value& obj, const char* key) {
  std::map<std::string, std::string> out;
  const rapidjson::Value* v = JsonMember(obj, key);
  if (!v || !v->IsObject()) return out;
  for (const auto& m : v->GetObject()) {
    if (m.value.IsString()) {
      out.emplace(std::string(m.name.GetString(), m.name.GetStringLength()),
                  std::string(m.value.GetString(), m.value.GetStringLength()));
    }
  }
  return out;
}

void WriteJsonString(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

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

}  // namespace sandrun

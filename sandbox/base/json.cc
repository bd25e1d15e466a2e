#include "sandbox/base/json.h"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "sandbox/base/strings.h"

namespace sandrun {

namespace {

// Forwards SAX events to the document being built and stops the parse at the first object or
// array that opens a level deeper than `max_depth`.
class DepthLimitedHandler {
 public:
  DepthLimitedHandler(rapidjson::Document& doc, size_t max_depth)
      : doc_(doc), max_depth_(max_depth) {}

  bool Null() { return doc_.Null(); }
  bool Bool(bool b) { return doc_.Bool(b); }
  bool Int(int i) { return doc_.Int(i); }
  bool Uint(unsigned u) { return doc_.Uint(u); }
  bool Int64(int64_t i) { return doc_.Int64(i); }
  bool Uint64(uint64_t u) { return doc_.Uint64(u); }
  bool Double(double d) { return doc_.Double(d); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool copy) {
    return doc_.RawNumber(s, n, copy);
  }
  bool String(const char* s, rapidjson::SizeType n, bool copy) { return doc_.String(s, n, copy); }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) { return doc_.Key(s, n, copy); }
  bool StartObject() { return Open() && doc_.StartObject(); }
  bool StartArray() { return Open() && doc_.StartArray(); }
  bool EndObject(rapidjson::SizeType members) {
    --depth_;
    return doc_.EndObject(members);
  }
  bool EndArray(rapidjson::SizeType elements) {
    --depth_;
    return doc_.EndArray(elements);
  }

  bool too_deep() const { return too_deep_; }

 private:
  bool Open() {
    if (++depth_ <= max_depth_) return true;
    too_deep_ = true;
    return false;
  }

  rapidjson::Document& doc_;
  size_t max_depth_;
  size_t depth_ = 0;
  bool too_deep_ = false;
};

// Whether every string and member name in `v` is valid UTF-8 (depth is bounded by the parser).
bool AllUtf8(const rapidjson::Value& v) {
  if (v.IsString()) return IsValidUtf8(std::string_view(v.GetString(), v.GetStringLength()));
  if (v.IsArray()) {
    for (const auto& item : v.GetArray()) {
      if (!AllUtf8(item)) return false;
    }
  }
  if (v.IsObject()) {
    for (const auto& m : v.GetObject()) {
      if (!AllUtf8(m.name) || !AllUtf8(m.value)) return false;
    }
  }
  return true;
}

constexpr unsigned kStrictFlags = rapidjson::kParseIterativeFlag;
constexpr unsigned kRelaxedFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseCommentsFlag |
                                   rapidjson::kParseTrailingCommasFlag;

}  // namespace

Result<rapidjson::Document> ParseJson(std::string_view text, const JsonParseOptions& options) {
  rapidjson::Document doc;
  rapidjson::ParseResult result;
  bool too_deep = false;
  // Without kParseStopWhenDoneFlag RapidJSON rejects anything after the root value.
  auto generate = [&](rapidjson::Document& target) {
    DepthLimitedHandler handler(target, options.max_depth);
    rapidjson::MemoryStream stream(text.data(), text.size());
    rapidjson::Reader reader;
    constexpr unsigned kUtf8 = rapidjson::kParseValidateEncodingFlag;
    result = options.allow_comments_and_trailing_commas
                 ? (options.validate_utf8 ? reader.Parse<kRelaxedFlags | kUtf8>(stream, handler)
                                          : reader.Parse<kRelaxedFlags>(stream, handler))
                 : (options.validate_utf8 ? reader.Parse<kStrictFlags | kUtf8>(stream, handler)
                                          : reader.Parse<kStrictFlags>(stream, handler));
    too_deep = handler.too_deep();
    return !result.IsError();
  };
  doc.Populate(generate);
  if (!result.IsError()) {
    // RapidJSON checks the raw bytes only: a \u escape of a lone surrogate still decodes to
    // bytes that are no UTF-8. Every string and member name is checked once more.
    if (options.validate_utf8 && !AllUtf8(doc)) {
      return Error(ErrorCode::kInvalidArgument,
                   (options.source_name.empty() ? "JSON" : options.source_name) +
                       ": a string is not valid UTF-8 (an escaped lone surrogate?)");
    }
    return doc;
  }

  // A refused bracket is reported where it stands: the parser stops before taking it.
  size_t offset = result.Offset();
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  std::string where = options.source_name.empty() ? "JSON" : options.source_name;
  std::string reason = too_deep ? "objects and arrays nested deeper than " +
                                      std::to_string(options.max_depth) + " levels"
                                : rapidjson::GetParseError_En(result.Code());
  return Error(ErrorCode::kInvalidArgument,
               where + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + reason);
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

const char* JsonTypeName(const rapidjson::Value& v) {
  if (v.IsNull()) return "null";
  if (v.IsBool()) return "boolean";
  if (v.IsNumber()) return "number";
  if (v.IsString()) return "string";
  if (v.IsArray()) return "array";
  return "object";
}

void WriteJsonString(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void WriteJsonField(JsonWriter& w, const char* key, std::string_view value) {
  w.Key(key);
  WriteJsonString(w, value);
}

}  // namespace sandrun

#include "runner/config/json_lines.h"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "sandbox/base/json.h"

namespace sandrun::config {
namespace {

// Iterative: no recursion on the call stack however deep the text nests.
constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseCommentsFlag |
                                 rapidjson::kParseTrailingCommasFlag;

bool IsPlainKey(std::string_view key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '$';
  });
}

std::string QuoteKey(std::string_view key) {
  std::string out = "\"";
  for (char c : key) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x",
                    static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

// Skips a comment starting at `pos` (text[pos] == '/'); returns `pos` if there is none.
size_t SkipComment(std::string_view text, size_t pos) {
  if (pos + 1 >= text.size() || text[pos] != '/') return pos;
  if (text[pos + 1] == '/') {
    size_t end = text.find('\n', pos + 2);
    return end == std::string_view::npos ? text.size() : end + 1;
  }
  if (text[pos + 1] == '*') {
    size_t end = text.find("*/", pos + 2);
    return end == std::string_view::npos ? text.size() : end + 2;
  }
  return pos;
}

}  // namespace

std::string JoinKey(const std::string& parent, std::string_view key) {
  if (IsPlainKey(key)) {
    return parent.empty() ? std::string(key) : parent + "." + std::string(key);
  }
  return parent + "[" + QuoteKey(key) + "]";
}

std::string JoinIndex(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

size_t SkipJsonTrivia(std::string_view text, size_t pos, bool punctuation) {
  while (pos < text.size()) {
    char c = text[pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
        (punctuation && (c == ',' || c == ':' || c == '}' || c == ']'))) {
      ++pos;
      continue;
    }
    size_t after = SkipComment(text, pos);
    if (after == pos) break;
    pos = after;
  }
  return pos;
}

namespace {

// The SAX handler: keeps a stack of open containers and, for every value, records where it
// starts. Handler calls for scalars and keys come after the token is consumed (for brackets,
// just before: the iterative parser takes the bracket after the call), so the start of a value
// is found by skipping trivia from the end of the previous token.
class PositionRecorder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, PositionRecorder> {
 public:
  PositionRecorder(std::string_view text, const rapidjson::MemoryStream& stream,
                   std::unordered_map<std::string, JsonLines::Position>* positions,
                   size_t max_depth)
      : text_(text), stream_(stream), positions_(positions), max_depth_(max_depth) {}

  bool Null() { return Scalar(); }
  bool Bool(bool) { return Scalar(); }
  bool Int(int) { return Scalar(); }
  bool Uint(unsigned) { return Scalar(); }
  bool Int64(int64_t) { return Scalar(); }
  bool Uint64(uint64_t) { return Scalar(); }
  bool Double(double) { return Scalar(); }
  bool RawNumber(const char*, rapidjson::SizeType, bool) { return Scalar(); }
  bool String(const char*, rapidjson::SizeType, bool) { return Scalar(); }

  bool StartObject() { return Open(false); }
  bool StartArray() { return Open(true); }
  bool EndObject(rapidjson::SizeType) { return Close(); }
  bool EndArray(rapidjson::SizeType) { return Close(); }

  bool Key(const char* str, rapidjson::SizeType length, bool) {
    size_t start = SkipJsonTrivia(text_, last_end_);
    last_end_ = stream_.Tell();
    Frame& frame = frames_.back();
    frame.key_path = JoinKey(frame.path, std::string_view(str, length));
    frame.key_offset = start;
    return true;
  }

  // The offset of the bracket that opened a level too deep and stopped the parse, or npos.
  size_t too_deep_offset() const { return too_deep_offset_; }
  // Set when a duplicate key stopped the parse.
  const std::string& duplicate() const { return duplicate_; }
  size_t duplicate_offset() const { return duplicate_offset_; }
  size_t first_offset() const { return first_offset_; }

 private:
  struct Frame {
    std::string path;
    bool is_array = false;
    size_t next_index = 0;
    std::string key_path;  // objects: the key just read
    size_t key_offset = 0;
  };

  // Records the value that starts now; returns false (stopping the parse) on a duplicate key.
  bool Record(std::string* path) {
    size_t start = SkipJsonTrivia(text_, last_end_);
    JsonLines::Position pos{start, start};
    if (!frames_.empty()) {
      Frame& frame = frames_.back();
      if (frame.is_array) {
        *path = JoinIndex(frame.path, frame.next_index++);
      } else {
        *path = frame.key_path;
        pos.key_offset = frame.key_offset;
      }
    }
    auto [it, inserted] = positions_->emplace(*path, pos);
    if (!inserted) {
      duplicate_ = *path;
      duplicate_offset_ = pos.key_offset;
      first_offset_ = it->second.key_offset;
      return false;
    }
    return true;
  }

  bool Scalar() {
    std::string path;
    if (!Record(&path)) return false;
    last_end_ = stream_.Tell();
    return true;
  }

  bool Open(bool is_array) {
    if (frames_.size() >= max_depth_) {
      too_deep_offset_ = stream_.Tell();
      return false;
    }
    std::string path;
    if (!Record(&path)) return false;
    last_end_ = stream_.Tell() + 1;  // the iterative parser calls before taking the bracket
    frames_.push_back(Frame{std::move(path), is_array, 0, {}, 0});
    return true;
  }

  bool Close() {
    frames_.pop_back();
    last_end_ = stream_.Tell() + 1;  // likewise
    return true;
  }

  std::string_view text_;
  const rapidjson::MemoryStream& stream_;
  std::unordered_map<std::string, JsonLines::Position>* positions_;
  size_t max_depth_;
  std::vector<Frame> frames_;
  size_t last_end_ = 0;
  size_t too_deep_offset_ = std::string_view::npos;
  std::string duplicate_;
  size_t duplicate_offset_ = 0;
  size_t first_offset_ = 0;
};

}  // namespace

Result<JsonLines> JsonLines::Build(std::string_view text, const std::string& source_name,
                                   size_t max_depth) {
  JsonLines lines;
  lines.source_name_ = source_name;
  lines.line_starts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') lines.line_starts_.push_back(i + 1);
  }

  rapidjson::MemoryStream stream(text.data(), text.size());
  PositionRecorder recorder(text, stream, &lines.positions_, max_depth);
  rapidjson::Reader reader;
  rapidjson::ParseResult ok = reader.Parse<kParseFlags>(stream, recorder);
  if (!recorder.duplicate().empty()) {
    auto [line, column] = lines.LineColumn(recorder.duplicate_offset());
    return Error(ErrorCode::kInvalidArgument,
                 source_name + ":" + std::to_string(line) + ":" + std::to_string(column) +
                     ": duplicate key " + recorder.duplicate() + " (first at line " +
                     std::to_string(lines.LineColumn(recorder.first_offset()).first) + ")");
  }
  if (size_t deep = recorder.too_deep_offset(); deep != std::string_view::npos) {
    auto [line, column] = lines.LineColumn(deep);
    return Error(ErrorCode::kInvalidArgument, source_name + ":" + std::to_string(line) + ":" +
                                                  std::to_string(column) +
                                                  ": objects and arrays nested deeper than " +
                                                  std::to_string(max_depth) + " levels");
  }
  if (!ok) {
    auto [line, column] = lines.LineColumn(ok.Offset());
    return Error(ErrorCode::kInvalidArgument, source_name + ":" + std::to_string(line) + ":" +
                                                  std::to_string(column) + ": " +
                                                  rapidjson::GetParseError_En(ok.Code()));
  }
  return lines;
}

std::pair<size_t, size_t> JsonLines::LineColumn(size_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t line = static_cast<size_t>(it - line_starts_.begin());  // >= 1: line_starts_[0] == 0
  return {line, offset - line_starts_[line - 1] + 1};
}

std::string JsonLines::Where(const std::string& path, bool at_key) const {
  auto it = positions_.find(path);
  if (it == positions_.end()) return source_name_;
  auto [line, column] = LineColumn(at_key ? it->second.key_offset : it->second.value_offset);
  return source_name_ + ":" + std::to_string(line) + ":" + std::to_string(column);
}

size_t JsonLines::Line(const std::string& path) const {
  auto it = positions_.find(path);
  return it == positions_.end() ? 0 : LineColumn(it->second.value_offset).first;
}

Result<std::optional<JsonFile>> ParseJsonFile(std::string_view text, const std::string& source_name,
                                              size_t max_depth) {
  std::string_view body = text;
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);  // a UTF-8 byte order mark
  if (SkipJsonTrivia(body, 0, false) == body.size()) return std::optional<JsonFile>();
  JsonParseOptions options;
  options.allow_comments_and_trailing_commas = true;
  options.source_name = source_name;
  options.max_depth = max_depth;
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body, options));
  SANDRUN_ASSIGN_OR_RETURN(JsonLines lines, JsonLines::Build(body, source_name, max_depth));
  return std::optional<JsonFile>(JsonFile{std::move(doc), std::move(lines)});
}

std::string VersionedFileText(const std::function<void(PrettyJsonWriter&)>& members) {
  rapidjson::StringBuffer buffer;
  PrettyJsonWriter w(buffer);
  w.SetIndent(' ', 2);
  w.StartObject();
  w.Key("version");
  w.Int(1);
  members(w);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

void WritePrettyString(PrettyJsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

}  // namespace sandrun::config

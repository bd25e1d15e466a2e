// Source positions for a JSON document: RapidJSON's DOM has none, so a SAX pass over the same
// text records where every value (and every object key) starts, by its path.
//
// Paths name values the way config keys are written: object keys joined with '.', array
// elements as "[i]", and keys that are not plain names (letters, digits, '_', '-', '$') quoted:
// "tools.exec.timeoutSeconds", "sandbox.docker.binds[2]", "sandbox.docker.env[\"A.B\"]".
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(JsonLines lines, JsonLines::Build(text, "config.json"));
//   std::string where = lines.Where("tools.exec.host");  // "config.json:3:15"
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sandbox/base/json.h"
#include "sandbox/base/result.h"

namespace sandrun::config {

// The path of member `key` of the object at `parent` ("" is the root).
std::string JoinKey(const std::string& parent, std::string_view key);
// The path of element `index` of the array at `parent`.
std::string JoinIndex(const std::string& parent, size_t index);

// Offset of the first character at or after `pos` that is not whitespace or a comment, nor (with
// `punctuation`) one of ',', ':', '}', ']': with it, where the next key or value starts.
size_t SkipJsonTrivia(std::string_view text, size_t pos, bool punctuation = true);

class JsonLines {
 public:
  // Indexes `text`, parsed iteratively with comments and trailing commas allowed. Fails on syntax
  // errors, on nesting deeper than `max_depth` (as ParseJson does) and on duplicate object keys
  // ("<source>:L:C: duplicate key a.b (first at line N)"): a document that says two things about
  // one key is ambiguous.
  static Result<JsonLines> Build(std::string_view text, const std::string& source_name,
                                 size_t max_depth = kMaxJsonDepth);

  // "<source>:<line>:<column>" of the value at `path` (or of its key when `at_key` and the value
  // is an object member); "<source>" alone for a path that is not in the document.
  std::string Where(const std::string& path, bool at_key = false) const;

  // 1-based line of the value at `path`, 0 if unknown.
  size_t Line(const std::string& path) const;

  const std::string& source_name() const { return source_name_; }

  // Byte offsets of a value and of its key (the value's own offset for array elements and the
  // root).
  struct Position {
    size_t key_offset = 0;
    size_t value_offset = 0;
  };

 private:
  // 1-based (line, column) of a byte offset; the column counts bytes, as ParseJson does.
  std::pair<size_t, size_t> LineColumn(size_t offset) const;

  std::string source_name_;
  std::vector<size_t> line_starts_;
  std::unordered_map<std::string, Position> positions_;
};

// One of sandrun's JSON files (config.json, exec-approvals.json) read the same way: a byte order
// mark skipped, comments and trailing commas allowed, nesting limited to `max_depth`, duplicate
// keys refused, every error "<source>:L:C: reason". nullopt for a text with nothing but
// whitespace and comments. `lines` refers to `text`, which must outlive it.
struct JsonFile {
  rapidjson::Document doc;
  JsonLines lines;
};
Result<std::optional<JsonFile>> ParseJsonFile(std::string_view text, const std::string& source_name,
                                              size_t max_depth = kMaxJsonDepth);

// The text of one of sandrun's own versioned state files: {"version": 1, <members>} indented by
// two spaces, ending in a newline. `members` writes the rest of the top-level object.
using PrettyJsonWriter = rapidjson::PrettyWriter<rapidjson::StringBuffer>;
std::string VersionedFileText(const std::function<void(PrettyJsonWriter&)>& members);
// A string value from any bytes.
void WritePrettyString(PrettyJsonWriter& w, std::string_view s);

}  // namespace sandrun::config

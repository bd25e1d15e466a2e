// The typed reader under the config loader (config.cc): walks a RapidJSON DOM with the positions
// from JsonLines, so every error names the file, the line, the column and the key path:
// "FILE:L:C: tools.exec.timeoutSeconds: expected a non-negative integer, got \"abc\"".
// Internal to runner/config: the loader derives from ConfigReader and lists its sections as
// Fields; nothing outside this folder includes this header.
#pragma once

#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runner/config/config.h"
#include "runner/config/json_lines.h"
#include "runner/config/settings.h"
#include "sandbox/base/json.h"
#include "sandbox/base/result.h"
#include "sandbox/base/strings.h"

namespace sandrun::config::internal {

using rapidjson::Value;

// Integers are bounded by JavaScript's Number.MAX_SAFE_INTEGER, as in OpenClaw; seconds times
// 1000 still fit in an int64_t.
inline constexpr int64_t kMaxInteger = (int64_t{1} << 53) - 1;

template <typename E>
constexpr int kEnumCount = 0;
template <>
constexpr int kEnumCount<SandboxMode> = 3;
template <>
constexpr int kEnumCount<SandboxScope> = 3;
template <>
constexpr int kEnumCount<WorkspaceAccess> = 3;
template <>
constexpr int kEnumCount<Security> = 3;
template <>
constexpr int kEnumCount<Ask> = 3;
template <>
constexpr int kEnumCount<ExecMode> = 5;

inline std::string JoinNames(const std::vector<const char*>& names) {
  std::string out;
  for (const char* name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// A value as quoted in errors: scalars as JSON (shortened), containers by kind.
inline std::string Describe(const Value& v) {
  if (v.IsObject()) return "an object";
  if (v.IsArray()) return "an array";
  std::string text = ToJson(v);
  if (text.size() > 64) text = text.substr(0, 60) + "...";
  return text;
}

// [a-z0-9-]+: names of files under profiles/, so they can never walk out of that directory.
inline bool IsProfileName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

// Docker's container name rule: [a-zA-Z0-9][a-zA-Z0-9_.-]*.
inline bool IsContainerPrefix(std::string_view prefix) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  return !prefix.empty() && alnum(prefix[0]) &&
         std::all_of(prefix.begin(), prefix.end(),
                     [&](char c) { return alnum(c) || c == '_' || c == '.' || c == '-'; });
}

Result<std::string> HomeDir();  // $HOME, else the passwd entry

// The integral value of a JSON number, saturated just outside [-kMaxInteger, kMaxInteger];
// nullopt for anything else (including fractions).
inline std::optional<int64_t> IntegralValue(const Value& v) {
  if (v.IsInt64()) return std::clamp(v.GetInt64(), -kMaxInteger - 1, kMaxInteger + 1);
  if (v.IsUint64()) return kMaxInteger + 1;
  if (!v.IsDouble()) return std::nullopt;
  double d = v.GetDouble();
  if (!std::isfinite(d) || d != std::floor(d)) return std::nullopt;
  if (d > static_cast<double>(kMaxInteger)) return kMaxInteger + 1;
  if (d < -static_cast<double>(kMaxInteger)) return -kMaxInteger - 1;
  return static_cast<int64_t>(d);
}

template <typename T>
Status Discard(Result<T> result) {
  if (!result) return std::move(result).error();
  return Ok();
}

// What a string must look like.
enum class Rule {
  kAny,
  kNonEmpty,             // not empty after trimming
  kTrimmed,              // not empty after trimming; stored trimmed
  kProfileName,          // [a-z0-9-]+
  kOptionalProfileName,  // [a-z0-9-]+ or ""
  kAbsolutePath,         // starts with '/'
  kUserPath,             // "", absolute, or "~" / "~/...": expanded with $HOME
  kTmpfs,                // an absolute path, optionally followed by ":options"
  kContainerPrefix,      // Docker's container name characters
};

inline const char* RuleText(Rule rule) {
  switch (rule) {
    case Rule::kAny:
      return "a string";
    case Rule::kNonEmpty:
    case Rule::kTrimmed:
      return "a non-empty string";
    case Rule::kProfileName:
    case Rule::kOptionalProfileName:
      return "a profile name of lowercase letters, digits and '-'";
    case Rule::kAbsolutePath:
      return "an absolute path";
    case Rule::kUserPath:
      return "an absolute path or one starting with ~/";
    case Rule::kTmpfs:
      return "an absolute path (optionally followed by :options)";
    case Rule::kContainerPrefix:
      return "a container name prefix ([a-zA-Z0-9][a-zA-Z0-9_.-]*)";
  }
  return "a string";
}

// Applies one member's value, found at `path`.
using Apply = std::function<Status(const Value& value, const std::string& path)>;
struct Field {
  const char* key;
  Apply apply;  // empty: accepted and ignored
};

// The readers and field makers every section of the loader uses. Settings are applied key by key
// over what is already in the output structs, which is how defaults, levels and agents stack up.
class ConfigReader {
 public:
  explicit ConfigReader(const JsonLines& lines) : lines_(lines) {}

  std::vector<std::string> TakeWarnings() { return std::move(warnings_); }

 protected:
  // "FILE:L:C: path: reason".
  Error Fail(const std::string& path, const std::string& reason, bool at_key = false) const {
    return Error(ErrorCode::kInvalidArgument,
                 lines_.Where(path, at_key) + ": " + path + ": " + reason);
  }
  Error Expected(const std::string& path, const std::string& what, const Value& v) const {
    return Fail(path, "expected " + what + ", got " + Describe(v));
  }
  void Warn(const std::string& path, const std::string& text, bool at_key = true) {
    warnings_.push_back(lines_.Where(path, at_key) + ": " + text);
  }

  // Applies the members of the object `v` (at `path`) through `fields`; unknown keys are warned
  // about and skipped.
  Status Members(const Value& v, const std::string& path, const std::vector<Field>& fields) {
    if (!v.IsObject()) return Expected(path, "an object", v);
    for (const auto& member : v.GetObject()) {
      std::string_view key(member.name.GetString(), member.name.GetStringLength());
      std::string child = JoinKey(path, key);
      auto field =
          std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return key == f.key; });
      if (field == fields.end()) {
        Warn(child, "unknown key " + child + " (ignored)");
        continue;
      }
      if (field->apply) SANDRUN_RETURN_IF_ERROR(field->apply(member.value, child));
    }
    return Ok();
  }

  // ---- Typed readers. ----

  Result<std::string> String(const Value& v, const std::string& path, Rule rule = Rule::kAny) {
    if (!v.IsString()) return Expected(path, RuleText(rule), v);
    std::string s(v.GetString(), v.GetStringLength());
    if (s.find('\0') != std::string::npos) return Fail(path, "contains a NUL byte");
    bool ok = true;
    switch (rule) {
      case Rule::kAny:
        break;
      case Rule::kNonEmpty:
        ok = !Trim(s).empty();
        break;
      case Rule::kTrimmed:
        s = Trim(s);
        ok = !s.empty();
        break;
      case Rule::kProfileName:
        ok = IsProfileName(s);
        break;
      case Rule::kOptionalProfileName:
        ok = s.empty() || IsProfileName(s);
        break;
      case Rule::kAbsolutePath:
        ok = !s.empty() && s[0] == '/';
        break;
      case Rule::kTmpfs:
        ok = !s.empty() && s[0] == '/';
        break;
      case Rule::kContainerPrefix:
        ok = IsContainerPrefix(s);
        break;
      case Rule::kUserPath:
        if (s == "~" || s.starts_with("~/")) {
          Result<std::string> home = HomeDir();
          if (!home) return Fail(path, home.error().message);
          std::string rest = s.substr(1);
          if (!home->empty() && home->back() == '/' && !rest.empty()) rest.erase(0, 1);
          s = *home + rest;
        } else {
          ok = s.empty() || s[0] == '/';
        }
        break;
    }
    if (!ok) return Expected(path, RuleText(rule), v);
    return s;
  }

  Result<bool> Bool(const Value& v, const std::string& path) {
    if (!v.IsBool()) return Expected(path, "true or false", v);
    return v.GetBool();
  }

  // An integer in [lo, hi]; out-of-range values are an error, or with `clamp` a warning and the
  // nearest bound.
  Result<int64_t> Integer(const Value& v, const std::string& path, int64_t lo, int64_t hi,
                          bool clamp) {
    std::string what;
    if (clamp) {
      what = "an integer";
    } else if (lo == 0 && hi == kMaxInteger) {
      what = "a non-negative integer";
    } else {
      what = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    }
    std::optional<int64_t> n = IntegralValue(v);
    if (!n) return Expected(path, what, v);
    if (*n >= lo && *n <= hi) return *n;
    if (!clamp) return Expected(path, what, v);
    int64_t bound = *n < lo ? lo : hi;
    Warn(path,
         path + ": " + Describe(v) + " is outside " + std::to_string(lo) + ".." +
             std::to_string(hi) + "; using " + std::to_string(bound),
         false);
    return bound;
  }

  Result<double> Number(const Value& v, const std::string& path, double lo) {
    if (!v.IsNumber() || !std::isfinite(v.GetDouble()) || v.GetDouble() < lo) {
      return Expected(path, lo == 0 ? "a non-negative number" : "a number", v);
    }
    return v.GetDouble();
  }

  Result<std::vector<std::string>> Strings(const Value& v, const std::string& path,
                                           Rule rule = Rule::kAny) {
    if (!v.IsArray()) return Expected(path, "an array of strings", v);
    std::vector<std::string> out;
    out.reserve(v.Size());
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      SANDRUN_ASSIGN_OR_RETURN(std::string s, String(v[i], JoinIndex(path, i), rule));
      out.push_back(std::move(s));
    }
    return out;
  }

  Result<size_t> OneOf(const Value& v, const std::string& path,
                       const std::vector<const char*>& names) {
    std::string what = "one of " + JoinNames(names);
    if (!v.IsString()) return Expected(path, what, v);
    std::string s = Lower(Trim(std::string_view(v.GetString(), v.GetStringLength())));
    for (size_t i = 0; i < names.size(); ++i) {
      if (s == names[i]) return i;
    }
    return Expected(path, what, v);
  }

  template <typename E>
  Result<E> Enum(const Value& v, const std::string& path) {
    std::vector<const char*> names;
    for (int i = 0; i < kEnumCount<E>; ++i) names.push_back(ToString(static_cast<E>(i)));
    SANDRUN_ASSIGN_OR_RETURN(size_t index, OneOf(v, path, names));
    return static_cast<E>(index);
  }

  // A byte count: a non-negative integer or a string such as "512m"; -1 with `allow_minus_one`.
  Result<int64_t> Bytes(const Value& v, const std::string& path, bool allow_minus_one) {
    std::string what = allow_minus_one
                           ? "a byte count (an integer, -1, or a string like \"512m\" or \"1.5g\")"
                           : "a byte count (an integer or a string like \"512m\" or \"1.5g\")";
    if (v.IsNumber()) {
      std::optional<int64_t> n = IntegralValue(v);
      if (!n || *n > kMaxInteger || (*n < 0 && !(allow_minus_one && *n == -1))) {
        return Expected(path, what, v);
      }
      return *n;
    }
    if (v.IsString()) {
      std::string s = Trim(std::string_view(v.GetString(), v.GetStringLength()));
      if (allow_minus_one && s == "-1") return int64_t{-1};
      Result<int64_t> bytes = ParseByteSize(s);
      if (bytes) return *bytes;
    }
    return Expected(path, what, v);
  }

  // ---- Field makers: a key and where its value goes. ----

  Field Str(const char* key, std::string* out, Rule rule = Rule::kAny) {
    return {key, [this, out, rule](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, String(v, p, rule));
              return Ok();
            }};
  }
  Field Flag(const char* key, bool* out) {
    return {key, [this, out](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Bool(v, p));
              return Ok();
            }};
  }
  Field Int(const char* key, int64_t* out, int64_t lo = 0, int64_t hi = kMaxInteger,
            bool clamp = false) {
    return {key, [this, out, lo, hi, clamp](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Integer(v, p, lo, hi, clamp));
              return Ok();
            }};
  }
  Field Clamped(const char* key, int64_t* out, int64_t lo, int64_t hi) {
    return Int(key, out, lo, hi, true);
  }
  Field Num(const char* key, double* out) {
    return {key, [this, out](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Number(v, p, 0));
              return Ok();
            }};
  }
  Field List(const char* key, std::vector<std::string>* out, Rule rule = Rule::kAny) {
    return {key, [this, out, rule](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Strings(v, p, rule));
              return Ok();
            }};
  }
  Field Name(const char* key, std::string* out, const std::vector<const char*>& names) {
    return {key, [this, out, &names](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(size_t index, OneOf(v, p, names));
              *out = names[index];
              return Ok();
            }};
  }
  template <typename E>
  Field Choice(const char* key, E* out) {
    return {key, [this, out](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Enum<E>(v, p));
              return Ok();
            }};
  }
  template <typename E>
  Field Choice(const char* key, std::optional<E>* out) {
    return {key, [this, out](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Enum<E>(v, p));
              return Ok();
            }};
  }
  Field Size(const char* key, int64_t* out, bool allow_minus_one) {
    return {key, [this, out, allow_minus_one](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Bytes(v, p, allow_minus_one));
              return Ok();
            }};
  }
  // Keys that later features read: type-checked now so a mistake is reported early.
  Field CheckBool(const char* key) {
    return {key, [this](const Value& v, const std::string& p) { return Discard(Bool(v, p)); }};
  }
  Field CheckStrings(const char* key) {
    return {key, [this](const Value& v, const std::string& p) { return Discard(Strings(v, p)); }};
  }
  Field CheckInt(const char* key) {
    return {key, [this](const Value& v, const std::string& p) {
              return Discard(Integer(v, p, 0, kMaxInteger, false));
            }};
  }
  Field CheckString(const char* key) {
    return {key, [this](const Value& v, const std::string& p) { return Discard(String(v, p)); }};
  }
  Field CheckObject(const char* key) {
    return {key, [this](const Value& v, const std::string& p) -> Status {
              if (!v.IsObject()) return Expected(p, "an object", v);
              return Ok();
            }};
  }

  // The top of a versioned state file: an object with "version": 1.
  Status ExpectVersion1(const Value& root) const {
    if (!root.IsObject()) return Expected("", "an object with \"version\": 1", root);
    const Value* version = JsonMember(root, "version");
    if (version == nullptr || !version->IsNumber() || version->GetDouble() != 1.0) {
      return Fail("version", "expected \"version\": 1 (the only known version)");
    }
    return Ok();
  }

  const JsonLines& lines_;
  std::vector<std::string> warnings_;
};

// A state file's text read by a ConfigReader-derived `ParserT` (its `Parse(doc)` gives a T): an
// empty text is T{}, the reader's warnings are appended to `warnings` (may be null).
template <typename ParserT, typename T>
Result<T> ParseWithReader(std::string_view text, const std::string& path,
                          std::vector<std::string>* warnings) {
  SANDRUN_ASSIGN_OR_RETURN(std::optional<JsonFile> json, ParseJsonFile(text, path));
  if (!json) return T{};
  ParserT parser(json->lines);
  Result<T> out = parser.Parse(json->doc);
  if (warnings != nullptr) {
    for (std::string& w : parser.TakeWarnings()) warnings->push_back(std::move(w));
  }
  return out;
}

}  // namespace sandrun::config::internal

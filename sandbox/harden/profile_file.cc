#include "sandbox/harden/profile_file.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "sandbox/base/json.h"
#include "sandbox/os/data_dir.h"
#include "sandbox/os/file.h"
#include "sandbox/os/trusted_file.h"

namespace sandrun::harden {
namespace {

constexpr size_t kMaxProfileBytes = 4u << 20;

// The first duplicated key below `v`, as a dotted path; "" when there is none. RapidJSON keeps
// both members of {"a":1,"a":2}, and which one a lookup finds is an accident.
std::string FindDuplicateKey(const rapidjson::Value& v, const std::string& where) {
  if (v.IsObject()) {
    std::set<std::string_view> seen;
    for (const auto& m : v.GetObject()) {
      std::string_view key(m.name.GetString(), m.name.GetStringLength());
      std::string path = SchemaChecker::Join(where, key);
      if (!seen.insert(key).second) return path;
      std::string inner = FindDuplicateKey(m.value, path);
      if (!inner.empty()) return inner;
    }
  } else if (v.IsArray()) {
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      std::string inner = FindDuplicateKey(v[i], SchemaChecker::Index(where, i));
      if (!inner.empty()) return inner;
    }
  }
  return "";
}

// JSON's type name with its article: "a string", "an array", "null".
std::string TypeName(const rapidjson::Value& v) {
  const std::string name = JsonTypeName(v);
  if (v.IsNull()) return name;
  return (v.IsArray() || v.IsObject() ? "an " : "a ") + name;
}

}  // namespace

std::string DefaultProfilesDir() { return FindDataDir(DataKind::kProfiles).path; }

bool IsProfileName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::string ProfilePath(const std::string& profiles_dir, std::string_view kind,
                        const std::string& name) {
  return profiles_dir + "/" + std::string(kind) + "/" + name + ".json";
}

Result<std::vector<std::string>> ListProfiles(const std::string& profiles_dir,
                                              std::string_view kind) {
  std::string dir = profiles_dir + "/" + std::string(kind);
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  if (ec) return Error(ErrorCode::kNotFound, dir + ": " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

Result<ProfileFile> ReadProfileFile(const std::string& profiles_dir, std::string_view kind,
                                    const std::string& name) {
  if (!IsProfileName(name)) {
    return Error(ErrorCode::kInvalidArgument, "invalid " + std::string(kind) + " profile name \"" +
                                                  name +
                                                  "\": expected lowercase letters, digits and '-'");
  }
  std::string path = ProfilePath(profiles_dir, kind, name);
  // A profile decides how every later command is confined: only its owner may change it.
  if (Status trusted = CheckTrustedFile(path, std::string(kind) + " profile");
      !trusted && trusted.error().code != ErrorCode::kNotFound) {
    return std::move(trusted).error();
  }
  auto text = ReadFile(path, kMaxProfileBytes);
  if (!text) return std::move(text).error().Wrap(std::string(kind) + " profile \"" + name + "\"");
  return ParseProfileText(*text, path, name);
}

Result<ProfileFile> ParseProfileText(std::string_view text, const std::string& path,
                                     const std::string& expected_name) {
  JsonParseOptions options;
  options.source_name = path;
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(text, options));
  SchemaChecker check(path);
  if (!doc.IsObject()) return check.Fail("", "expected a JSON object, got " + TypeName(doc));
  if (std::string dup = FindDuplicateKey(doc, ""); !dup.empty()) {
    return check.Fail(dup, "duplicate key");
  }
  ProfileFile file;
  file.path = path;
  SANDRUN_ASSIGN_OR_RETURN(file.name, check.String(doc, "", "name"));
  if (!expected_name.empty() && file.name != expected_name) {
    return check.Fail("name",
                      "\"" + file.name + "\" differs from the file name \"" + expected_name + "\"");
  }
  SANDRUN_ASSIGN_OR_RETURN(file.description, check.String(doc, "", "description"));
  file.doc = std::move(doc);
  return file;
}

Error SchemaChecker::Fail(std::string_view key, std::string_view reason) const {
  std::string msg = path_ + ": ";
  if (!key.empty()) msg += std::string(key) + ": ";
  msg += reason;
  return Error(ErrorCode::kInvalidArgument, std::move(msg));
}

std::string SchemaChecker::Join(std::string_view where, std::string_view key) {
  if (where.empty()) return std::string(key);
  return std::string(where) + "." + std::string(key);
}

std::string SchemaChecker::Index(std::string_view where, size_t i) {
  return std::string(where) + "[" + std::to_string(i) + "]";
}

Status SchemaChecker::IsObject(const rapidjson::Value& v, std::string_view where) const {
  if (!v.IsObject()) return Fail(where, "expected an object, got " + TypeName(v));
  return Ok();
}

Status SchemaChecker::Keys(const rapidjson::Value& obj, std::string_view where,
                           std::initializer_list<const char*> allowed) const {
  SANDRUN_RETURN_IF_ERROR(IsObject(obj, where));
  for (const auto& m : obj.GetObject()) {
    std::string_view key(m.name.GetString(), m.name.GetStringLength());
    bool known = std::any_of(allowed.begin(), allowed.end(),
                             [&](const char* k) { return key == std::string_view(k); });
    if (!known) {
      std::string list;
      for (const char* k : allowed) list += (list.empty() ? "" : ", ") + std::string(k);
      return Fail(Join(where, key), "unknown key (expected one of: " + list + ")");
    }
  }
  return Ok();
}

const rapidjson::Value* SchemaChecker::Optional(const rapidjson::Value& obj,
                                                const char* key) const {
  return JsonMember(obj, key);
}

Result<const rapidjson::Value*> SchemaChecker::Required(const rapidjson::Value& obj,
                                                        std::string_view where,
                                                        const char* key) const {
  const rapidjson::Value* v = JsonMember(obj, key);
  if (v == nullptr) return Fail(Join(where, key), "required");
  return v;
}

Result<std::string> SchemaChecker::String(const rapidjson::Value& obj, std::string_view where,
                                          const char* key, bool non_empty) const {
  SANDRUN_ASSIGN_OR_RETURN(const rapidjson::Value* v, Required(obj, where, key));
  if (!v->IsString()) return Fail(Join(where, key), "expected a string, got " + TypeName(*v));
  std::string s(v->GetString(), v->GetStringLength());
  if (non_empty && s.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Fail(Join(where, key), "must not be empty");
  }
  return s;
}

Result<bool> SchemaChecker::Bool(const rapidjson::Value& obj, std::string_view where,
                                 const char* key) const {
  SANDRUN_ASSIGN_OR_RETURN(const rapidjson::Value* v, Required(obj, where, key));
  if (!v->IsBool()) return Fail(Join(where, key), "expected true or false, got " + TypeName(*v));
  return v->GetBool();
}

Result<int64_t> SchemaChecker::Int(const rapidjson::Value& obj, std::string_view where,
                                   const char* key, int64_t min, int64_t max) const {
  SANDRUN_ASSIGN_OR_RETURN(const rapidjson::Value* v, Required(obj, where, key));
  if (!v->IsInt64()) return Fail(Join(where, key), "expected an integer, got " + TypeName(*v));
  int64_t n = v->GetInt64();
  if (n < min || n > max) {
    return Fail(Join(where, key), "must be between " + std::to_string(min) + " and " +
                                      std::to_string(max) + ", got " + std::to_string(n));
  }
  return n;
}

Result<uint64_t> SchemaChecker::Uint64(const rapidjson::Value& obj, std::string_view where,
                                       const char* key) const {
  SANDRUN_ASSIGN_OR_RETURN(const rapidjson::Value* v, Required(obj, where, key));
  if (!v->IsUint64()) {
    return Fail(Join(where, key), "expected an integer from 0 to 2^64-1, got " + TypeName(*v));
  }
  return v->GetUint64();
}

Result<std::vector<std::string>> SchemaChecker::StringArray(const rapidjson::Value& obj,
                                                            std::string_view where,
                                                            const char* key) const {
  SANDRUN_ASSIGN_OR_RETURN(const rapidjson::Value* v, Required(obj, where, key));
  std::string at = Join(where, key);
  if (!v->IsArray()) return Fail(at, "expected an array of strings, got " + TypeName(*v));
  std::vector<std::string> out;
  for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
    const rapidjson::Value& item = (*v)[i];
    if (!item.IsString() || item.GetStringLength() == 0) {
      return Fail(Index(at, i), "expected a non-empty string");
    }
    std::string s(item.GetString(), item.GetStringLength());
    if (std::find(out.begin(), out.end(), s) != out.end()) {
      return Fail(Index(at, i), "\"" + s + "\" is listed twice");
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace sandrun::harden

// Reading files under profiles/ and checking their shape, shared by the three loaders (seccomp,
// host, containers): one place decides how a profile file is found, parsed and reported.
//
// Pattern of use (inside a loader):
//   SANDRUN_ASSIGN_OR_RETURN(ProfileFile file, ReadProfileFile(dir, "host", name));
//   SchemaChecker check(file.path);
//   SANDRUN_RETURN_IF_ERROR(check.Keys(file.doc, "", {"name", "description", "seccomp"}));
//   SANDRUN_ASSIGN_OR_RETURN(bool nnp, check.Bool(file.doc, "", "noNewPrivs"));
//
// Every error names the file, the key (a dotted path such as "rlimits.RLIMIT_CORE.soft" or
// "syscalls[3].names[0]") and the reason: "<path>: <key>: <reason>".
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::harden {

// $SANDRUN_PROFILES_DIR, else an installed tree's share/sandrun/profiles, else the source
// tree's profiles/ (FindDataDir in sandbox/os/data_dir.h).
std::string DefaultProfilesDir();

// [a-z0-9-]+: the names files refer to each other by; never walks out of profiles/<kind>/.
bool IsProfileName(std::string_view name);

// profiles_dir + "/" + kind + "/" + name + ".json".
std::string ProfilePath(const std::string& profiles_dir, std::string_view kind,
                        const std::string& name);

// The stems of profiles/<kind>/*.json, sorted. A missing directory is an error.
Result<std::vector<std::string>> ListProfiles(const std::string& profiles_dir,
                                              std::string_view kind);

struct ProfileFile {
  std::string path;
  std::string name;
  std::string description;
  rapidjson::Document doc;  // an object; "name" equals the stem, "description" is non-empty
};

// Reads and parses profiles/<kind>/<name>.json (strict JSON: no comments, no trailing commas)
// and checks the parts every profile shares: a top-level object, "name" equal to the file stem
// and a non-empty "description". Duplicate keys anywhere in the file are refused.
Result<ProfileFile> ReadProfileFile(const std::string& profiles_dir, std::string_view kind,
                                    const std::string& name);
// The same for text already in memory (tests, fuzzing); `expected_name` "" skips the stem check.
Result<ProfileFile> ParseProfileText(std::string_view text, const std::string& path,
                                     const std::string& expected_name);

// Typed, strict accessors whose errors say "<path>: <key>: <reason>". `where` is the dotted key
// of `obj` itself ("" for the top level); the accessors append `key` to it.
class SchemaChecker {
 public:
  explicit SchemaChecker(std::string path) : path_(std::move(path)) {}

  Error Fail(std::string_view key, std::string_view reason) const;
  static std::string Join(std::string_view where, std::string_view key);
  static std::string Index(std::string_view where, size_t i);

  // Refuses keys outside `allowed` (a typo must not silently drop a setting).
  Status Keys(const rapidjson::Value& obj, std::string_view where,
              std::initializer_list<const char*> allowed) const;
  Status IsObject(const rapidjson::Value& v, std::string_view where) const;

  const rapidjson::Value* Optional(const rapidjson::Value& obj, const char* key) const;
  Result<const rapidjson::Value*> Required(const rapidjson::Value& obj, std::string_view where,
                                           const char* key) const;
  Result<std::string> String(const rapidjson::Value& obj, std::string_view where, const char* key,
                             bool non_empty = true) const;
  Result<bool> Bool(const rapidjson::Value& obj, std::string_view where, const char* key) const;
  Result<int64_t> Int(const rapidjson::Value& obj, std::string_view where, const char* key,
                      int64_t min, int64_t max) const;
  Result<uint64_t> Uint64(const rapidjson::Value& obj, std::string_view where,
                          const char* key) const;
  // An array of non-empty strings without duplicates.
  Result<std::vector<std::string>> StringArray(const rapidjson::Value& obj, std::string_view where,
                                               const char* key) const;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace sandrun::harden

#include "sandbox/harden/seccomp_profile.h"

#include <cstdlib>

#include "sandbox/base/json.h"
#include "sandbox/os/file.h"

namespace sandrun::harden {

std::string DefaultProfilesDir() {
  if (const char* dir = std::getenv("SANDRUN_PROFILES_DIR"); dir && *dir) return dir;
  return std::string(SANDRUN_SOURCE_DIR) + "/profiles";
}

Result<std::string> LoadSeccompProfileJson(const std::string& profiles_dir,
                                           const std::string& name) {
  bool valid = !name.empty();
  for (char c : name)
    valid = valid && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  if (!valid) {
    return Error(ErrorCode::kInvalidArgument, "invalid seccomp profile name \"" + name + "\"");
  }
  std::string path = profiles_dir + "/seccomp/" + name + ".json";
  SANDRUN_ASSIGN_OR_RETURN(std::string text, ReadFile(path, 4u << 20));
  JsonParseOptions options;
  options.source_name = path;
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(text, options));
  if (!doc.IsObject()) return Error(ErrorCode::kInvalidArgument, path + ": not a JSON object");
  const auto* action = JsonMember(doc, "defaultAction");
  if (action == nullptr || !action->IsString()) {
    return Error(ErrorCode::kInvalidArgument, path + ": defaultAction: expected a string");
  }
  const auto* syscalls = JsonMember(doc, "syscalls");
  if (syscalls == nullptr || !syscalls->IsArray()) {
    return Error(ErrorCode::kInvalidArgument, path + ": syscalls: expected an array");
  }
  return ToJson(doc);
}

}  // namespace sandrun::harden

#include "sandbox/harden/container_preset.h"

#include <algorithm>
#include <cctype>

#include "sandbox/base/strings.h"
#include "sandbox/harden/profile_file.h"

namespace sandrun::harden {
namespace {

bool IsEnvKey(std::string_view k) {
  if (k.empty() || (std::isdigit(static_cast<unsigned char>(k[0])) != 0)) return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

Result<std::map<std::string, std::string>> StringMap(const SchemaChecker& check,
                                                     const rapidjson::Value& v,
                                                     const std::string& at) {
  SANDRUN_RETURN_IF_ERROR(check.IsObject(v, at));
  std::map<std::string, std::string> out;
  for (const auto& m : v.GetObject()) {
    std::string key(m.name.GetString(), m.name.GetStringLength());
    if (!m.value.IsString()) return check.Fail(SchemaChecker::Join(at, key), "expected a string");
    out[key] = std::string(m.value.GetString(), m.value.GetStringLength());
  }
  return out;
}

// hostConfig: the fields a preset may set, each checked for what would weaken the sandbox.
Status ParseHostConfig(const SchemaChecker& check, const rapidjson::Value& hc, ContainerPreset& p) {
  const std::string at = "hostConfig";
  SANDRUN_RETURN_IF_ERROR(check.IsObject(hc, at));
  for (const char* key : {"Privileged", "CapAdd", "Binds", "Mounts", "Devices", "PidMode",
                          "IpcMode", "UsernsMode", "UTSMode", "CgroupnsMode"}) {
    if (check.Optional(hc, key) != nullptr) {
      return check.Fail(SchemaChecker::Join(at, key),
                        "not allowed in a preset: it weakens the sandbox's isolation (binds come "
                        "from sandbox.docker.binds, validated by the gate)");
    }
  }
  SANDRUN_RETURN_IF_ERROR(
      check.Keys(hc, at,
                 {"NetworkMode", "ReadonlyRootfs", "CapDrop", "SecurityOpt", "Tmpfs", "PidsLimit",
                  "Memory", "MemorySwap", "NanoCpus", "Init"}));

  SANDRUN_ASSIGN_OR_RETURN(p.network_mode, check.String(hc, at, "NetworkMode"));
  const std::string net = Lower(p.network_mode);
  if (net == "host" || net.rfind("container:", 0) == 0) {
    return check.Fail("hostConfig.NetworkMode",
                      "\"" + p.network_mode +
                          "\" is refused: the sandbox must not share the host's or another "
                          "container's network namespace");
  }
  SANDRUN_ASSIGN_OR_RETURN(p.readonly_rootfs, check.Bool(hc, at, "ReadonlyRootfs"));
  if (!p.readonly_rootfs) {
    return check.Fail("hostConfig.ReadonlyRootfs",
                      "must be true (writable space is the tmpfs "
                      "mounts and the workspace)");
  }
  SANDRUN_ASSIGN_OR_RETURN(p.cap_drop, check.StringArray(hc, at, "CapDrop"));
  if (std::find(p.cap_drop.begin(), p.cap_drop.end(), "ALL") == p.cap_drop.end()) {
    return check.Fail("hostConfig.CapDrop", "must contain \"ALL\"");
  }
  SANDRUN_ASSIGN_OR_RETURN(p.security_opt, check.StringArray(hc, at, "SecurityOpt"));
  bool nnp = false;
  for (size_t i = 0; i < p.security_opt.size(); ++i) {
    const std::string opt = Lower(p.security_opt[i]);
    const std::string item = SchemaChecker::Index("hostConfig.SecurityOpt", i);
    if (opt.rfind("seccomp", 0) == 0) {
      return check.Fail(item, "the seccomp profile comes from \"seccompProfile\", not SecurityOpt");
    }
    if (opt.find("unconfined") != std::string::npos) {
      return check.Fail(item, "\"" + p.security_opt[i] + "\" is refused: no unconfined profiles");
    }
    if (opt.rfind("no-new-privileges", 0) == 0) {
      if (opt != "no-new-privileges" && opt != "no-new-privileges:true" &&
          opt != "no-new-privileges=true") {
        return check.Fail(item, "no-new-privileges must be true");
      }
      nnp = true;
    }
  }
  if (!nnp) return check.Fail("hostConfig.SecurityOpt", "must contain \"no-new-privileges:true\"");

  if (const rapidjson::Value* tmpfs = check.Optional(hc, "Tmpfs"); tmpfs != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(p.tmpfs, StringMap(check, *tmpfs, "hostConfig.Tmpfs"));
    for (const auto& [mount, options] : p.tmpfs) {
      if (mount.empty() || mount[0] != '/' || mount == "/") {
        return check.Fail("hostConfig.Tmpfs." + mount,
                          "expected an absolute mount point other than \"/\"");
      }
    }
  }
  constexpr int64_t kMax = int64_t{1} << 62;
  if (check.Optional(hc, "PidsLimit") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(p.pids_limit, check.Int(hc, at, "PidsLimit", 0, kMax));
  }
  if (check.Optional(hc, "Memory") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(p.memory, check.Int(hc, at, "Memory", 0, kMax));
  }
  if (check.Optional(hc, "MemorySwap") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(p.memory_swap, check.Int(hc, at, "MemorySwap", -1, kMax));
  }
  if (check.Optional(hc, "NanoCpus") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(p.nano_cpus, check.Int(hc, at, "NanoCpus", 0, kMax));
  }
  if (check.Optional(hc, "Init") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(p.init, check.Bool(hc, at, "Init"));
  }
  return Ok();
}

Result<ContainerPreset> FromFile(ProfileFile file) {
  SchemaChecker check(file.path);
  const rapidjson::Value& doc = file.doc;
  SANDRUN_RETURN_IF_ERROR(check.Keys(
      doc, "", {"name", "description", "seccompProfile", "hostConfig", "workdir", "env"}));
  ContainerPreset p;
  p.path = file.path;
  p.name = file.name;
  p.description = file.description;
  SANDRUN_ASSIGN_OR_RETURN(p.seccomp_profile, check.String(doc, "", "seccompProfile"));
  if (Lower(p.seccomp_profile) == "unconfined") {
    return check.Fail("seccompProfile",
                      "\"unconfined\" is refused: the sandbox always runs under "
                      "a seccomp filter");
  }
  if (!IsProfileName(p.seccomp_profile)) {
    return check.Fail("seccompProfile", "\"" + p.seccomp_profile +
                                            "\" is not a profile name (the stem of a file in "
                                            "seccomp/)");
  }
  SANDRUN_ASSIGN_OR_RETURN(const rapidjson::Value* hc, check.Required(doc, "", "hostConfig"));
  SANDRUN_RETURN_IF_ERROR(ParseHostConfig(check, *hc, p));
  if (check.Optional(doc, "workdir") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(p.workdir, check.String(doc, "", "workdir"));
    if (p.workdir[0] != '/' || p.workdir == "/") {
      return check.Fail("workdir", "expected an absolute path other than \"/\"");
    }
  }
  if (const rapidjson::Value* env = check.Optional(doc, "env"); env != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(p.env, StringMap(check, *env, "env"));
    for (const auto& [key, value] : p.env) {
      if (!IsEnvKey(key)) return check.Fail("env." + key, "not a portable variable name");
    }
  }
  return p;
}

}  // namespace

Result<ContainerPreset> LoadContainerPreset(const std::string& profiles_dir,
                                            const std::string& name) {
  SANDRUN_ASSIGN_OR_RETURN(ProfileFile file, ReadProfileFile(profiles_dir, "containers", name));
  return FromFile(std::move(file));
}

Result<ContainerPreset> ParseContainerPreset(std::string_view text, const std::string& path,
                                             const std::string& expected_name) {
  SANDRUN_ASSIGN_OR_RETURN(ProfileFile file, ParseProfileText(text, path, expected_name));
  return FromFile(std::move(file));
}

}  // namespace sandrun::harden

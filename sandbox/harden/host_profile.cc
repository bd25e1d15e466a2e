#include "sandbox/harden/host_profile.h"

#include <sys/resource.h>

#include "sandbox/harden/profile_file.h"
#include "sandbox/os/host_path.h"

namespace sandrun::harden {
namespace {

struct NamedLimit {
  const char* name;
  int resource;
};
constexpr NamedLimit kLimits[] = {
    {"RLIMIT_AS", RLIMIT_AS},
    {"RLIMIT_CORE", RLIMIT_CORE},
    {"RLIMIT_CPU", RLIMIT_CPU},
    {"RLIMIT_DATA", RLIMIT_DATA},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE},
    {"RLIMIT_LOCKS", RLIMIT_LOCKS},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
    {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_NPROC", RLIMIT_NPROC},
    {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
    {"RLIMIT_RTTIME", RLIMIT_RTTIME},
    {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_STACK", RLIMIT_STACK},
};

Result<uint64_t> LimitValue(const SchemaChecker& check, const rapidjson::Value& obj,
                            const std::string& where, const char* key) {
  const rapidjson::Value* v = check.Optional(obj, key);
  const std::string at = SchemaChecker::Join(where, key);
  if (v == nullptr) return check.Fail(at, "required");
  if (v->IsString() && std::string_view(v->GetString()) == "unlimited") return RLIM_INFINITY;
  if (!v->IsUint64() || v->GetUint64() >= RLIM_INFINITY) {
    return check.Fail(at, "expected a non-negative integer or \"unlimited\"");
  }
  return v->GetUint64();
}

Result<HostProfile> FromFile(ProfileFile file) {
  SchemaChecker check(file.path);
  const rapidjson::Value& doc = file.doc;
  SANDRUN_RETURN_IF_ERROR(check.Keys(doc, "",
                                     {"name", "description", "seccomp", "noNewPrivs",
                                      "capabilities", "rlimits", "identity", "confine"}));
  HostProfile p;
  p.path = file.path;
  p.name = file.name;
  p.description = file.description;

  SANDRUN_ASSIGN_OR_RETURN(const rapidjson::Value* seccomp, check.Required(doc, "", "seccomp"));
  SANDRUN_RETURN_IF_ERROR(check.Keys(*seccomp, "seccomp", {"profile", "mode"}));
  SANDRUN_ASSIGN_OR_RETURN(p.seccomp_profile, check.String(*seccomp, "seccomp", "profile"));
  if (!IsProfileName(p.seccomp_profile)) {
    return check.Fail("seccomp.profile", "\"" + p.seccomp_profile +
                                             "\" is not a profile name (lowercase letters, "
                                             "digits and '-': the stem of a file in seccomp/)");
  }
  if (p.seccomp_profile == "unconfined") {
    return check.Fail("seccomp.profile",
                      "\"unconfined\" is refused: host commands always run "
                      "under a seccomp filter where the kernel has one");
  }
  SANDRUN_ASSIGN_OR_RETURN(std::string mode, check.String(*seccomp, "seccomp", "mode"));
  if (mode == "required") {
    p.seccomp_mode = SeccompMode::kRequired;
  } else if (mode == "optional") {
    p.seccomp_mode = SeccompMode::kOptional;
  } else {
    return check.Fail("seccomp.mode",
                      "expected \"required\" or \"optional\", got \"" + mode + "\"");
  }

  SANDRUN_ASSIGN_OR_RETURN(p.no_new_privs, check.Bool(doc, "", "noNewPrivs"));
  if (!p.no_new_privs) {
    return check.Fail("noNewPrivs",
                      "must be true: the seccomp filter is loaded after the capability drop, "
                      "and the kernel then accepts it only from a no_new_privs process");
  }

  SANDRUN_ASSIGN_OR_RETURN(const rapidjson::Value* caps, check.Required(doc, "", "capabilities"));
  SANDRUN_RETURN_IF_ERROR(check.Keys(*caps, "capabilities", {"keep"}));
  SANDRUN_ASSIGN_OR_RETURN(p.keep_capabilities, check.StringArray(*caps, "capabilities", "keep"));
  for (size_t i = 0; i < p.keep_capabilities.size(); ++i) {
    auto cap = CapabilityFromName(p.keep_capabilities[i]);
    if (!cap) return check.Fail(SchemaChecker::Index("capabilities.keep", i), cap.error().message);
    p.keep_mask |= CapBit(*cap);
  }

  if (const rapidjson::Value* limits = check.Optional(doc, "rlimits"); limits != nullptr) {
    SANDRUN_RETURN_IF_ERROR(check.IsObject(*limits, "rlimits"));
    for (const auto& m : limits->GetObject()) {
      RlimitSetting r;
      r.name.assign(m.name.GetString(), m.name.GetStringLength());
      const std::string at = SchemaChecker::Join("rlimits", r.name);
      r.resource = RlimitFromName(r.name);
      if (r.resource < 0) {
        return check.Fail(at, "unknown resource (RLIMIT_CORE, RLIMIT_NOFILE, RLIMIT_NPROC, ...)");
      }
      SANDRUN_RETURN_IF_ERROR(check.Keys(m.value, at, {"soft", "hard"}));
      SANDRUN_ASSIGN_OR_RETURN(r.soft, LimitValue(check, m.value, at, "soft"));
      SANDRUN_ASSIGN_OR_RETURN(r.hard, LimitValue(check, m.value, at, "hard"));
      if (r.soft > r.hard) {
        return check.Fail(SchemaChecker::Join(at, "soft"), "must not exceed hard");
      }
      p.rlimits.push_back(std::move(r));
    }
  }

  if (check.Optional(doc, "identity") != nullptr) {
    SANDRUN_ASSIGN_OR_RETURN(std::string identity, check.String(doc, "", "identity"));
    if (identity == "hostUser") {
      p.identity = HostIdentity::kHostUser;
    } else if (identity == "runner") {
      p.identity = HostIdentity::kRunner;
    } else {
      return check.Fail("identity",
                        "expected \"hostUser\" or \"runner\", got \"" + identity + "\"");
    }
  }
  if (p.keep_mask != 0 && p.identity == HostIdentity::kHostUser) {
    return check.Fail("capabilities.keep",
                      "capabilities can only be kept with \"identity\": \"runner\" (a root "
                      "runner's command otherwise becomes tools.exec.hostUser, which holds none)");
  }
  if (const rapidjson::Value* confine = check.Optional(doc, "confine"); confine != nullptr) {
    SANDRUN_RETURN_IF_ERROR(check.IsObject(*confine, "confine"));
    SANDRUN_RETURN_IF_ERROR(check.Keys(*confine, "confine", {"mode", "readOnly", "mask"}));
    SANDRUN_ASSIGN_OR_RETURN(std::string cmode, check.String(*confine, "confine", "mode"));
    if (cmode == "required") {
      p.confine_mode = ConfineMode::kRequired;
    } else if (cmode == "optional") {
      p.confine_mode = ConfineMode::kOptional;
    } else {
      return check.Fail("confine.mode",
                        "expected \"required\" or \"optional\", got \"" + cmode + "\"");
    }
    for (const char* key : {"readOnly", "mask"}) {
      if (check.Optional(*confine, key) == nullptr) continue;
      SANDRUN_ASSIGN_OR_RETURN(std::vector<std::string> paths,
                               check.StringArray(*confine, "confine", key));
      for (size_t i = 0; i < paths.size(); ++i) {
        const std::string& path = paths[i];
        if (!IsNormalizedAbsolutePath(path) || path == "/") {
          return check.Fail(SchemaChecker::Index(SchemaChecker::Join("confine", key), i),
                            "expected an absolute path other than \"/\", without \".\", "
                            "\"..\" or empty components");
        }
      }
      (std::string_view(key) == "mask" ? p.confine_mask : p.confine_read_only) = std::move(paths);
    }
  }
  return p;
}

}  // namespace

int RlimitFromName(std::string_view name) {
  for (const auto& l : kLimits) {
    if (name == l.name) return l.resource;
  }
  return -1;
}

Result<HostProfile> LoadHostProfile(const std::string& profiles_dir, const std::string& name) {
  SANDRUN_ASSIGN_OR_RETURN(ProfileFile file, ReadProfileFile(profiles_dir, "host", name));
  return FromFile(std::move(file));
}

Result<HostProfile> ParseHostProfile(std::string_view text, const std::string& path,
                                     const std::string& expected_name) {
  SANDRUN_ASSIGN_OR_RETURN(ProfileFile file, ParseProfileText(text, path, expected_name));
  return FromFile(std::move(file));
}

}  // namespace sandrun::harden

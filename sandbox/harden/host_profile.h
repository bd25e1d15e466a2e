// Host hardening profiles: profiles/host/<name>.json, selected by tools.exec.hostProfile (and
// tools.elevated.hostProfile for elevated runs). The one loader of that format.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(HostProfile p, LoadHostProfile(DefaultProfilesDir(), "default"));
//   p.seccomp_profile   // "host": profiles/seccomp/host.json
//
// Schema (profiles/README.md): "name" (= file stem), "description", "seccomp": {"profile":
// <seccomp stem>, "mode": "required" | "optional"}, "noNewPrivs": true, "capabilities": {"keep":
// ["CAP_..."]}, optional "rlimits": {"RLIMIT_*": {"soft": N | "unlimited", "hard": ...}},
// optional "identity": "hostUser" (default) | "runner", optional "confine": {"mode":
// "required" (default) | "optional", "readOnly": [abs paths], "mask": [abs paths]}. Unknown
// keys are errors; every error names the file, the key and the reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/harden/caps.h"

namespace sandrun::harden {

enum class SeccompMode {
  kRequired,  // no seccomp on this host: the call fails
  kOptional,  // no seccomp on this host: the command runs unfiltered, with a warning
};

// Whose identity a root runner's commands run with.
enum class HostIdentity {
  kHostUser,  // tools.exec.hostUser (default "nobody"), no supplementary groups
  kRunner,    // the runner's own (root stays root): profiles/host/privileged.json
};

enum class ConfineMode {
  kRequired,  // a kernel that refuses the namespaces makes the call fail
  kOptional,  // such a kernel runs the command unconfined, with a warning
};

struct RlimitSetting {
  std::string name;   // "RLIMIT_NOFILE"
  int resource = 0;   // RLIMIT_NOFILE
  uint64_t soft = 0;  // RLIM_INFINITY for "unlimited"
  uint64_t hard = 0;
};

struct HostProfile {
  std::string path;
  std::string name;
  std::string description;
  std::string seccomp_profile;  // stem of profiles/seccomp/<x>.json
  SeccompMode seccomp_mode = SeccompMode::kRequired;
  bool no_new_privs = true;
  std::vector<std::string> keep_capabilities;  // as written
  CapMask keep_mask = 0;
  std::vector<RlimitSetting> rlimits;  // in file order
  HostIdentity identity = HostIdentity::kHostUser;
  ConfineMode confine_mode = ConfineMode::kRequired;
  std::vector<std::string> confine_read_only;  // absolute paths
  std::vector<std::string> confine_mask;       // absolute paths
};

Result<HostProfile> LoadHostProfile(const std::string& profiles_dir, const std::string& name);
Result<HostProfile> ParseHostProfile(std::string_view text, const std::string& path,
                                     const std::string& expected_name);

// "RLIMIT_NOFILE" -> RLIMIT_NOFILE; -1 when unknown.
int RlimitFromName(std::string_view name);

}  // namespace sandrun::harden

// `sandrun doctor`: checks what sandrun needs on this machine (state dir, the config, Docker
// engine and its API version, sandbox images, kernel seccomp) and says how to fix what fails.
//
// The config check fails when config.json (or --config) does not load (its error names the line
// and column) or when a scope's container settings are refused by every sandbox call (network
// "host"/"container:", an "unconfined" profile, a seccomp profile that does not load); unknown
// keys are a warning. The image checks look for sandrun-sandbox:minimal and :bookworm and for
// every image the config names (sandbox.docker.image, per agent and tenant, in scopes whose
// sandbox.mode is not off); a missing one fails, and its fix names the recipe that builds it
// (docker::MissingImageHint).
#pragma once

#include <string>
#include <vector>

namespace sandrun::api {

struct DoctorCheck {
  enum class Level { kOk, kWarn, kFail };
  std::string name;  // "state-dir", "config", "engine", "api-version", "image", "seccomp", ...
  Level level = Level::kOk;
  std::string detail;  // what was found
  std::string fix;     // how to fix it (failures and warnings)
};

struct DoctorReport {
  std::vector<DoctorCheck> checks;
  bool ok() const;  // no check failed (warnings allowed)
};

// `config_file`: --config ("" = $SANDRUN_HOME/config.json).
DoctorReport RunDoctor(const std::string& config_file);
std::string FormatDoctorText(const DoctorReport& report);
std::string FormatDoctorJson(const DoctorReport& report);

}  // namespace sandrun::api

// `sandrun doctor`: checks what sandrun needs on this machine (state dir, Docker engine and its
// API version, sandbox images, kernel seccomp) and says how to fix what fails.
#pragma once

#include <string>
#include <vector>

namespace sandrun::api {

struct DoctorCheck {
  enum class Level { kOk, kWarn, kFail };
  std::string name;  // "state-dir", "engine", "api-version", "image", "seccomp"
  Level level = Level::kOk;
  std::string detail;  // what was found
  std::string fix;     // how to fix it (failures and warnings)
};

struct DoctorReport {
  std::vector<DoctorCheck> checks;
  bool ok() const;  // no check failed (warnings allowed)
};

DoctorReport RunDoctor();
std::string FormatDoctorText(const DoctorReport& report);
std::string FormatDoctorJson(const DoctorReport& report);

}  // namespace sandrun::api

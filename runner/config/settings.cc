#include "runner/config/settings.h"

namespace sandrun::config {

// The names are the config file's values; the loader parses enums by comparing with these.

const char* ToString(SandboxMode v) {
  switch (v) {
    case SandboxMode::kOff:
      return "off";
    case SandboxMode::kNonMain:
      return "non-main";
    case SandboxMode::kAll:
      return "all";
  }
  return "unknown";
}

const char* ToString(SandboxScope v) {
  switch (v) {
    case SandboxScope::kSession:
      return "session";
    case SandboxScope::kAgent:
      return "agent";
    case SandboxScope::kShared:
      return "shared";
  }
  return "unknown";
}

const char* ToString(WorkspaceAccess v) {
  switch (v) {
    case WorkspaceAccess::kNone:
      return "none";
    case WorkspaceAccess::kRo:
      return "ro";
    case WorkspaceAccess::kRw:
      return "rw";
  }
  return "unknown";
}

const char* ToString(Security v) {
  switch (v) {
    case Security::kDeny:
      return "deny";
    case Security::kAllowlist:
      return "allowlist";
    case Security::kFull:
      return "full";
  }
  return "unknown";
}

const char* ToString(Ask v) {
  switch (v) {
    case Ask::kOff:
      return "off";
    case Ask::kOnMiss:
      return "on-miss";
    case Ask::kAlways:
      return "always";
  }
  return "unknown";
}

const char* ToString(ExecMode v) {
  switch (v) {
    case ExecMode::kDeny:
      return "deny";
    case ExecMode::kAllowlist:
      return "allowlist";
    case ExecMode::kAsk:
      return "ask";
    case ExecMode::kAuto:
      return "auto";
    case ExecMode::kFull:
      return "full";
  }
  return "unknown";
}

}  // namespace sandrun::config

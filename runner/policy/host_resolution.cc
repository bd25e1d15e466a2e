#include "runner/policy/host_resolution.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "sandbox/base/strings.h"

namespace sandrun::policy {
namespace {

std::string NormalizedSessionKey(const std::string& key) {
  std::string t = Trim(key);
  return t.empty() ? "main" : t;
}

}  // namespace

const char* HostName(Host h) {
  switch (h) {
    case Host::kAuto:
      return "auto";
    case Host::kSandbox:
      return "sandbox";
    case Host::kGateway:
      return "gateway";
    case Host::kNode:
      return "node";
  }
  return "auto";
}

const char* ElevatedModeName(ElevatedMode m) {
  switch (m) {
    case ElevatedMode::kOff:
      return "off";
    case ElevatedMode::kAsk:
      return "ask";
    case ElevatedMode::kFull:
      return "full";
  }
  return "off";
}

const char* SecurityName(config::Security s) {
  switch (s) {
    case config::Security::kDeny:
      return "deny";
    case config::Security::kAllowlist:
      return "allowlist";
    case config::Security::kFull:
      return "full";
  }
  return "deny";
}

const char* AskName(config::Ask a) {
  switch (a) {
    case config::Ask::kOff:
      return "off";
    case config::Ask::kOnMiss:
      return "on-miss";
    case config::Ask::kAlways:
      return "always";
  }
  return "always";
}

std::optional<Host> ParseHost(std::string_view value) {
  std::string v = Lower(Trim(value));
  if (v == "auto") return Host::kAuto;
  if (v == "sandbox") return Host::kSandbox;
  if (v == "gateway") return Host::kGateway;
  if (v == "node") return Host::kNode;
  return std::nullopt;
}

std::optional<config::Security> ParseSecurity(std::string_view value) {
  std::string v = Lower(Trim(value));
  if (v == "deny") return config::Security::kDeny;
  if (v == "allowlist") return config::Security::kAllowlist;
  if (v == "full") return config::Security::kFull;
  return std::nullopt;
}

std::optional<config::Ask> ParseAsk(std::string_view value) {
  std::string v = Lower(Trim(value));
  if (v == "off") return config::Ask::kOff;
  if (v == "on-miss") return config::Ask::kOnMiss;
  if (v == "always") return config::Ask::kAlways;
  return std::nullopt;
}

Result<std::optional<Host>> NormalizeRequestedHost(const std::optional<std::string>& raw) {
  if (!raw.has_value() || Trim(*raw).empty()) return std::optional<Host>();
  std::optional<Host> host = ParseHost(*raw);
  if (!host.has_value()) {
    return Error::Refusal("invalid-host", "Invalid exec host \"" + *raw +
                                              "\". Allowed values: auto, sandbox, gateway, node.");
  }
  return host;
}

bool IsSessionSandboxed(const config::SandboxSettings& sandbox, const Caller& caller) {
  switch (sandbox.mode) {
    case config::SandboxMode::kOff:
      return false;
    case config::SandboxMode::kAll:
      return true;
    case config::SandboxMode::kNonMain:
      return NormalizedSessionKey(caller.session_key) !=
             NormalizedSessionKey(sandbox.main_session_key);
  }
  return true;
}

ElevatedGates EvaluateElevatedGates(const config::ElevatedSettings& elevated,
                                    const Caller& caller) {
  ElevatedGates gates;
  gates.enabled = elevated.enabled;
  auto it = elevated.allow_from.find(Trim(caller.provider));
  if (it != elevated.allow_from.end()) {
    for (const std::string& entry : it->second) {
      std::string glob = Trim(entry);
      if (glob.empty()) continue;
      if (GlobMatch(glob, caller.sender)) {
        gates.allowed = true;
        break;
      }
    }
  }
  return gates;
}

std::string ElevatedUnavailableMessage(bool sandboxed, const ElevatedGates& gates,
                                       const Caller& caller) {
  std::vector<std::string> lines;
  lines.push_back(std::string("elevated is not available right now (runtime=") +
                  (sandboxed ? "sandboxed" : "direct") + ").");
  if (!gates.enabled) {
    lines.push_back(
        "Failing gates: enabled (tools.elevated.enabled / agents.list[].tools.elevated.enabled)");
  } else {
    lines.push_back(
        "Failing gates: allowFrom (tools.elevated.allowFrom.<provider> / "
        "agents.list[].tools.elevated.allowFrom.<provider>)");
  }
  std::vector<std::string> context;
  std::string provider = Trim(caller.provider);
  std::string session = Trim(caller.session_key);
  if (!provider.empty()) context.push_back("provider=" + provider);
  if (!session.empty()) context.push_back("session=" + session);
  if (!context.empty()) {
    std::string line = "Context:";
    for (const std::string& part : context) line += " " + part;
    lines.push_back(line);
  }
  lines.push_back("Fix-it keys:");
  lines.push_back("- tools.elevated.enabled");
  lines.push_back("- tools.elevated.allowFrom.<provider>");
  lines.push_back("- agents.list[].tools.elevated.enabled");
  lines.push_back("- agents.list[].tools.elevated.allowFrom.<provider>");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    out += lines[i];
  }
  return out;
}

ElevatedResolution ResolveElevated(const config::ElevatedSettings& elevated,
                                   std::optional<bool> requested, const Caller& caller,
                                   bool sandboxed) {
  ElevatedGates gates = EvaluateElevatedGates(elevated, caller);
  std::string level = Lower(Trim(elevated.default_level));
  ElevatedMode level_mode = ElevatedMode::kOff;
  if (level == "full") {
    level_mode = ElevatedMode::kFull;
  } else if (level == "ask" || level == "on") {
    level_mode = ElevatedMode::kAsk;
  }
  const bool available = gates.enabled && gates.allowed;
  ElevatedMode default_mode = available ? level_mode : ElevatedMode::kOff;

  ElevatedResolution out;
  if (!requested.has_value()) {
    out.mode = default_mode;
  } else if (*requested) {
    out.mode = default_mode == ElevatedMode::kFull ? ElevatedMode::kFull : ElevatedMode::kAsk;
  } else {
    out.mode = ElevatedMode::kOff;
  }
  if (out.mode != ElevatedMode::kOff && !available) {
    out.refusal = Error::Refusal("elevated-unavailable",
                                 ElevatedUnavailableMessage(sandboxed, gates, caller));
  }
  return out;
}

std::optional<Error> CheckHostOverride(Host configured, std::optional<Host> requested,
                                       bool sandboxed) {
  if (!requested.has_value() || *requested == configured) return std::nullopt;
  const Host r = *requested;
  const bool to_host = r == Host::kGateway || r == Host::kNode;
  if (configured == Host::kAuto && !(sandboxed && to_host)) return std::nullopt;

  std::string hint;
  if (configured == Host::kAuto && sandboxed && to_host) {
    hint = HostName(r);
  } else if (r == Host::kGateway && !sandboxed) {
    hint = "gateway or auto";
  } else {
    hint = std::string(HostName(r)) + " or auto";
  }
  return Error::Refusal("host-not-allowed",
                        std::string("exec host not allowed (requested ") + HostName(r) +
                            "; configured host is " + HostName(configured) +
                            "; set tools.exec.host=" + hint + " to allow this override).");
}

ExecTarget SelectExecTarget(Host configured, std::optional<Host> requested, bool sandboxed,
                            bool elevated) {
  ExecTarget t;
  t.selected = requested.value_or(configured);
  if (elevated) t.selected = t.selected == Host::kNode ? Host::kNode : Host::kGateway;
  if (t.selected == Host::kAuto) {
    t.effective = sandboxed ? Host::kSandbox : Host::kGateway;
  } else {
    t.effective = t.selected;
  }
  return t;
}

SecurityAsk ModeSecurityAsk(config::ExecMode mode) {
  switch (mode) {
    case config::ExecMode::kDeny:
      return {config::Security::kDeny, config::Ask::kOff};
    case config::ExecMode::kAllowlist:
      return {config::Security::kAllowlist, config::Ask::kOff};
    case config::ExecMode::kAsk:
    case config::ExecMode::kAuto:
      return {config::Security::kAllowlist, config::Ask::kOnMiss};
    case config::ExecMode::kFull:
      return {config::Security::kFull, config::Ask::kOff};
  }
  return {config::Security::kDeny, config::Ask::kOff};
}

SecurityAsk ConfiguredSecurityAsk(const config::ExecSettings& exec) {
  SecurityAsk out;  // nothing configured: full/off (the gateway/node host default)
  if (exec.mode.has_value()) out = ModeSecurityAsk(*exec.mode);
  if (exec.security.has_value()) out.security = *exec.security;
  if (exec.ask.has_value()) out.ask = *exec.ask;
  return out;
}

SecurityAsk EffectiveSecurityAsk(const SecurityAsk& configured,
                                 std::optional<config::Ask> requested_ask, ElevatedMode elevated) {
  SecurityAsk out = configured;
  if (requested_ask.has_value() && out.ask != config::Ask::kOff) {
    out.ask = std::max(out.ask, *requested_ask);
  }
  if (elevated == ElevatedMode::kFull) out = {config::Security::kFull, config::Ask::kOff};
  return out;
}

}  // namespace sandrun::policy

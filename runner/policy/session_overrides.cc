#include "runner/policy/session_overrides.h"

#include <string>

#include "runner/policy/host_resolution.h"

namespace sandrun::policy {

void ApplySessionState(const config::SessionState& state, config::AgentSettings* settings,
                       Caller* caller) {
  if (state.host) caller->session_host = *state.host;
  if (state.security) settings->exec.security = ParseSecurity(*state.security);
  if (state.ask) settings->exec.ask = ParseAsk(*state.ask);
  if (state.node) settings->exec.node = *state.node;
  if (state.elevated) {
    settings->elevated.default_level = *state.elevated;
    caller->session_elevated = *state.elevated;
  }
}

std::optional<std::string> SessionElevatedWarning(const config::AgentSettings& settings,
                                                  const Caller& caller,
                                                  std::optional<bool> requested) {
  if (!caller.session_elevated || *caller.session_elevated == "off") return std::nullopt;
  if (requested.has_value() && !*requested) return std::nullopt;  // the call turned it off
  const ElevatedGates gates = EvaluateElevatedGates(settings.elevated, caller);
  if (gates.enabled && gates.allowed) return std::nullopt;
  const std::string provider = caller.provider.empty() ? "<provider>" : caller.provider;
  return "Warning: this session's elevated level (" + *caller.session_elevated +
         ") does not apply to this call: " +
         (gates.enabled ? "tools.elevated.allowFrom." + provider + " does not name sender \"" +
                              caller.sender + "\""
                        : std::string("tools.elevated.enabled is false")) +
         "; it runs as configured.";
}

std::optional<Error> CheckSessionChange(const config::AgentSettings& settings, const Caller& caller,
                                        const config::SessionState& next) {
  const std::optional<Host> host = next.host ? ParseHost(*next.host) : std::nullopt;
  const bool elevated = next.elevated && *next.elevated != "off";
  if (!caller.tenant.empty() && !caller.host_execution &&
      (elevated || host == Host::kGateway || host == Host::kNode)) {
    const std::string key = "tenants." + caller.tenant + ".hostExecution";
    return Error::Refusal(
        "forbidden", std::string(elevated ? "an elevated level" : "exec host=" + *next.host) +
                         " is not allowed for tenant \"" + caller.tenant +
                         "\": its commands run only in the sandbox (" + key + " is not true).");
  }
  if (host) {
    const Host configured = ParseHost(settings.exec.host).value_or(Host::kAuto);
    if (auto e =
            CheckHostOverride(configured, host, IsSessionSandboxed(settings.sandbox, caller))) {
      return e;
    }
  }
  if (elevated && !settings.elevated.enabled) {
    ElevatedGates gates{false, false};
    return Error::Refusal(
        "elevated-unavailable",
        ElevatedUnavailableMessage(IsSessionSandboxed(settings.sandbox, caller), gates, caller));
  }
  return std::nullopt;
}

}  // namespace sandrun::policy

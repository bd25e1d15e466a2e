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
  if (state.elevated) settings->elevated.default_level = *state.elevated;
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

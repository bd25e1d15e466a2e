// Host, elevated and security/ask resolution (reference §1.2-§1.4, SPEC §3.1-§3.6). Pure
// functions of the settings, the request and the caller.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runner/config/settings.h"
#include "runner/policy/exec_request.h"
#include "runner/policy/gate_types.h"
#include "sandbox/base/strings.h"  // GlobMatch, for the tool and sender globs

namespace sandrun::policy {

enum class Host { kAuto, kSandbox, kGateway, kNode };
enum class ElevatedMode { kOff, kAsk, kFull };

const char* HostName(Host h);                  // "auto", "sandbox", "gateway", "node"
const char* ElevatedModeName(ElevatedMode m);  // "off", "ask", "full"
const char* SecurityName(config::Security s);  // "deny", "allowlist", "full"
const char* AskName(config::Ask a);            // "off", "on-miss", "always"

// Trimmed, case-insensitive parse of auto|sandbox|gateway|node; nullopt for anything else.
std::optional<Host> ParseHost(std::string_view value);
std::optional<config::Security> ParseSecurity(std::string_view value);  // trimmed, any case
std::optional<config::Ask> ParseAsk(std::string_view value);            // trimmed, any case

// The per-call host: absent or "" (after trimming) = not requested; an unknown value refuses
// with `Invalid exec host "<v>". Allowed values: auto, sandbox, gateway, node.` (code
// invalid-host; <v> is the raw value as given).
Result<std::optional<Host>> NormalizeRequestedHost(const std::optional<std::string>& raw);

// Whether this session runs in the sandbox by configuration: mode all; non-main and the session
// key (trimmed, "" = "main") differs from sandbox.mainSessionKey; off never.
bool IsSessionSandboxed(const config::SandboxSettings& sandbox, const Caller& caller);

// tools.elevated gates for this caller.
struct ElevatedGates {
  bool enabled = false;  // tools.elevated.enabled
  bool allowed = false;  // some allowFrom.<caller.provider> glob matches caller.sender
};
ElevatedGates EvaluateElevatedGates(const config::ElevatedSettings& elevated, const Caller& caller);

// The elevated mode of one call (reference §1.3). The default mode (from defaultLevel:
// full -> full, ask|on -> ask, else off) applies only when enabled && allowed;
// `elevated: true` -> full if the default level is full, else ask; `false` -> off; omitted ->
// the default mode. A resolved mode other than off while the gates fail refuses with the
// multi-line `elevated is not available right now (runtime=...)` text (elevated-unavailable).
struct ElevatedResolution {
  ElevatedMode mode = ElevatedMode::kOff;  // what the call asked for (even when refused)
  std::optional<Error> refusal;
};
ElevatedResolution ResolveElevated(const config::ElevatedSettings& elevated,
                                   std::optional<bool> requested, const Caller& caller,
                                   bool sandboxed);

// The elevated-unavailable message, exactly as OpenClaw words it.
std::string ElevatedUnavailableMessage(bool sandboxed, const ElevatedGates& gates,
                                       const Caller& caller);

// isRequestedExecTargetAllowed (reference §1.4): nullopt when the per-call host may be used,
// else the `exec host not allowed (...)` refusal (host-not-allowed).
std::optional<Error> CheckHostOverride(Host configured, std::optional<Host> requested,
                                       bool sandboxed);

struct ExecTarget {
  Host selected = Host::kAuto;      // requested ?? configured, then moved by elevated
  Host effective = Host::kSandbox;  // sandbox | gateway | node
};
// selected = requested ?? configured; elevated moves it to gateway unless it is node; auto
// resolves to sandbox when sandboxed, else gateway.
ExecTarget SelectExecTarget(Host configured, std::optional<Host> requested, bool sandboxed,
                            bool elevated);

// The configured (security, ask) pair: tools.exec.mode through the seeds' modes table, explicit
// tools.exec.security / tools.exec.ask over it, full/off when nothing is configured.
struct SecurityAsk {
  config::Security security = config::Security::kFull;
  config::Ask ask = config::Ask::kOff;
};
SecurityAsk ModeSecurityAsk(config::ExecMode mode);
SecurityAsk ConfiguredSecurityAsk(const config::ExecSettings& exec);

// The effective pair for one call: the per-call `security` is ignored (SPEC §3.6); a per-call
// `ask` only tightens (max) and is ignored when the configured ask is off; elevated full forces
// (full, off). `requested_ask` must already be validated.
SecurityAsk EffectiveSecurityAsk(const SecurityAsk& configured,
                                 std::optional<config::Ask> requested_ask, ElevatedMode elevated);

}  // namespace sandrun::policy

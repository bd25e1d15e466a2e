// A session's exec state (config::SessionState, issue 15) in the decision: what `/exec` and
// `/elevated` (or the session API) set for one (tenant, agent, session) takes effect here, and
// here only, so the exec path and `policy check` see it alike.
//
// How each override acts (OpenClaw's session overrides; reference §1.3, §1.4, §7):
//   host      the requested host of a call that names none (Caller::session_host): it selects a
//             host only within what tools.exec.host allows (CheckHostOverride);
//   security  tools.exec.security for the session (the approvals file still bounds it: min);
//   ask       tools.exec.ask for the session (the approvals file still bounds it: max);
//   node      tools.exec.node for the session;
//   elevated  tools.elevated.defaultLevel for the session: usable only through the gates
//             (tools.elevated.enabled + allowFrom for the calling sender); on/ask/full move the
//             session's calls out of the sandbox, full also skips approvals (SPEC §3.5).
// Unlike newer OpenClaw, where a directive's security/ask apply to one message, they persist for
// the session here (there is no message to scope them to).
//
// Pattern of use:
//   ApplySessionState(state, &settings, &caller);                   // the loader, per call
//   if (auto e = CheckSessionChange(settings, caller, next)) refuse(*e);  // before saving
#pragma once

#include <optional>
#include <string>

#include "runner/config/session_state.h"
#include "runner/config/settings.h"
#include "runner/policy/exec_request.h"
#include "sandbox/base/result.h"

namespace sandrun::policy {

// Applies `state` over the agent's settings and the caller (see above). Values are the
// normalised ones config::SessionState holds.
void ApplySessionState(const config::SessionState& state, config::AgentSettings* settings,
                       Caller* caller);

// The warning of a call whose session has an elevated level (not off) the gates refuse for this
// caller (the level then does not apply: OpenClaw's default mode is off unless enabled and
// allowed), unless the call itself asked for elevated:false. nullopt when nothing to say.
std::optional<std::string> SessionElevatedWarning(const config::AgentSettings& settings,
                                                  const Caller& caller,
                                                  std::optional<bool> requested);

// Whether an operator may set `next` for `caller`'s session under `settings` (the agent's,
// before any session state): nullopt, or the refusal:
//   host-not-allowed      the host is outside what tools.exec.host allows (§1.4's text);
//   elevated-unavailable  a level other than off while tools.elevated.enabled is false;
//   forbidden             a hosted tenant without hostExecution asking for a gateway or node
//                         host or an elevated level other than off.
// allowFrom is not checked here: it names the calling sender, which is checked per call.
std::optional<Error> CheckSessionChange(const config::AgentSettings& settings, const Caller& caller,
                                        const config::SessionState& next);

}  // namespace sandrun::policy

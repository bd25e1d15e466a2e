// The operator API over per-session exec state (issue 15; config/session_state.h for the file,
// policy/session_overrides.h for what each value does):
//   GET    /v1/agents/{agent}/sessions            {"agentId","sessions":[view, ...]}
//   GET    /v1/agents/{agent}/sessions/{key}      view
//   PATCH  /v1/agents/{agent}/sessions/{key}      {"exec":{"host","security","ask","node"},
//                                                  "elevated":"off|on|ask|full"} -> view
//          (every field optional; null clears that override)
//   DELETE /v1/agents/{agent}/sessions/{key}      clears every override -> view
//   POST   /v1/agents/{agent}/sessions/{key}/directive {"text":"please /exec host=gateway now"}
//          -> {"applied":{...},"invalid":{...},"cleaned":"please now","current":{...}}
// view = {"agentId","sessionKey","exec":{overrides},"elevated"?,"updatedAtMs","updatedBy",
//         "current":{"host","security","ask","node","elevated"}}: `current` is what the
// session's calls are configured with (the override, else the config's value).
// A change is all or nothing: an invalid value, a host outside tools.exec.host, an elevated
// level while tools.elevated.enabled is false, or a hosted tenant's host execution without
// tenants.<id>.hostExecution refuses it (400 / 403) and nothing is saved. Who may call these is
// the front end's to check (operators and admins only).
//
// Pattern of use (the Runtime):
//   SessionChange c = PatchSessionState(ctx, agent, key, body);
//   if (c.changed) publish("session.updated", c.event_json);
#pragma once

#include <string>
#include <string_view>

#include "runner/api/cli_context.h"
#include "runner/api/runtime.h"

namespace sandrun::api {

struct SessionAdminContext {
  GlobalOptions global;   // the server's --config
  std::string state_dir;  // the runtime's
  Principal who;          // the operator (its tenant is the sessions' tenant)
};

RuntimeReply ListSessionStates(const SessionAdminContext& ctx, const std::string& agent);
RuntimeReply ShowSessionState(const SessionAdminContext& ctx, const std::string& agent,
                              const std::string& key);

struct SessionChange {
  RuntimeReply reply;
  bool changed = false;    // the state file was written
  std::string event_json;  // session.updated's payload, when changed
  std::string summary;     // for the audit: "host=gateway elevated=full" / "cleared"
};
SessionChange PatchSessionState(const SessionAdminContext& ctx, const std::string& agent,
                                const std::string& key, std::string_view body);
SessionChange ClearSessionState(const SessionAdminContext& ctx, const std::string& agent,
                                const std::string& key);
SessionChange ApplySessionDirective(const SessionAdminContext& ctx, const std::string& agent,
                                    const std::string& key, std::string_view body);

// Who made a change, for the record: the token's name, else the local user ("root").
std::string OperatorName(const Principal& who);

}  // namespace sandrun::api

// Per-session exec state (SPEC "Session state", issue 15): the `/exec` overrides (host, security,
// ask, node) and the elevated level (off|on|ask|full) an operator set for one (tenant, agent,
// session key), kept across restarts in the tenant's `session-state.json` (the local server's:
// $SANDRUN_HOME/session-state.json; a hosted tenant's: tenants/<id>/session-state.json). Written
// by one writer (state_file.h: atomic, locked, never through a symlink), read by every exec call
// of that session and by `policy check`.
//
// The file:
//   {"version": 1, "agents": {"main": {"review": {"exec": {"host": "gateway", "ask": "always"},
//     "elevated": "full", "updatedAtMs": 1764600000000, "updatedBy": "ops-1"}}}}
// Values are stored normalised (lower case); agent ids and session keys follow ids.h. A value
// outside its set, a bad id or a wrong type is an error naming FILE:LINE:COL (the file is then
// moved aside by the next update, as every state file is); unknown keys are warned about.
//
// Pattern of use:
//   std::string path = config::SessionStatePath(state_dir, tenant);
//   SANDRUN_ASSIGN_OR_RETURN(SessionState s, config::LoadSessionState(path, agent, key));
//   SANDRUN_RETURN_IF_ERROR(config::UpdateSessionStates(path, [&](SessionStates& all) {
//     all.agents[agent][key].elevated = "full"; return Ok(); }));
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runner/config/state_file.h"
#include "sandbox/base/result.h"

namespace sandrun::config {

// One session's overrides; an unset field means "as configured".
struct SessionState {
  std::optional<std::string> host;      // auto | sandbox | gateway | node
  std::optional<std::string> security;  // deny | allowlist | full
  std::optional<std::string> ask;       // off | on-miss | always
  std::optional<std::string> node;      // a node id (non-empty)
  std::optional<std::string> elevated;  // off | on | ask | full
  int64_t updated_at_ms = 0;
  std::string updated_by;  // the token name, or the local user ("uid 0 (root)")

  // No override is set (the session behaves as configured; the entry is dropped on save).
  bool empty() const { return !host && !security && !ask && !node && !elevated; }
  bool operator==(const SessionState&) const = default;
};

struct SessionStates {
  // agent id -> session key -> state (no empty states are kept).
  std::map<std::string, std::map<std::string, SessionState>> agents;
  bool operator==(const SessionStates&) const = default;
};

// The allowed values, in order (for errors and help).
inline const std::vector<const char*> kSessionHostValues = {"auto", "sandbox", "gateway", "node"};
inline const std::vector<const char*> kSessionSecurityValues = {"deny", "allowlist", "full"};
inline const std::vector<const char*> kSessionAskValues = {"off", "on-miss", "always"};
inline const std::vector<const char*> kElevatedLevelValues = {"off", "on", "ask", "full"};

std::string SessionStatePath(const std::string& state_dir, const std::string& tenant);

Result<SessionStates> ParseSessionStates(std::string_view text, const std::string& path,
                                         std::vector<std::string>* warnings);
std::string SerializeSessionStates(const SessionStates& states);
const StateFileFormat<SessionStates>& SessionStatesFormat();

// The whole file (a missing one is empty).
Result<LoadedState<SessionStates>> LoadSessionStates(const std::string& path);
// One session's state (empty when none is kept).
Result<SessionState> LoadSessionState(const std::string& path, const std::string& agent,
                                      const std::string& session_key);
// Read-modify-write under the file's lock; empty states (and agents left without any) are
// dropped before writing. Returns the file as written.
Result<SessionStates> UpdateSessionStates(const std::string& path,
                                          const std::function<Status(SessionStates&)>& mutate);

}  // namespace sandrun::config

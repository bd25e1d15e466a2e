// The identifiers callers name themselves by, checked at every edge (CLI options, server headers,
// tool-call fields) and again by the gate: anything outside the pattern is refused, never
// rewritten, so two different ids can never come to mean one scope, one container or one dir.
//
//   agent id     [A-Za-z0-9][A-Za-z0-9._-]{0,63}
//   session key  [A-Za-z0-9][A-Za-z0-9._:@-]{0,127}
//   tenant id    [a-z0-9][a-z0-9-]{0,31}
//   node id      [A-Za-z0-9][A-Za-z0-9._:@-]{0,127} (a session's /exec node=)
//
// Pattern of use:
//   if (auto bad = config::AgentIdError(id)) return Refuse(*bad);
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandrun::config {

// nullopt when `id` is valid; else the refusal text, naming the value and the rule.
std::optional<std::string> AgentIdError(std::string_view id);
std::optional<std::string> SessionKeyError(std::string_view key);
std::optional<std::string> TenantIdError(std::string_view id);
// A node id a session may be bound to (/exec node=): the session key's rule.
std::optional<std::string> NodeIdError(std::string_view id);
// The first of AgentIdError(agent) and SessionKeyError(session).
std::optional<std::string> CallerIdsError(std::string_view agent, std::string_view session);

}  // namespace sandrun::config

// The part of `sandrun audit` (audit_cmd.h) that looks past the exec policy: what lets commands
// reach the host (tools.elevated, tenants.<id>.hostExecution) and what weakens the sandbox's
// container (sandbox.docker.*). Pure: it reads the loaded config only.
//
//   where (<scope> as below)                  id                          severity
//   <scope>tools.elevated.defaultLevel        elevated-default-full       warn
//   <scope>tools.elevated.allowFrom.<prov>    elevated-allow-from-any     warn
//   <scope>sandbox.docker.capDrop             sandbox-cap-drop            warn
//   <scope>sandbox.docker.network             sandbox-network             warn
//   <scope>sandbox.docker.seccompProfile      sandbox-unconfined          warn
//   <scope>sandbox.docker.apparmorProfile     sandbox-unconfined          warn
//   <scope>sandbox.docker.readOnlyRoot        sandbox-writable-root       info
//   tenants.<id>.hostExecution                tenant-host-execution       warn
//
// <scope> is "" (the global level), "agents.<id>.", "tenants.<t>." or "tenants.<t>.agents.<id>.".
#pragma once

#include <vector>

#include "runner/api/audit_cmd.h"
#include "runner/config/config.h"

namespace sandrun::api {

// The findings in a fixed order: the global level, each agent of cfg.agents by id, then each
// tenant by id (its hostExecution, its global level, its agents by id).
//
// - elevated-default-full: tools.elevated.enabled with defaultLevel "full" and at least one
//   allowFrom sender: an allowed sender's every command runs on the host with security=full,
//   without approval, even when the call does not ask for elevated.
// - elevated-allow-from-any: tools.elevated.enabled and an allowFrom.<provider> entry made only
//   of '*' (it matches every sender of that provider).
//   Both elevated checks are skipped for a tenant without hostExecution (the gate refuses its
//   host calls, elevated ones included).
// - sandbox-cap-drop: capDrop has no "ALL" (nor "CAP_ALL"), any case.
// - sandbox-network: a network other than "none": "host" and "container:<id>" are refused by
//   sandrun at every sandbox call (the message says so), any other network is reachable.
// - sandbox-unconfined: seccompProfile or apparmorProfile "unconfined" (refused at every sandbox
//   call: the message says so).
// - sandbox-writable-root: readOnlyRoot false (info: the container's own filesystem only).
// - tenant-host-execution: tenants.<id>.hostExecution true; the message names what of the
//   tenant's settings then runs on the host.
// A scope repeats no finding (same id, key and value) that a scope it inherits from has: agents
// inherit from the global level, a tenant's global level from the file's, a tenant's agent from
// the tenant's global level and the file's agent of the same id.
std::vector<AuditFinding> AuditHostAndSandbox(const config::Config& cfg);

}  // namespace sandrun::api

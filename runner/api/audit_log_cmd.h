// `sandrun audit log [--tenant T] [--since DURATION] [--json]`: reads the audit log
// ($SANDRUN_HOME/audit/, runner/audit/audit_log.h), oldest first. Text: one line per record,
// "<UTC time> <tenant>/<agent> <token> <tool> <host> <decision> [exit=N] [Nms]: <command>";
// --json: one JSON object per line, as stored. Lines that do not parse are counted on stderr.
// Exit codes: 0, 2 (bad input), 1 (the log cannot be read).
#pragma once

#include <optional>
#include <string>

#include "runner/api/cli_context.h"

namespace CLI {
class App;
}

namespace sandrun::api {

struct AuditLogFlags {
  std::optional<std::string> tenant;  // nullopt: every tenant ("" is the local one)
  std::string since;                  // a duration back from now ("1h"); "" = everything
  bool json = false;
};

// Adds `log` under the `audit` command; returns it.
CLI::App* AddAuditLogCommand(CLI::App& audit, AuditLogFlags& flags);
int RunAuditLogCommand(const GlobalOptions& global, const AuditLogFlags& flags);

}  // namespace sandrun::api

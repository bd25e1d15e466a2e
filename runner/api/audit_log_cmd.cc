#include "runner/api/audit_log_cmd.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "runner/audit/audit_log.h"
#include "runner/config/state_dir.h"
#include "sandbox/base/clock.h"
#include "sandbox/base/duration.h"

namespace sandrun::api {

CLI::App* AddAuditLogCommand(CLI::App& audit, AuditLogFlags& flags) {
  CLI::App* log = audit.add_subcommand(
      "log", "Print the audit log (one record per decision and operator action), oldest first");
  log->add_option("--tenant", flags.tenant, "Only this tenant (\"\" is the local one)");
  log->add_option("--since", flags.since, "Only the last DURATION (30m, 12h, 7d)");
  log->add_flag("--json", flags.json, "One JSON object per line, as stored");
  return log;
}

int RunAuditLogCommand(const GlobalOptions& /*global*/, const AuditLogFlags& flags) {
  audit::AuditFilter filter;
  filter.tenant = flags.tenant;
  if (!flags.since.empty()) {
    auto back = ParseDurationMs(flags.since);
    if (!back) {
      PrintError("--since: " + back.error().ToString());
      return kExitRefused;
    }
    filter.since_ms = UnixMillis() - *back;
  }
  auto state_dir = config::StateDirPath();
  if (!state_dir) {
    PrintError(state_dir.error().ToString());
    return kExitFailure;
  }
  auto read = audit::ReadAuditLog(audit::AuditDir(*state_dir), filter);
  if (!read) {
    PrintError(read.error().ToString());
    return kExitFailure;
  }
  for (const audit::AuditRecord& r : read->records) {
    if (flags.json) {
      std::cout << audit::AuditLine(r) << "\n";
      continue;
    }
    std::cout << UtcTimestamp(r.time_ms) << " " << (r.tenant.empty() ? "\"\"" : r.tenant) << "/"
              << r.agent << " " << (r.token.empty() ? "-" : r.token) << " " << r.tool
              << (r.action.empty() ? "" : ":" + r.action) << " " << (r.host.empty() ? "-" : r.host)
              << " " << r.decision;
    if (r.exit_code) std::cout << " exit=" << *r.exit_code;
    if (r.duration_ms) std::cout << " " << *r.duration_ms << "ms";
    std::cout << ": " << r.command << "\n";
  }
  if (read->skipped_lines > 0) {
    PrintWarning(std::to_string(read->skipped_lines) + " audit log lines did not parse (skipped)");
  }
  return kExitOk;
}

}  // namespace sandrun::api

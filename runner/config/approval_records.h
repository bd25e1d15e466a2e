// The approvals a server was asked for, pending and decided (issue 15): what survives a restart
// and the decision record (who answered, when, what). One file per tenant, the tenant's
// `approvals-record.json` (the local server's: $SANDRUN_HOME/approvals-record.json; a hosted
// tenant's under tenants/<id>/), written by the one state-file writer (state_file.h).
//
// The file:
//   {"version": 1, "approvals": [{"id": "...", "status": "pending", "command": "...",
//     "host": "gateway", "cwd": "...", "agentId": "main", "sessionKey": "main",
//     "createdAtMs": 1, "expiresAtMs": 2, "allowedDecisions": ["allow-once", "deny"],
//     "reason": "...", "request": {...}, "principal": {...},
//     "decision": "allow-once", "decidedBy": "ops-1", "decidedAtMs": 3, "sessionId": "...",
//     "text": "Exec approved (...)"}]}
// `request` (the exec call) and `principal` (who asked) are kept as JSON for the runtime to
// decide the call again after a restart; this layer does not read them. Every pending record is
// kept; of the decided ones, the newest kMaxDecidedRecords.
//
// Pattern of use:
//   std::string path = config::ApprovalRecordsPath(state_dir, tenant);
//   SANDRUN_RETURN_IF_ERROR(config::UpsertApprovalRecord(path, record));
//   SANDRUN_ASSIGN_OR_RETURN(auto loaded, config::LoadApprovalRecords(path));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runner/config/state_file.h"
#include "sandbox/base/result.h"

namespace sandrun::config {

inline constexpr size_t kMaxDecidedRecords = 200;

struct ApprovalRecord {
  std::string id;
  // pending | approved | denied | expired (timed out, askFallback refused) | failed (approved
  // but it could not start) | dropped (could not be kept across a restart)
  std::string status = "pending";
  std::string command;
  std::string host;  // gateway | node
  std::string cwd;
  std::string agent_id;
  std::string session_key;
  int64_t created_ms = 0;
  int64_t expires_ms = 0;
  std::vector<std::string> allowed_decisions;
  std::string reason;          // why approval is needed
  std::string request_json;    // the exec call ("" once decided: nothing re-runs it)
  std::string principal_json;  // who asked ("" once decided)
  // Once decided:
  std::string decision;    // allow-once | allow-always | deny | timeout | restart
  std::string decided_by;  // the token name, the local user, or "askFallback" / "sandrun"
  int64_t decided_ms = 0;
  std::string session_id;  // the background session an approved command runs as
  std::string text;        // the resolution as the event says it
  bool operator==(const ApprovalRecord&) const = default;
};

struct ApprovalRecords {
  std::vector<ApprovalRecord> records;  // oldest first
  bool operator==(const ApprovalRecords&) const = default;
};

std::string ApprovalRecordsPath(const std::string& state_dir, const std::string& tenant);

Result<ApprovalRecords> ParseApprovalRecords(std::string_view text, const std::string& path,
                                             std::vector<std::string>* warnings);
std::string SerializeApprovalRecords(const ApprovalRecords& records);

Result<LoadedState<ApprovalRecords>> LoadApprovalRecords(const std::string& path);
// Replaces the record with the same id (else appends it), then trims decided records to
// kMaxDecidedRecords, under the file's lock.
Status UpsertApprovalRecord(const std::string& path, const ApprovalRecord& record);

}  // namespace sandrun::config

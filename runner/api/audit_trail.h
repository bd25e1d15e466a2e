// What the runtime writes to the audit log (runner/audit/audit_log.h): one line per exec decision
// (with how the run ended, when the call waited for it) and one per operator decision on an
// approval. Every front end goes through the Runtime, so nothing decides without a line.
//
// A server opens the log at start and refuses to start without it (a hosted runner must not
// decide unrecorded); a one-shot CLI opens it per call once the call found its state dir, and
// only warns when it cannot write (a CI job is not failed by its own audit trail).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "runner/api/exec_tool.h"
#include "runner/api/runtime.h"
#include "runner/audit/audit_log.h"
#include "runner/policy/exec_request.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

class AuditTrail {
 public:
  // `state_dir` may be "" (a one-shot call that found none: nothing is written).
  static Result<std::unique_ptr<AuditTrail>> Open(const std::string& state_dir, bool required);

  void Exec(const Principal& who, const policy::ExecRequest& request, const ExecToolResult& result);
  // An operator's answer to approval `id`: `decision` as given, `status` the HTTP status of the
  // answer (only decided ones, 200, are operator actions worth a line).
  void Approval(const Principal& who, const std::string& id, const std::string& decision,
                int status);

 private:
  explicit AuditTrail(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  void Append(audit::AuditRecord record);

  std::string state_dir_;
  std::mutex mu_;
  std::unique_ptr<audit::AuditLog> log_;  // opened on first use when not required
};

}  // namespace sandrun::api

// What the runtime writes to the audit log (runner/audit/audit_log.h): one line per exec decision
// (with how the run ended, when the call waited for it), one per apply_patch call and one per
// operator decision on an approval. Every front end goes through the Runtime, so nothing decides
// without a line.
//
// A server opens the log at start and refuses to start without it, and refuses to run a command
// whose decision line it cannot write (a hosted runner must not run unrecorded); a one-shot CLI
// opens it per call once the call found its state dir, and only warns when it cannot write (a
// CI job is not failed by its own audit trail).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "runner/api/apply_patch_tool.h"
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

  // The decision to run, written before it starts (so a run whose runner dies has its line).
  // An error (only when the log is required) means the command must not run.
  Status Started(const Principal& who, const policy::ExecRequest& request, const std::string& host);
  // The call's end: after Started, an "end" line (exit code, duration; or why it did not
  // start); otherwise the one line of a call that ran nothing (deny, ask, error).
  void Exec(const Principal& who, const policy::ExecRequest& request, const ExecToolResult& result,
            bool started);
  // An apply_patch call, once decided and done: the patch as its command, allow (it changed
  // the workspace), deny (refused, nothing changed) or error (rolled back).
  void Patch(const Principal& who, const std::string& patch, const ApplyPatchToolResult& result);
  // A tool call refused before anything ran by the runtime itself (over a quota): a deny line
  // with the refusal's wire code as its reason. `command` may be "" (tools without one).
  void Refused(const Principal& who, const std::string& tool, const std::string& command,
               const Error& error);
  // An operator's decided answer to approval `id` (its full id): `decision` as given.
  void Approval(const Principal& who, const std::string& id, const std::string& decision);
  // Another operator action (`tool` "sandbox", `action` "remove", its target as the command):
  // `done` says whether it took effect.
  void Operator(const Principal& who, const std::string& tool, const std::string& action,
                const std::string& target, bool done);

 private:
  AuditTrail(std::string state_dir, bool required)
      : state_dir_(std::move(state_dir)), required_(required) {}
  // An error only when required; otherwise a warning is printed.
  Status Append(audit::AuditRecord record);

  std::string state_dir_;
  bool required_ = false;
  std::mutex mu_;
  std::unique_ptr<audit::AuditLog> log_;  // opened on first use when not required
};

}  // namespace sandrun::api

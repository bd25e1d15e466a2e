#include "runner/api/audit_trail.h"

#include <sys/stat.h>

#include "runner/api/cli_context.h"

namespace sandrun::api {
namespace {

audit::AuditRecord Base(const Principal& who) {
  audit::AuditRecord r;
  r.tenant = who.tenant;
  r.token = who.provider == "api" ? who.sender : "";
  r.role = who.role;
  r.agent = who.agent;
  r.session = who.session;
  return r;
}

}  // namespace

Result<std::unique_ptr<AuditTrail>> AuditTrail::Open(const std::string& state_dir, bool required) {
  std::unique_ptr<AuditTrail> trail(new AuditTrail(state_dir));
  if (required) {
    SANDRUN_ASSIGN_OR_RETURN(trail->log_, audit::AuditLog::Open(audit::AuditDir(state_dir)));
  }
  return trail;
}

void AuditTrail::Append(audit::AuditRecord record) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!log_) {
    struct stat st {};
    // A one-shot call that never got as far as its state dir has nothing to record there.
    if (state_dir_.empty() || ::stat(state_dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
    auto opened = audit::AuditLog::Open(audit::AuditDir(state_dir_));
    if (!opened) {
      PrintWarning("audit log: " + opened.error().ToString());
      return;
    }
    log_ = std::move(opened).value();
  }
  if (Status ok = log_->Append(std::move(record)); !ok) {
    PrintWarning("audit log: " + ok.error().ToString());
  }
}

void AuditTrail::Exec(const Principal& who, const policy::ExecRequest& request,
                      const ExecToolResult& result) {
  audit::AuditRecord r = Base(who);
  r.tool = "exec";
  r.command = request.command;
  r.host = result.host;
  if (result.refused) {
    r.decision = "deny";
    r.reason = result.error.WireCode() + ": " + result.error.ToString();
  } else if (result.internal) {
    r.decision = "error";
    r.reason = result.error.WireCode() + ": " + result.error.ToString();
  } else if (result.pending) {
    r.decision = "ask";
    r.approval_id = result.approval_id;
  } else {
    r.decision = "allow";
    if (!result.running) {
      const exec::ExecOutcome& o = result.outcome;
      if (o.status == exec::ExecOutcome::Status::kExited) r.exit_code = o.exit_code;
      if (o.status == exec::ExecOutcome::Status::kSignaled) r.exit_code = 128 + o.signal;
      if (o.status == exec::ExecOutcome::Status::kTimedOut) r.reason = "timed out";
      r.duration_ms = o.duration_ms;
    }
  }
  Append(std::move(r));
}

void AuditTrail::Approval(const Principal& who, const std::string& id, const std::string& decision,
                          int status) {
  if (status != 200) return;
  audit::AuditRecord r = Base(who);
  r.tool = "approval";
  r.action = decision;
  r.decision = decision == "deny" ? "deny" : "allow";
  r.approval_id = id;
  r.answered_by = who.sender.empty() ? who.role : who.sender;
  Append(std::move(r));
}

}  // namespace sandrun::api

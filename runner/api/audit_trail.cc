#include "runner/api/audit_trail.h"

#include <sys/stat.h>

#include "runner/api/cli_context.h"
#include "sandbox/base/json.h"

namespace sandrun::api {
namespace {

audit::AuditRecord Base(const Principal& who) {
  audit::AuditRecord r;
  r.tenant = who.tenant;
  // The bearer token's name; a local socket caller is named by its user.
  r.token = !who.token_name.empty() ? who.token_name : who.provider == "api" ? who.sender : "";
  r.role = who.role;
  r.agent = who.agent;
  r.session = who.session;
  return r;
}

}  // namespace

Result<std::unique_ptr<AuditTrail>> AuditTrail::Open(const std::string& state_dir, bool required) {
  std::unique_ptr<AuditTrail> trail(new AuditTrail(state_dir, required));
  if (required) {
    SANDRUN_ASSIGN_OR_RETURN(trail->log_, audit::AuditLog::Open(audit::AuditDir(state_dir)));
    SANDRUN_RETURN_IF_ERROR(trail->log_->Writable());
  }
  return trail;
}

Status AuditTrail::Append(audit::AuditRecord record) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!log_) {
    struct stat st {};
    // A one-shot call that never got as far as its state dir has nothing to record there.
    if (state_dir_.empty() || ::stat(state_dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Ok();
    }
    auto opened = audit::AuditLog::Open(audit::AuditDir(state_dir_));
    if (!opened) {
      PrintWarning("audit log: " + opened.error().ToString());
      return Ok();
    }
    log_ = std::move(opened).value();
  }
  Status ok = log_->Append(std::move(record));
  if (ok) return Ok();
  PrintWarning("audit log: " + ok.error().ToString());
  if (required_) return std::move(ok).error().Wrap("the audit log cannot be written");
  return Ok();
}

Status AuditTrail::Started(const Principal& who, const policy::ExecRequest& request,
                           const std::string& host) {
  audit::AuditRecord r = Base(who);
  r.tool = "exec";
  r.command = request.command;
  r.host = host;
  r.decision = "allow";
  return Append(std::move(r));
}

void AuditTrail::Exec(const Principal& who, const policy::ExecRequest& request,
                      const ExecToolResult& result, bool started) {
  audit::AuditRecord r = Base(who);
  r.tool = "exec";
  r.command = request.command;
  r.host = result.host;
  if (started) {
    if (result.running) return;  // a background session: its start line is all there is yet
    r.action = "end";
  }
  if (result.refused && started) {
    r.decision = "error";  // allowed, but it could not start
    r.reason = result.error.WireCode() + ": " + result.error.ToString();
  } else if (result.refused) {
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
  (void)Append(std::move(r));
}

void AuditTrail::Patch(const Principal& who, const std::string& patch,
                       const ApplyPatchToolResult& result) {
  audit::AuditRecord r = Base(who);
  r.tool = "apply_patch";
  r.command = patch;
  if (auto doc = ParseJson(result.json); doc && doc->IsObject()) {
    const rapidjson::Value* details = JsonMember(*doc, "details");
    if (details != nullptr) r.host = JsonString(*details, "host");
  }
  r.decision = result.refused ? "deny" : result.internal ? "error" : "allow";
  if (result.refused || result.internal) {
    r.reason = result.error.WireCode() + ": " + result.error.ToString();
  }
  (void)Append(std::move(r));
}

void AuditTrail::Refused(const Principal& who, const std::string& tool, const std::string& command,
                         const Error& error) {
  audit::AuditRecord r = Base(who);
  r.tool = tool;
  r.command = command;
  r.decision = "deny";
  r.reason = error.WireCode() + ": " + error.ToString();
  (void)Append(std::move(r));
}

void AuditTrail::Approval(const Principal& who, const std::string& id,
                          const std::string& decision) {
  audit::AuditRecord r = Base(who);
  r.tool = "approval";
  r.action = decision;
  r.decision = decision == "deny" ? "deny" : "allow";
  r.approval_id = id;
  r.answered_by = who.sender.empty() ? who.role : who.sender;
  (void)Append(std::move(r));
}

void AuditTrail::Operator(const Principal& who, const std::string& tool, const std::string& action,
                          const std::string& target, bool done) {
  audit::AuditRecord r = Base(who);
  r.tool = tool;
  r.action = action;
  r.command = target;
  r.decision = done ? "allow" : "deny";
  r.answered_by = who.sender.empty() ? who.role : who.sender;
  (void)Append(std::move(r));
}

}  // namespace sandrun::api

#include "runner/api/approval_broker.h"

#include <chrono>
#include <cmath>
#include <vector>

#include "runner/api/cli_context.h"
#include "runner/api/exec_approvals.h"
#include "runner/config/approvals_file.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/clock.h"
#include "sandbox/base/json.h"

namespace sandrun::api {
namespace {

std::string ResolvedJson(const PendingApproval& p, const std::string& decision, bool approved,
                         const std::string& session_id, const std::string& by,
                         const std::string& text) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  WriteJsonField(w, "id", p.id);
  WriteJsonField(w, "slug", ApprovalSlug(p.id));
  WriteJsonField(w, "decision", decision);
  w.Key("approved");
  w.Bool(approved);
  if (!session_id.empty()) WriteJsonField(w, "sessionId", session_id);
  if (p.wait && approved) {
    w.Key("waited");
    w.Bool(true);
  }
  WriteJsonField(w, "decidedBy", by);
  WriteJsonField(w, "tenant", p.tenant);
  WriteJsonField(w, "agentId", p.caller.agent_id);
  WriteJsonField(w, "sessionKey", p.caller.session_key);
  WriteJsonField(w, "text", text);
  w.EndObject();
  return buffer.GetString();
}

// A record as the API shows it (without the request and principal it keeps for a restart).
void WriteRecord(JsonWriter& w, const config::ApprovalRecord& r,
                 const std::string* tenant = nullptr) {
  w.StartObject();
  WriteJsonField(w, "id", r.id);
  WriteJsonField(w, "slug", ApprovalSlug(r.id));
  WriteJsonField(w, "status", r.status);
  WriteJsonField(w, "command", r.command);
  WriteJsonField(w, "host", r.host);
  WriteJsonField(w, "cwd", r.cwd);
  WriteJsonField(w, "agentId", r.agent_id);
  WriteJsonField(w, "sessionKey", r.session_key);
  if (tenant != nullptr) WriteJsonField(w, "tenant", *tenant);
  w.Key("createdAtMs");
  w.Int64(r.created_ms);
  w.Key("expiresAtMs");
  w.Int64(r.expires_ms);
  w.Key("allowedDecisions");
  w.StartArray();
  for (const std::string& d : r.allowed_decisions) WriteJsonString(w, d);
  w.EndArray();
  WriteJsonField(w, "reason", r.reason);
  if (r.status != "pending") {
    WriteJsonField(w, "decision", r.decision);
    WriteJsonField(w, "decidedBy", r.decided_by);
    w.Key("decidedAtMs");
    w.Int64(r.decided_ms);
    if (!r.session_id.empty()) WriteJsonField(w, "sessionId", r.session_id);
    WriteJsonField(w, "text", r.text);
  }
  w.EndObject();
}

// What the record of `p` says while it is pending (the request and principal kept).
config::ApprovalRecord PendingRecordOf(const PendingApproval& p) {
  config::ApprovalRecord r;
  r.id = p.id;
  r.status = "pending";
  r.command = p.command;
  r.host = p.host;
  r.cwd = p.gated.plan.cwd;
  r.agent_id = p.caller.agent_id;
  r.session_key = p.caller.session_key;
  r.created_ms = p.created_ms;
  r.expires_ms = p.expires_ms;
  r.allowed_decisions = p.verdict.allowed_decisions;
  r.reason = p.verdict.reason;
  r.request_json = p.request_json;
  r.principal_json = p.principal_json;
  return r;
}

void WritePending(JsonWriter& w, const PendingApproval& p) {
  WriteRecord(w, PendingRecordOf(p), &p.tenant);
}

Result<config::ApprovalRecords> LoadRecords(const std::string& state_dir,
                                            const std::string& tenant) {
  auto loaded = config::LoadApprovalRecords(config::ApprovalRecordsPath(state_dir, tenant));
  if (!loaded) return std::move(loaded).error();
  return std::move(loaded->file);
}

// OpenClaw's notice: N = max(1, round(ms / 1000)) (reference §4.4).
std::string RunningText(const PendingApproval& p, const std::string& session_id,
                        const std::string& command) {
  const int64_t seconds =
      std::max<int64_t>(1, std::llround(static_cast<double>(p.running_notice_ms) / 1000.0));
  return "Exec running (" + p.host + " id=" + p.id + ", session=" + session_id + ", >" +
         std::to_string(seconds) + "s): " + command;
}

}  // namespace

ApprovalBroker::ApprovalBroker(std::string state_dir, RunFn run, PublishFn publish, NowFn now_ms,
                               RunningFn running)
    : state_dir_(std::move(state_dir)),
      run_(std::move(run)),
      publish_(std::move(publish)),
      now_ms_(now_ms ? std::move(now_ms) : NowFn(UnixMillis)),
      running_(std::move(running)),
      timer_([this] { TimerLoop(); }) {}

ApprovalBroker::~ApprovalBroker() { Shutdown(); }

void ApprovalBroker::Record(const PendingApproval& p, const std::string& status,
                            const std::string& decision, const std::string& by,
                            const std::string& session_id, const std::string& text) {
  config::ApprovalRecord r = PendingRecordOf(p);
  if (status != "pending") {
    r.status = status;
    r.request_json.clear();  // decided: nothing re-runs it
    r.principal_json.clear();
    r.decision = decision;
    r.decided_by = by;
    r.decided_ms = now_ms_();
    r.session_id = session_id;
    r.text = text;
  }
  if (Status ok =
          config::UpsertApprovalRecord(config::ApprovalRecordsPath(state_dir_, p.tenant), r);
      !ok) {
    PrintWarning("approval " + p.id + " was not recorded: " + ok.error().ToString() +
                 (status == "pending" ? " (it will not outlive a restart)" : ""));
  }
}

Result<PendingApproval> ApprovalBroker::Register(PendingApproval p) {
  if (p.command.size() > kMaxCommandBytes) {
    return Error::Refusal("invalid-request",
                          "exec needs an operator's approval but the command is " +
                              std::to_string(p.command.size()) + " bytes: longer than the " +
                              std::to_string(kMaxCommandBytes) +
                              " an operator can be asked to review (put it in a script the "
                              "allowlist can name); nothing was run");
  }
  p.id = config::NewEntryId();
  p.created_ms = now_ms_();
  p.expires_ms = p.created_ms + p.timeout_ms;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t of_tenant = 0;
    for (const auto& [id, other] : pending_) of_tenant += other.tenant == p.tenant;
    if (of_tenant >= kMaxPendingPerTenant) {
      return Error::Refusal("quota-exceeded", "tenant \"" + p.tenant + "\" already has " +
                                                  std::to_string(kMaxPendingPerTenant) +
                                                  " approvals pending: an operator must answer "
                                                  "some first; nothing was run");
    }
  }
  // Recorded before anyone can decide it (a decision's record must come after this one). Calls
  // registering at the same moment may pass the cap by as many.
  Record(p, "pending", "", "", "", "");
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_[p.id] = p;
  }
  cv_.notify_all();
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  WritePending(w, p);
  if (publish_) publish_(p.tenant, "approval.requested", buffer.GetString());
  return p;
}

void ApprovalBroker::Restore(PendingApproval p) {
  p.wait = false;  // the call that waited ended with the run before
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_[p.id] = std::move(p);
  }
  cv_.notify_all();
}

void ApprovalBroker::Drop(config::ApprovalRecord record, const std::string& tenant,
                          const std::string& why) {
  const std::string text = "Exec denied (" + (record.host.empty() ? "gateway" : record.host) +
                           " id=" + record.id + ", restart): " + record.command + ": " + why;
  PendingApproval p;  // what the resolution's JSON names
  p.id = record.id;
  p.tenant = tenant;
  p.caller.agent_id = record.agent_id;
  p.caller.session_key = record.session_key;
  record.status = "dropped";
  record.decision = "restart";
  record.decided_by = "sandrun";
  record.decided_ms = now_ms_();
  record.text = text;
  record.request_json.clear();
  record.principal_json.clear();
  if (Status ok =
          config::UpsertApprovalRecord(config::ApprovalRecordsPath(state_dir_, tenant), record);
      !ok) {
    PrintWarning("approval " + record.id + ": " + ok.error().ToString());
  }
  if (publish_) {
    publish_(tenant, "approval.resolved", ResolvedJson(p, "restart", false, "", "sandrun", text));
  }
}

ApprovalBroker::Handoff ApprovalBroker::Await(const std::string& id, const CancelToken* cancel) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (auto h = handoffs_.find(id); h != handoffs_.end()) {
      if (h->second.deciding) {
        // Taken out of pending_ and being resolved: its handoff follows (or the stop).
        if (stopping_) return {};
        cv_.wait_for(lock, std::chrono::milliseconds(100));
        continue;
      }
      Handoff out = std::move(h->second);
      handoffs_.erase(h);
      return out;
    }
    auto p = pending_.find(id);
    if (p == pending_.end()) return {};
    if (stopping_ || (cancel != nullptr && cancel->cancelled())) {
      p->second.wait = false;  // nobody waits any more: an approval runs in the background
      return {};
    }
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

ApprovalBroker::Answer ApprovalBroker::Decide(const std::string& id_or_slug,
                                              const std::string& decision_in,
                                              const std::string& tenant, const std::string& by,
                                              const AgentFilter& agents) {
  const std::string decision = decision_in == "always" ? "allow-always" : decision_in;
  if (decision != "allow-once" && decision != "allow-always" && decision != "deny") {
    return {400,
            RenderToolError("invalid-request", "Unknown decision \"" + decision_in +
                                                   "\". Use allow-once, allow-always or deny.")};
  }
  PendingApproval p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> matches;
    for (const auto& [id, pending] : pending_) {
      if (pending.tenant != tenant || (agents && !agents(pending.caller.agent_id))) continue;
      if (id == id_or_slug || (id_or_slug.size() >= 8 && id.starts_with(id_or_slug))) {
        matches.push_back(id);
      }
    }
    if (matches.empty()) {
      return {404, RenderToolError("unknown-approval",
                                   "No pending approval \"" + id_or_slug +
                                       "\" (it expired, was decided, or never existed).")};
    }
    if (matches.size() > 1) {
      return {409, RenderToolError("ambiguous-approval",
                                   "The short code \"" + id_or_slug +
                                       "\" matches several approvals; use the full id.")};
    }
    auto it = pending_.find(matches[0]);
    bool offered = false;
    for (const std::string& d : it->second.verdict.allowed_decisions) offered |= d == decision;
    if (!offered) {
      std::string allowed;
      for (const std::string& d : it->second.verdict.allowed_decisions) {
        allowed += (allowed.empty() ? "" : ", ") + d;
      }
      return {400, RenderToolError("invalid-request", "Decision \"" + decision +
                                                          "\" is not offered for this approval "
                                                          "(allowed: " +
                                                          allowed + ").")};
    }
    p = std::move(it->second);
    pending_.erase(it);
    if (p.wait) handoffs_[p.id].deciding = true;  // its waiter keeps waiting (Await)
  }
  if (decision == "deny") return Resolve(p, decision, false, "", "user-denied", by);
  return Resolve(p, decision, true, p.verdict.command, "", by);
}

ApprovalBroker::Answer ApprovalBroker::Resolve(const PendingApproval& p,
                                               const std::string& decision, bool approved,
                                               const std::string& command,
                                               const std::string& reason, const std::string& by) {
  const std::string head = "Exec denied (" + p.host + " id=" + p.id + ", ";
  auto finish = [&](const std::string& status, bool ok, const std::string& session_id,
                    const std::string& text) -> Answer {
    if (p.wait) {
      // Before the record's write (slow: lock, fsync): the waiter runs the command meanwhile.
      {
        std::lock_guard<std::mutex> lock(mu_);
        handoffs_[p.id] = Handoff{false, true, ok, decision, ok ? command : "", text};
      }
      cv_.notify_all();
    }
    Record(p, status, decision, by, session_id, text);
    std::string json = ResolvedJson(p, decision, ok, session_id, by, text);
    if (publish_) publish_(p.tenant, "approval.resolved", json);
    return {200, json};
  };
  if (!approved) {
    return finish(decision == "timeout" ? "expired" : "denied", false, "",
                  head + reason + "): " + p.command);
  }
  std::string note;
  if (decision == "allow-always" && !p.verdict.always_patterns.empty()) {
    if (Status saved =
            PersistAllowAlways(state_dir_, p.tenant, p.caller.agent_id, p.verdict.always_patterns);
        !saved) {
      note = " (allow-always was not saved: " + saved.error().ToString() + ")";
    }
  }
  if (p.wait) {
    // The call that asked is waiting: it runs the command itself, as its own result.
    return finish("approved", true, "",
                  "Exec approved (" + p.host + " id=" + p.id + ", " + decision +
                      ", run by the waiting call)" + note + ": " + command);
  }
  Result<std::string> session = run_ ? run_(p, command) : Result<std::string>(std::string());
  if (!session) {
    // Why it did not start: spawn-failed, quota-exceeded (the tenant's sessions), ...
    const std::string why =
        session.error().WireCode() == "quota-exceeded" ? "quota-exceeded" : "spawn-failed";
    return finish("failed", false, "",
                  head + why + "): " + p.command + ": " + session.error().ToString());
  }
  if (p.running_notice_ms > 0 && !session->empty()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      notices_.push_back({now_ms_() + p.running_notice_ms, p, *session, command});
    }
    cv_.notify_all();
  }
  return finish("approved", true, *session,
                "Exec approved (" + p.host + " id=" + p.id + ", " + decision +
                    ", session=" + *session + ")" + note + ": " + command);
}

std::string ApprovalBroker::ListJson(const std::string& tenant, const AgentFilter& agents) const {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("pending");
  w.StartArray();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, p] : pending_) {
      if (p.tenant == tenant && (!agents || agents(p.caller.agent_id))) WritePending(w, p);
    }
  }
  w.EndArray();
  w.Key("decided");
  w.StartArray();
  if (auto records = LoadRecords(state_dir_, tenant)) {
    for (const config::ApprovalRecord& r : records->records) {
      if (r.status != "pending" && (!agents || agents(r.agent_id))) WriteRecord(w, r);
    }
  }
  w.EndArray();
  w.EndObject();
  return buffer.GetString();
}

ApprovalBroker::Answer ApprovalBroker::Show(const std::string& id_or_slug,
                                            const std::string& tenant,
                                            const AgentFilter& agents) const {
  auto records = LoadRecords(state_dir_, tenant);
  if (!records) return {500, RenderToolError("internal", records.error().ToString())};
  std::vector<const config::ApprovalRecord*> matches;
  for (const config::ApprovalRecord& r : records->records) {
    if (agents && !agents(r.agent_id)) continue;
    if (r.id == id_or_slug || (id_or_slug.size() >= 8 && r.id.starts_with(id_or_slug))) {
      matches.push_back(&r);
    }
  }
  if (matches.empty()) {
    return {404,
            RenderToolError("unknown-approval", "No approval \"" + id_or_slug + "\" on record.")};
  }
  if (matches.size() > 1) {
    return {409, RenderToolError("ambiguous-approval", "The short code \"" + id_or_slug +
                                                           "\" matches several approvals; use "
                                                           "the full id.")};
  }
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  WriteRecord(w, *matches[0]);
  return {200, buffer.GetString()};
}

std::string RecordedApprovalsJson(const std::string& state_dir, const std::string& tenant) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  auto records = LoadRecords(state_dir, tenant);
  for (const bool pending : {true, false}) {
    w.Key(pending ? "pending" : "decided");
    w.StartArray();
    if (records) {
      for (const config::ApprovalRecord& r : records->records) {
        if ((r.status == "pending") == pending) WriteRecord(w, r);
      }
    }
    w.EndArray();
  }
  w.EndObject();
  return buffer.GetString();
}

size_t ApprovalBroker::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

std::map<std::string, size_t> ApprovalBroker::PendingByTenant() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, size_t> by;
  for (const auto& [id, p] : pending_) ++by[p.tenant];
  return by;
}

void ApprovalBroker::FireNotices() {
  std::vector<Notice> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = now_ms_();
    for (auto it = notices_.begin(); it != notices_.end();) {
      if (it->due_ms <= now) {
        due.push_back(std::move(*it));
        it = notices_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const Notice& n : due) {
    if (running_ && !running_(n.approval, n.session_id)) continue;  // it already ended
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    WriteJsonField(w, "id", n.approval.id);
    WriteJsonField(w, "sessionId", n.session_id);
    WriteJsonField(w, "tenant", n.approval.tenant);
    WriteJsonField(w, "agentId", n.approval.caller.agent_id);
    WriteJsonField(w, "sessionKey", n.approval.caller.session_key);
    WriteJsonField(w, "text", RunningText(n.approval, n.session_id, n.command));
    w.EndObject();
    if (publish_) publish_(n.approval.tenant, "exec.running", buffer.GetString());
  }
}

void ApprovalBroker::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const int64_t now = now_ms_();
    std::vector<PendingApproval> expired;
    int64_t next = INT64_MAX;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.expires_ms <= now) {
        if (it->second.wait) handoffs_[it->first].deciding = true;
        expired.push_back(std::move(it->second));
        it = pending_.erase(it);
      } else {
        next = std::min(next, it->second.expires_ms);
        ++it;
      }
    }
    bool notice_due = false;
    for (const Notice& n : notices_) {
      notice_due |= n.due_ms <= now;
      next = std::min(next, n.due_ms);
    }
    if (!expired.empty() || notice_due) {
      lock.unlock();
      for (const PendingApproval& p : expired) {
        // No decision in time: askFallback decides (reference §4.4).
        policy::FallbackOutcome f = policy::ResolveAskFallback(p.verdict);
        Resolve(p, "timeout", f.approved, f.command, f.reason, "askFallback");
      }
      FireNotices();
      lock.lock();
      continue;
    }
    const int64_t wait_ms = next == INT64_MAX ? 60000 : std::min<int64_t>(next - now, 60000);
    cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(wait_ms, 1)));
  }
}

void ApprovalBroker::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !timer_.joinable()) return;
    stopping_ = true;
    // Pending approvals stay recorded: the next run restores them (or drops them, with an
    // event). Waiting calls are released (Await sees stopping_).
    pending_.clear();
    notices_.clear();
    handoffs_.clear();
  }
  cv_.notify_all();
  if (timer_.joinable()) timer_.join();
}

}  // namespace sandrun::api

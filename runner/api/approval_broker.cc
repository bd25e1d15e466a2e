#include "runner/api/approval_broker.h"

#include <chrono>
#include <vector>

#include "runner/api/exec_approvals.h"
#include "runner/config/approvals_file.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/clock.h"
#include "sandbox/base/json.h"

namespace sandrun::api {
namespace {

std::string ResolvedJson(const PendingApproval& p, const std::string& decision, bool approved,
                         const std::string& session_id, const std::string& text) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("id");
  WriteJsonString(w, p.id);
  w.Key("slug");
  WriteJsonString(w, ApprovalSlug(p.id));
  w.Key("decision");
  WriteJsonString(w, decision);
  w.Key("approved");
  w.Bool(approved);
  if (!session_id.empty()) {
    w.Key("sessionId");
    WriteJsonString(w, session_id);
  }
  w.Key("tenant");
  WriteJsonString(w, p.tenant);
  w.Key("agentId");
  WriteJsonString(w, p.caller.agent_id);
  w.Key("sessionKey");
  WriteJsonString(w, p.caller.session_key);
  w.Key("text");
  WriteJsonString(w, text);
  w.EndObject();
  return buffer.GetString();
}

void WritePending(JsonWriter& w, const PendingApproval& p) {
  w.StartObject();
  auto str = [&](const char* key, const std::string& value) {
    w.Key(key);
    WriteJsonString(w, value);
  };
  str("id", p.id);
  str("slug", ApprovalSlug(p.id));
  str("command", p.command);
  str("host", p.host);
  str("cwd", p.gated.plan.cwd);
  str("tenant", p.tenant);
  str("agentId", p.caller.agent_id);
  str("sessionKey", p.caller.session_key);
  w.Key("createdAtMs");
  w.Int64(p.created_ms);
  w.Key("expiresAtMs");
  w.Int64(p.expires_ms);
  w.Key("allowedDecisions");
  w.StartArray();
  for (const std::string& d : p.verdict.allowed_decisions) WriteJsonString(w, d);
  w.EndArray();
  str("reason", p.verdict.reason);
  w.EndObject();
}

}  // namespace

ApprovalBroker::ApprovalBroker(std::string state_dir, RunFn run, PublishFn publish, NowFn now_ms)
    : state_dir_(std::move(state_dir)),
      run_(std::move(run)),
      publish_(std::move(publish)),
      now_ms_(now_ms ? std::move(now_ms) : NowFn(UnixMillis)),
      timer_([this] { TimerLoop(); }) {}

ApprovalBroker::~ApprovalBroker() { Shutdown(); }

PendingApproval ApprovalBroker::Register(PendingApproval p) {
  p.id = config::NewEntryId();
  p.created_ms = now_ms_();
  p.expires_ms = p.created_ms + p.timeout_ms;
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

ApprovalBroker::Answer ApprovalBroker::Decide(const std::string& id_or_slug,
                                              const std::string& decision_in,
                                              const std::string& tenant) {
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
      if (pending.tenant != tenant) continue;
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
  }
  if (decision == "deny") return Resolve(p, decision, false, "", "user-denied");
  return Resolve(p, decision, true, p.verdict.command, "");
}

ApprovalBroker::Answer ApprovalBroker::Resolve(const PendingApproval& p,
                                               const std::string& decision, bool approved,
                                               const std::string& command,
                                               const std::string& reason) {
  const std::string head = "Exec denied (" + p.host + " id=" + p.id + ", ";
  if (!approved) {
    std::string text = head + reason + "): " + p.command;
    std::string json = ResolvedJson(p, decision, false, "", text);
    if (publish_) publish_(p.tenant, "approval.resolved", json);
    return {200, json};
  }
  std::string note;
  if (decision == "allow-always" && !p.verdict.always_patterns.empty()) {
    if (Status saved =
            PersistAllowAlways(state_dir_, p.tenant, p.caller.agent_id, p.verdict.always_patterns);
        !saved) {
      note = " (allow-always was not saved: " + saved.error().ToString() + ")";
    }
  }
  Result<std::string> session = run_ ? run_(p, command) : Result<std::string>(std::string());
  if (!session) {
    // Why it did not start: spawn-failed, quota-exceeded (the tenant's sessions), ...
    const std::string why =
        session.error().WireCode() == "quota-exceeded" ? "quota-exceeded" : "spawn-failed";
    std::string text = head + why + "): " + p.command + ": " + session.error().ToString();
    std::string json = ResolvedJson(p, decision, false, "", text);
    if (publish_) publish_(p.tenant, "approval.resolved", json);
    return {200, json};
  }
  std::string text = "Exec approved (" + p.host + " id=" + p.id + ", " + decision +
                     ", session=" + *session + ")" + note + ": " + command;
  std::string json = ResolvedJson(p, decision, true, *session, text);
  if (publish_) publish_(p.tenant, "approval.resolved", json);
  return {200, json};
}

std::string ApprovalBroker::ListJson(const std::string& tenant) const {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("pending");
  w.StartArray();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, p] : pending_) {
      if (p.tenant == tenant) WritePending(w, p);
    }
  }
  w.EndArray();
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

void ApprovalBroker::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const int64_t now = now_ms_();
    std::vector<PendingApproval> expired;
    int64_t next = INT64_MAX;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.expires_ms <= now) {
        expired.push_back(std::move(it->second));
        it = pending_.erase(it);
      } else {
        next = std::min(next, it->second.expires_ms);
        ++it;
      }
    }
    if (!expired.empty()) {
      lock.unlock();
      for (const PendingApproval& p : expired) {
        // No decision in time: askFallback decides (reference §4.4).
        policy::FallbackOutcome f = policy::ResolveAskFallback(p.verdict);
        Resolve(p, "timeout", f.approved, f.command, f.reason);
      }
      lock.lock();
      continue;
    }
    const int64_t wait_ms = next == INT64_MAX ? 60000 : std::min<int64_t>(next - now, 60000);
    cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(wait_ms, 1)));
  }
}

void ApprovalBroker::Shutdown() {
  std::map<std::string, PendingApproval> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !timer_.joinable()) return;
    stopping_ = true;
    dropped.swap(pending_);
  }
  cv_.notify_all();
  if (timer_.joinable()) timer_.join();
  for (const auto& [id, p] : dropped) {
    if (publish_) {
      publish_(p.tenant, "approval.resolved",
               ResolvedJson(
                   p, "shutdown", false, "",
                   "Exec denied (" + p.host + " id=" + p.id + ", server-shutdown): " + p.command));
    }
  }
}

}  // namespace sandrun::api

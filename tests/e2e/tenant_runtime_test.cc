// The runtime's per-tenant quotas, events and metrics (issue 14), in-process: a real Runtime on a
// private SANDRUN_HOME, principals of two tenants, the real dockerd and sandrun-sandbox:minimal.
// A call over a quota gets 429 quota-exceeded with a Retry-After, an audit line, a metrics count,
// and nothing runs (no session, no container); the other tenant is unaffected. A tenant's event
// subscriber never sees another tenant's events; a resume after an id replays exactly the events
// it missed, across a runtime restart too.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runner/api/runtime.h"
#include "sandbox/base/json.h"
#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

using api::Principal;
using api::Runtime;
using api::RuntimeReply;
using api::TenantFilter;

std::string ExecCall(const std::string& command, bool background = false) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("tool");
  w.String("exec");
  w.Key("command");
  WriteJsonString(w, command);
  if (background) {
    w.Key("background");
    w.Bool(true);
  }
  w.EndObject();
  return buffer.GetString();
}

std::string ProcessCall(const std::string& action, const std::string& id = "") {
  return "{\"tool\":\"process\",\"action\":\"" + action + "\"" +
         (id.empty() ? "" : ",\"sessionId\":\"" + id + "\"") + "}";
}

std::string ErrorCode(const RuntimeReply& r) {
  auto doc = ParseJson(r.json);
  if (!doc || !JsonMember(*doc, "error")) return "";
  return JsonString(*JsonMember(*doc, "error"), "code");
}

std::string DetailOf(const RuntimeReply& r, const char* key) {
  auto doc = ParseJson(r.json);
  if (!doc) return "";
  const auto* d = JsonMember(*doc, "details");
  return d ? JsonString(*d, key) : "";
}

class TenantRuntime : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    ::setenv("SANDRUN_HOME", home_.c_str(), 1);
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", PublicPath().c_str(), 1);
  }
  void TearDown() override {
    StopRuntime();
    ::setenv("PATH", old_path_.c_str(), 1);
    ::unsetenv("SANDRUN_HOME");
    SandrunHome::TearDown();
  }
  // Sandbox execs on the small image; tenants.<id> with `alpha_quotas` for alpha, none for beta.
  void TenantsConfig(const std::string& alpha_quotas) {
    MinimalSandboxConfig(
        "", "\"tenants\": {\"alpha\": {\"quotas\": {" + alpha_quotas + "}}, \"beta\": {}}");
  }
  void StartRuntime() {
    api::GlobalOptions global;
    global.workspace = workspace_;
    auto started = Runtime::Start(global, {home_ + "/sandrun.sock", false});
    ASSERT_TRUE(started) << started.error().ToString();
    runtime_ = std::move(started).value();
  }
  void StopRuntime() {
    if (!runtime_) return;
    runtime_->CloseEvents();
    runtime_->Shutdown();
    runtime_.reset();
  }
  static Principal Of(const std::string& tenant) {
    Principal who;
    who.tenant = tenant;
    who.role = "agent";
    who.token_name = "tok-" + tenant;
    who.sender = who.token_name;
    return who;
  }
  // The ids of the tenant's sessions in `process list`.
  std::vector<std::string> SessionsOf(const std::string& tenant) {
    RuntimeReply r = runtime_->Process(Of(tenant), ProcessCall("list"));
    std::vector<std::string> ids;
    auto doc = ParseJson(r.json);
    if (!doc) return ids;
    const auto* d = JsonMember(*doc, "details");
    const auto* list = d ? JsonMember(*d, "sessions") : nullptr;
    if (list == nullptr || !list->IsArray()) return ids;
    for (const auto& s : list->GetArray()) ids.push_back(JsonString(s, "sessionId"));
    return ids;
  }
  // Audit lines with `decision` and a reason starting with `reason`, of `tenant`.
  int AuditLines(const std::string& tenant, const std::string& decision,
                 const std::string& reason) {
    std::ifstream in(home_ + "/audit/audit.jsonl");
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      auto doc = ParseJson(line);
      if (!doc) continue;
      if (JsonString(*doc, "tenant") == tenant && JsonString(*doc, "decision") == decision &&
          JsonString(*doc, "reason").rfind(reason, 0) == 0) {
        ++n;
      }
    }
    return n;
  }
  void ExpectOverQuota(const RuntimeReply& r, const std::string& quota) {
    EXPECT_EQ(r.status, 429) << r.json;
    EXPECT_EQ(ErrorCode(r), "quota-exceeded") << r.json;
    EXPECT_GT(r.retry_after_seconds, 0);
    EXPECT_LE(r.retry_after_seconds, 60);
    EXPECT_NE(r.json.find(quota), std::string::npos) << r.json;
  }

  std::unique_ptr<Runtime> runtime_;
  std::string old_path_;
};

TEST_F(TenantRuntime, RequestsPerMinuteRefusesWith429AndRunsNothing) {
  TenantsConfig("\"requestsPerMinute\": 2");
  StartRuntime();
  const Principal alpha = Of("alpha");
  // Two calls of any tool fill the window (policy checks start no container).
  const std::string check = "{\"tool\":\"exec\",\"command\":\"echo hi\"}";
  EXPECT_EQ(runtime_->PolicyCheck(alpha, check).status, 200);
  EXPECT_EQ(runtime_->Process(alpha, ProcessCall("list")).status, 200);

  RuntimeReply over = runtime_->Exec(alpha, ExecCall("echo should-not-run", true));
  ExpectOverQuota(over, "requestsPerMinute");
  EXPECT_EQ(ContainerCount(), 0u) << "nothing may have run";
  EXPECT_EQ(runtime_->session_count(), 0u);
  ExpectOverQuota(runtime_->Process(alpha, ProcessCall("list")), "requestsPerMinute");
  EXPECT_EQ(AuditLines("alpha", "deny", "quota-exceeded"), 2);
  const std::string metrics = runtime_->MetricsText(TenantFilter::Tenant("alpha"));
  EXPECT_NE(metrics.find("sandrun_quota_rejections_total{tenant=\"alpha\",quota="
                         "\"requestsPerMinute\"} 2"),
            std::string::npos)
      << metrics;

  // The other tenant is unaffected, and sees none of alpha's series.
  RuntimeReply beta = runtime_->Exec(Of("beta"), ExecCall("echo beta-ran"));
  EXPECT_EQ(beta.status, 200) << beta.json;
  EXPECT_NE(beta.json.find("beta-ran"), std::string::npos) << beta.json;
  const std::string beta_metrics = runtime_->MetricsText(TenantFilter::Tenant("beta"));
  EXPECT_EQ(beta_metrics.find("tenant=\"alpha\""), std::string::npos) << beta_metrics;
  EXPECT_NE(beta_metrics.find(
                "sandrun_tool_calls_total{tenant=\"beta\",tool=\"exec\",decision=\"allow\"} 1"),
            std::string::npos)
      << beta_metrics;
  EXPECT_NE(beta_metrics.find("sandrun_exec_duration_seconds_count{tenant=\"beta\"} 1"),
            std::string::npos)
      << beta_metrics;
  EXPECT_EQ(metrics.find("sandrun_requests_total"), std::string::npos)
      << "server-wide series are the admin's: " << metrics;
  // The admin's view: every tenant, the server-wide series, the containers counted.
  const std::string all = runtime_->MetricsText(TenantFilter::All());
  EXPECT_NE(all.find("sandrun_requests_total "), std::string::npos) << all;
  EXPECT_NE(all.find("tenant=\"alpha\""), std::string::npos) << all;
  EXPECT_NE(all.find("tenant=\"beta\""), std::string::npos) << all;
  EXPECT_NE(all.find("sandrun_sandbox_containers{"), std::string::npos) << all;
  EXPECT_GT(ContainerCount(), 0u) << "beta's call ran in the sandbox";
  // The local server's tenant "" never has quotas.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(runtime_->Process(Of(""), ProcessCall("list")).status, 200);
}

TEST_F(TenantRuntime, MaxSessionsCountsHeldSessionsUntilRemoved) {
  TenantsConfig("\"maxSessions\": 1");
  StartRuntime();
  const Principal alpha = Of("alpha");
  RuntimeReply first = runtime_->Exec(alpha, ExecCall("sleep 30", true));
  ASSERT_EQ(first.status, 200) << first.json;
  const std::string id = DetailOf(first, "sessionId");
  ASSERT_FALSE(id.empty()) << first.json;
  const size_t containers = ContainerCount();

  ExpectOverQuota(runtime_->Exec(alpha, ExecCall("echo second", true)), "maxSessions");
  // A foreground call may become a session too (its yield window): refused as well.
  ExpectOverQuota(runtime_->Exec(alpha, ExecCall("echo third")), "maxSessions");
  EXPECT_EQ(SessionsOf("alpha"), std::vector<std::string>{id});
  EXPECT_EQ(ContainerCount(), containers);
  EXPECT_EQ(AuditLines("alpha", "deny", "quota-exceeded"), 2);

  // Beta holds its own sessions.
  RuntimeReply beta = runtime_->Exec(Of("beta"), ExecCall("sleep 30", true));
  EXPECT_EQ(beta.status, 200) << beta.json;
  EXPECT_EQ(SessionsOf("beta").size(), 1u);

  // A killed session is still held (finished, not removed); removing it frees the slot.
  EXPECT_EQ(runtime_->Process(alpha, ProcessCall("kill", id)).status, 200);
  ExpectOverQuota(runtime_->Exec(alpha, ExecCall("echo fourth", true)), "maxSessions");
  EXPECT_EQ(runtime_->Process(alpha, ProcessCall("remove", id)).status, 200);
  RuntimeReply again = runtime_->Exec(alpha, ExecCall("echo fifth", true));
  EXPECT_EQ(again.status, 200) << again.json;
}

TEST_F(TenantRuntime, MaxConcurrentExecsCountsRunningSessions) {
  TenantsConfig("\"maxConcurrentExecs\": 1");
  StartRuntime();
  const Principal alpha = Of("alpha");
  RuntimeReply first = runtime_->Exec(alpha, ExecCall("sleep 30", true));
  ASSERT_EQ(first.status, 200) << first.json;
  const std::string id = DetailOf(first, "sessionId");

  ExpectOverQuota(runtime_->Exec(alpha, ExecCall("echo busy")), "maxConcurrentExecs");
  const std::string metrics = runtime_->MetricsText(TenantFilter::Tenant("alpha"));
  EXPECT_NE(metrics.find("sandrun_running_sessions{tenant=\"alpha\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("sandrun_quota_rejections_total{tenant=\"alpha\",quota="
                         "\"maxConcurrentExecs\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_EQ(SessionsOf("alpha"), std::vector<std::string>{id});
  EXPECT_EQ(runtime_->Exec(Of("beta"), ExecCall("echo beta")).status, 200);

  // Once it no longer runs, the slot is free (a finished session is not an exec in progress).
  EXPECT_EQ(runtime_->Process(alpha, ProcessCall("kill", id)).status, 200);
  RuntimeReply after = runtime_->Exec(alpha, ExecCall("echo free-again"));
  EXPECT_EQ(after.status, 200) << after.json;
  EXPECT_NE(after.json.find("free-again"), std::string::npos) << after.json;
}

TEST_F(TenantRuntime, ReloadTakesNewQuotasAndKeepsThemWhenTheConfigIsBroken) {
  TenantsConfig("");
  StartRuntime();
  const Principal alpha = Of("alpha");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(runtime_->Process(alpha, ProcessCall("list")).status, 200);

  TenantsConfig("\"requestsPerMinute\": 1");
  ASSERT_TRUE(runtime_->Reload());
  EXPECT_EQ(runtime_->Process(alpha, ProcessCall("list")).status, 200);
  ExpectOverQuota(runtime_->Process(alpha, ProcessCall("list")), "requestsPerMinute");

  Config("{\"tenants\": {\"alpha\": {\"quotas\": {\"requestsPerMinute\": \"many\"}}}}");
  Status reloaded = runtime_->Reload();
  ASSERT_FALSE(reloaded);
  EXPECT_EQ(reloaded.error().WireCode(), "invalid-config");
  EXPECT_NE(reloaded.error().ToString().find("requestsPerMinute"), std::string::npos)
      << reloaded.error().ToString();
  ExpectOverQuota(runtime_->Process(alpha, ProcessCall("list")), "requestsPerMinute");
}

TEST_F(TenantRuntime, ATenantsToolPolicyDeniesItsProcessCalls) {
  MinimalSandboxConfig("", R"("tenants": {"alpha": {"tools": {"deny": ["process"]}}, "beta": {}})");
  StartRuntime();
  RuntimeReply alpha = runtime_->Process(Of("alpha"), ProcessCall("poll", "calm-bison"));
  EXPECT_EQ(alpha.status, 400) << alpha.json;
  EXPECT_EQ(ErrorCode(alpha), "tool-denied") << alpha.json;
  EXPECT_EQ(AuditLines("alpha", "deny", "tool-denied"), 1);
  EXPECT_EQ(runtime_->Process(Of("beta"), ProcessCall("list")).status, 200);
  // A config that no longer loads: the one in force decides, as it does for the quotas.
  Config("{\"tools\": ");
  EXPECT_EQ(ErrorCode(runtime_->Process(Of("alpha"), ProcessCall("list"))), "tool-denied");
  EXPECT_EQ(runtime_->Process(Of("beta"), ProcessCall("list")).status, 200);
}

// Waits until the session no longer runs (or 30 s); its final poll.
RuntimeReply PollUntilDone(Runtime& runtime, const Principal& who, const std::string& id) {
  RuntimeReply r;
  for (int i = 0; i < 60; ++i) {
    r = runtime.Process(who, "{\"tool\":\"process\",\"action\":\"poll\",\"sessionId\":\"" + id +
                                 "\",\"timeout\":500}");
    if (DetailOf(r, "status") != "running") return r;
  }
  ADD_FAILURE() << id << " did not finish: " << r.json;
  return r;
}

// `process log` of a session: {text, totalChars, truncated}.
struct LogOf {
  std::string text;
  int64_t total_chars = -1;
  bool truncated = false;
};
LogOf ReadLog(Runtime& runtime, const Principal& who, const std::string& id) {
  RuntimeReply r = runtime.Process(who, ProcessCall("log", id));
  LogOf log;
  auto doc = ParseJson(r.json);
  if (!doc) return log;
  if (const auto* content = JsonMember(*doc, "content");
      content && content->IsArray() && !content->Empty()) {
    log.text = JsonString((*content)[0], "text");
  }
  if (const auto* d = JsonMember(*doc, "details")) {
    log.total_chars = JsonInt(*d, "totalChars", -1);
    log.truncated = JsonBool(*d, "truncated");
  }
  return log;
}

TEST_F(TenantRuntime, MaxLogBytesDropsOldestFinishedLogsFirstThenCapsRunningOnes) {
  TenantsConfig("\"maxLogBytes\": 4096");
  StartRuntime();
  const Principal alpha = Of("alpha");
  auto print = [](const char* mark, int bytes) {
    return std::string("echo ") + mark + "; head -c " + std::to_string(bytes) +
           " /dev/zero | tr '\\0' x; echo";
  };
  const std::string a =
      DetailOf(runtime_->Exec(alpha, ExecCall(print("A-HEAD", 3000), true)), "sessionId");
  ASSERT_FALSE(a.empty());
  PollUntilDone(*runtime_, alpha, a);
  EXPECT_GT(ReadLog(*runtime_, alpha, a).total_chars, 3000);
  const std::string b =
      DetailOf(runtime_->Exec(alpha, ExecCall(print("B-HEAD", 3000), true)), "sessionId");
  ASSERT_FALSE(b.empty());
  PollUntilDone(*runtime_, alpha, b);
  // Over 4096 together: the older finished log (A) is dropped, B's is kept whole.
  LogOf a_log = ReadLog(*runtime_, alpha, a);
  EXPECT_EQ(a_log.total_chars, 0) << a_log.text;
  EXPECT_TRUE(a_log.truncated);
  LogOf b_log = ReadLog(*runtime_, alpha, b);
  EXPECT_GT(b_log.total_chars, 3000);
  EXPECT_FALSE(b_log.truncated);
  EXPECT_NE(b_log.text.find("B-HEAD"), std::string::npos);
  EXPECT_EQ(SessionsOf("alpha").size(), 2u) << "the sessions stay, only their logs go";

  // Beta's logs are its own: the same output is kept.
  const std::string beta_id =
      DetailOf(runtime_->Exec(Of("beta"), ExecCall(print("BETA", 6000), true)), "sessionId");
  PollUntilDone(*runtime_, Of("beta"), beta_id);
  EXPECT_GT(ReadLog(*runtime_, Of("beta"), beta_id).total_chars, 6000);

  // A running session past the quota (once B's log is gone too) keeps its head on disk and its
  // tail in memory, and is marked truncated.
  const std::string c = DetailOf(
      runtime_->Exec(alpha,
                     ExecCall(print("C-HEAD", 5000) + "; sleep 1; echo C-TAIL; sleep 30", true)),
      "sessionId");
  ASSERT_FALSE(c.empty());
  RuntimeReply polled;
  for (int i = 0; i < 60; ++i) {
    polled = runtime_->Process(alpha, "{\"tool\":\"process\",\"action\":\"poll\",\"sessionId\":\"" +
                                          c + "\",\"timeout\":500}");
    if (polled.json.find("C-TAIL") != std::string::npos) break;
  }
  EXPECT_NE(polled.json.find("C-TAIL"), std::string::npos) << polled.json;
  EXPECT_EQ(ReadLog(*runtime_, alpha, b).total_chars, 0);
  LogOf c_log = ReadLog(*runtime_, alpha, c);
  EXPECT_NE(c_log.text.find("C-HEAD"), std::string::npos) << c_log.text;
  EXPECT_EQ(c_log.text.find("C-TAIL"), std::string::npos) << c_log.text;
  EXPECT_TRUE(c_log.truncated);
  RuntimeReply list = runtime_->Process(alpha, ProcessCall("list"));
  EXPECT_NE(list.json.find("\"truncated\":true"), std::string::npos) << list.json;
  EXPECT_EQ(runtime_->Process(alpha, ProcessCall("kill", c)).status, 200);
}

// Reads the subscription's events until one of `type` for `session` arrived (or 30 s).
std::vector<Runtime::Event> EventsUntil(Runtime& runtime,
                                        const std::shared_ptr<Runtime::Subscription>& sub,
                                        const std::string& type, const std::string& session) {
  std::vector<Runtime::Event> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    Runtime::Event e;
    if (!runtime.NextEvent(sub, &e, 500)) continue;
    got.push_back(e);
    if (e.type == type && e.json.find(session) != std::string::npos) return got;
  }
  ADD_FAILURE() << "no " << type << " for " << session;
  return got;
}

// What the subscription has queued now (without waiting for more).
std::vector<Runtime::Event> Drain(Runtime& runtime,
                                  const std::shared_ptr<Runtime::Subscription>& sub) {
  std::vector<Runtime::Event> got;
  Runtime::Event e;
  while (runtime.NextEvent(sub, &e, 1)) got.push_back(e);
  return got;
}

std::vector<uint64_t> Ids(const std::vector<Runtime::Event>& events) {
  std::vector<uint64_t> ids;
  for (const auto& e : events) ids.push_back(e.id);
  return ids;
}

TEST_F(TenantRuntime, EventsStayWithTheirTenantAndResumeAfterAnIdAcrossARestart) {
  TenantsConfig("");
  StartRuntime();
  auto alpha_sub = runtime_->Subscribe(TenantFilter::Tenant("alpha"));
  auto beta_sub = runtime_->Subscribe(TenantFilter::Tenant("beta"));
  auto all_sub = runtime_->Subscribe(TenantFilter::All());

  RuntimeReply a1 = runtime_->Exec(Of("alpha"), ExecCall("echo alpha-one", true));
  const std::string a1_id = DetailOf(a1, "sessionId");
  RuntimeReply b1 = runtime_->Exec(Of("beta"), ExecCall("echo beta-one; exit 3", true));
  const std::string b1_id = DetailOf(b1, "sessionId");
  ASSERT_FALSE(a1_id.empty() || b1_id.empty()) << a1.json << b1.json;
  auto alpha_seen = EventsUntil(*runtime_, alpha_sub, "exec.finished", a1_id);
  auto beta_seen = EventsUntil(*runtime_, beta_sub, "exec.failed", b1_id);

  ASSERT_EQ(alpha_seen.size(), 2u);  // session.started, exec.finished
  for (const auto& e : alpha_seen) {
    EXPECT_EQ(e.tenant, "alpha");
    EXPECT_GT(e.id, 0u);
    EXPECT_EQ(e.json.find("beta"), std::string::npos) << e.json;
  }
  for (const auto& e : beta_seen) EXPECT_EQ(e.tenant, "beta") << e.json;
  EXPECT_LT(alpha_seen[0].id, alpha_seen[1].id);
  // Structured fields of the end.
  auto end = ParseJson(beta_seen.back().json);
  ASSERT_TRUE(end) << beta_seen.back().json;
  EXPECT_EQ(JsonString(*end, "sessionId"), b1_id);
  EXPECT_EQ(JsonString(*end, "tenant"), "beta");
  EXPECT_EQ(JsonString(*end, "status"), "failed");
  EXPECT_EQ(JsonInt(*end, "exitCode", -1), 3);
  ASSERT_NE(JsonMember(*end, "signal"), nullptr);
  EXPECT_TRUE(JsonMember(*end, "signal")->IsNull());
  EXPECT_FALSE(JsonBool(*end, "timedOut", true));
  // The admin's stream has both tenants' events.
  auto all_seen = EventsUntil(*runtime_, all_sub, "exec.failed", b1_id);
  std::set<std::string> tenants;
  for (const auto& e : all_seen) tenants.insert(e.tenant);
  for (const auto& e : Drain(*runtime_, all_sub)) tenants.insert(e.tenant);
  EXPECT_EQ(tenants, (std::set<std::string>{"alpha", "beta"}));

  // More alpha events while a subscriber is away; resuming after the first replays exactly the
  // ones after it (and no beta event).
  RuntimeReply a2 = runtime_->Exec(Of("alpha"), ExecCall("echo alpha-two", true));
  const std::string a2_id = DetailOf(a2, "sessionId");
  auto more = EventsUntil(*runtime_, alpha_sub, "exec.finished", a2_id);
  std::vector<Runtime::Event> expected(alpha_seen.begin() + 1, alpha_seen.end());
  expected.insert(expected.end(), more.begin(), more.end());
  auto resumed = runtime_->Subscribe(TenantFilter::Tenant("alpha"), alpha_seen[0].id);
  EXPECT_EQ(Ids(Drain(*runtime_, resumed)), Ids(expected));

  // A restart keeps the ring: the same replay, and new ids go on after the old ones.
  const uint64_t last_before = more.back().id;
  StopRuntime();
  StartRuntime();
  auto after_restart = runtime_->Subscribe(TenantFilter::Tenant("alpha"), alpha_seen[0].id);
  auto replayed = Drain(*runtime_, after_restart);
  EXPECT_EQ(Ids(replayed), Ids(expected));
  for (size_t i = 0; i < replayed.size() && i < expected.size(); ++i) {
    EXPECT_EQ(replayed[i].json, expected[i].json);
  }
  auto beta_after = runtime_->Subscribe(TenantFilter::Tenant("beta"), 0);
  for (const auto& e : Drain(*runtime_, beta_after)) EXPECT_EQ(e.tenant, "beta") << e.json;
  RuntimeReply a3 = runtime_->Exec(Of("alpha"), ExecCall("echo alpha-three", true));
  auto fresh = EventsUntil(*runtime_, after_restart, "exec.finished", DetailOf(a3, "sessionId"));
  ASSERT_FALSE(fresh.empty());
  EXPECT_GT(fresh.front().id, last_before);
}

}  // namespace
}  // namespace sandrun::testing

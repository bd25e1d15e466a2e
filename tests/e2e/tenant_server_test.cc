// The multi-tenant server through the binary on a real TLS listener (loopback): tokens (401),
// roles and tenants (403), two tenants x several agents that cannot see each other's sessions,
// approvals or events, approvals an agent cannot answer, quotas (429, nothing ran), revocation
// with SIGHUP, and audit lines that match the calls one to one.
#include "tests/e2e/tenant_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace sandrun::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kExecHi[] = R"({"tool":"exec","command":"echo hi"})";

std::string ProcessCall(const std::string& action, const std::string& id,
                        const std::string& extra = "") {
  return R"({"tool":"process","action":")" + action + R"(","sessionId":")" + id + "\"" + extra +
         "}";
}

class TenantServerTest : public TenantServer {
 protected:
  // A background sandbox session of the token's tenant; its id.
  std::string Background(const std::string& token, const std::string& command,
                         const std::vector<std::string>& headers = {}) {
    auto r = Post("/v1/tools/exec", token,
                  R"({"tool":"exec","background":true,"command":")" + command + "\"}", headers);
    EXPECT_EQ(r.status, 200) << r.body;
    auto doc = r.json();
    EXPECT_EQ(Details(doc, "status"), "running") << r.body;
    return Details(doc, "sessionId");
  }
  // Polls until the session is no longer running; its log.
  std::string Finish(const std::string& token, const std::string& id,
                     const std::vector<std::string>& headers = {}) {
    for (int i = 0; i < 60; ++i) {
      auto r =
          Post("/v1/tools/process", token, ProcessCall("poll", id, R"(,"timeout":1000)"), headers);
      EXPECT_EQ(r.status, 200) << r.body;
      if (Details(r.json(), "status") != "running") break;
    }
    auto log = Post("/v1/tools/process", token, ProcessCall("log", id), headers);
    EXPECT_EQ(log.status, 200) << log.body;
    return log.body;
  }
  std::vector<std::string> AuditLines() {
    std::vector<std::string> lines;
    std::stringstream in(ReadWhole(home_ + "/audit/audit.jsonl"));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

TEST_F(TenantServerTest, TokenlessInvalidExpiredAndRevokedTokensGet401AndRunNothing) {
  Tenants(R"("acme": {})");
  const std::string good = Token("acme", "agent", {"--name", "good"});
  const std::string doomed = Token("acme", "agent", {"--name", "doomed"});
  const std::string brief = Token("acme", "agent", {"--name", "brief", "--expires", "1s"});
  StartTls();

  auto missing = Post("/v1/tools/exec", "", kExecHi);
  EXPECT_EQ(missing.status, 401) << missing.body;
  EXPECT_EQ(missing.error_code(), "unauthorized");
  EXPECT_TRUE(missing.HasHeader("WWW-Authenticate: Bearer realm=\"sandrun\"")) << missing.headers;
  // Every path, known or not, asks for the token first: nothing about the routes leaks.
  EXPECT_EQ(Get("/healthz", "").status, 401);
  EXPECT_EQ(Get("/no/such/route", "").status, 401);

  auto invalid = Post("/v1/tools/exec", "sandrun_" + std::string(64, 'a'), kExecHi);
  EXPECT_EQ(invalid.status, 401);
  EXPECT_TRUE(invalid.HasHeader("error=\"invalid_token\"")) << invalid.headers;
  auto not_bearer = Post("/v1/tools/exec", "", kExecHi, {"Authorization: Basic Zm9vOmJhcg=="});
  EXPECT_EQ(not_bearer.status, 401);

  // Expiry: a one-second token stops working once its second is over.
  HttpResult expired;
  for (int i = 0; i < 100; ++i) {
    expired = Post("/v1/tools/exec", brief, kExecHi);
    if (expired.status == 401) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(expired.status, 401) << expired.body;
  EXPECT_NE(expired.body.find("token expired"), std::string::npos) << expired.body;

  // Revoked and reloaded (SIGHUP): 401 for it, the other token keeps working.
  EXPECT_EQ(Post("/v1/tools/exec", doomed, kExecHi).status, 200);
  ASSERT_EQ(Sandrun({"token", "revoke", "doomed"}).exit_code, 0);
  Reload();
  auto revoked = Post("/v1/tools/exec", doomed, kExecHi);
  EXPECT_EQ(revoked.status, 401);
  EXPECT_NE(revoked.body.find("token revoked"), std::string::npos) << revoked.body;
  auto still = Post("/v1/tools/exec", good, kExecHi);
  EXPECT_EQ(still.status, 200) << still.body;
  EXPECT_NE(still.body.find("\"hi\""), std::string::npos) << still.body;
  // The server is still up after SIGHUP (it used to stop).
  EXPECT_EQ(Get("/healthz", good).status, 200);

  // Only the calls that got through were decided (and audited), each under its token's name:
  // one for "doomed" (before it was revoked), one for "good", the rest "brief"'s.
  std::map<std::string, size_t> decided;
  for (const auto& line : AuditLines()) {
    if (line.find("\"action\":\"end\"") != std::string::npos) continue;
    auto doc = ParseJson(line);
    ASSERT_TRUE(doc) << line;
    ++decided[JsonString(*doc, "token")];
  }
  EXPECT_EQ(decided["doomed"], 1u);
  EXPECT_EQ(decided["good"], 1u);
  EXPECT_EQ(decided.size(), decided.count("brief") + 2) << "a line without a known token";
}

TEST_F(TenantServerTest, RolesTenantsAgentsAndDirectoriesAreCheckedWith403) {
  Tenants(R"("acme": {}, "globex": {})");
  const std::string agent = Token("acme", "agent", {"--agents", "main,build-*"});
  const std::string operator_token = Token("acme", "operator");
  StartTls();

  auto approvals = Get("/v1/approvals", agent);
  EXPECT_EQ(approvals.status, 403) << approvals.body;
  EXPECT_EQ(approvals.error_code(), "forbidden");
  EXPECT_EQ(Post("/v1/approvals/abc", agent, R"({"decision":"allow-once"})").status, 403);
  EXPECT_EQ(Get("/metrics", agent).status, 403);
  EXPECT_EQ(Get("/v1/approvals", operator_token).status, 200);

  EXPECT_EQ(Post("/v1/tools/exec", agent, kExecHi, {"X-Sandrun-Agent: build-7"}).status, 200);
  auto other_agent = Post("/v1/tools/exec", agent, kExecHi, {"X-Sandrun-Agent: deploy"});
  EXPECT_EQ(other_agent.status, 403) << other_agent.body;
  auto other_tenant = Post("/v1/tools/exec", agent, kExecHi, {"X-Sandrun-Tenant: globex"});
  EXPECT_EQ(other_tenant.status, 403) << other_tenant.body;
  auto bad_agent = Post("/v1/tools/exec", agent, kExecHi, {"X-Sandrun-Agent: ../x"});
  EXPECT_EQ(bad_agent.status, 400) << bad_agent.body;
  for (const char* header : {"X-Sandrun-Workspace: /etc", "X-Sandrun-Cwd: /root"}) {
    auto named = Post("/v1/tools/exec", agent, kExecHi, {header});
    EXPECT_EQ(named.status, 403) << header << ": " << named.body;
  }
  // None of the refused calls ran: no session, and the audit log has only the one call.
  size_t decided = 0;
  for (const auto& line : AuditLines())
    decided += line.find("\"action\":\"end\"") == std::string::npos;
  EXPECT_EQ(decided, 1u);
}

// Two tenants, two agents each: every read, poll, log, kill, write and remove of another
// tenant's session answers exactly like an unknown id; lists and events show nothing of it.
TEST_F(TenantServerTest, TenantsCannotSeeOrTouchEachOthersSessionsOrEvents) {
  Tenants(R"("acme": {}, "globex": {})");
  const std::string acme = Token("acme", "agent");
  const std::string globex = Token("globex", "agent");
  const std::string acme_op = Token("acme", "operator");
  const std::string globex_op = Token("globex", "operator");
  StartTls();
  auto acme_events = Events(acme_op);
  auto globex_events = Events(globex_op);

  std::vector<std::pair<std::string, std::string>> acme_sessions;  // {agent, id}
  for (const char* a : {"main", "builder"}) {
    const std::string header = std::string("X-Sandrun-Agent: ") + a;
    acme_sessions.push_back(
        {a, Background(acme, std::string("echo acme-") + a + "; sleep 30", {header})});
  }
  const std::string globex_id = Background(globex, "echo globex-main");
  EXPECT_NE(Finish(globex, globex_id).find("globex-main"), std::string::npos);

  for (const auto& [a, id] : acme_sessions) {
    const std::vector<std::string> as = {std::string("X-Sandrun-Agent: ") + a};
    for (const char* action : {"poll", "log", "kill", "remove", "write"}) {
      const std::string extra = std::string(action) == "write" ? R"(,"data":"x")" : "";
      auto unknown =
          Post("/v1/tools/process", globex, ProcessCall(action, "zz-unknown", extra), as);
      auto theirs = Post("/v1/tools/process", globex, ProcessCall(action, id, extra), as);
      EXPECT_EQ(theirs.status, unknown.status) << action;
      EXPECT_NE(theirs.status, 200) << action << ": " << theirs.body;
      std::string normalised = theirs.body;
      for (size_t at; (at = normalised.find(id)) != std::string::npos;)
        normalised.replace(at, id.size(), "zz-unknown");
      EXPECT_EQ(normalised, unknown.body) << action;
    }
    auto list = Post("/v1/tools/process", globex, R"({"tool":"process","action":"list"})", as);
    EXPECT_EQ(list.status, 200);
    // Quoted: ids are adjective-noun with a -N suffix on a clash, so one can contain another.
    EXPECT_EQ(list.body.find("\"" + id + "\""), std::string::npos) << list.body;
    // Still running for its own tenant: the kill above touched nothing.
    auto own = Post("/v1/tools/process", acme, ProcessCall("poll", id), as);
    EXPECT_EQ(Details(own.json(), "status"), "running") << own.body;
    EXPECT_EQ(Post("/v1/tools/process", acme, ProcessCall("kill", id), as).status, 200);
  }

  // Each stream carries its own tenant's sessions and never the other's.
  EXPECT_TRUE(globex_events->WaitFor(globex_id, 10s)) << globex_events->Output();
  for (const auto& [a, id] : acme_sessions) {
    EXPECT_TRUE(acme_events->WaitFor(id, 10s)) << acme_events->Output();
    EXPECT_EQ(globex_events->Output().find("\"" + id + "\""), std::string::npos)
        << globex_events->Output();
  }
  EXPECT_EQ(acme_events->Output().find("\"" + globex_id + "\""), std::string::npos)
      << acme_events->Output();
  // Events carry ids, for Last-Event-ID.
  EXPECT_NE(acme_events->Output().find("\nid: "), std::string::npos) << acme_events->Output();
}

// Every call that reached a decision has one decision line (and a run its end line), with the
// tenant and the token's name; refused tokens and roles leave none.
TEST_F(TenantServerTest, AuditLinesMatchTheCallsOneToOne) {
  Tenants(R"("acme": {}, "globex": {})");
  const std::string acme = Token("acme", "agent", {"--name", "acme-bot"});
  const std::string globex = Token("globex", "agent", {"--name", "globex-bot"});
  StartTls();
  EXPECT_EQ(Post("/v1/tools/exec", acme, R"({"tool":"exec","command":"echo one"})").status, 200);
  EXPECT_EQ(Post("/v1/tools/exec", acme, R"({"tool":"exec","command":"echo two"})").status, 200);
  EXPECT_EQ(
      Post("/v1/tools/exec", acme, R"({"tool":"exec","host":"gateway","command":"echo three"})")
          .status,
      403);
  EXPECT_EQ(Post("/v1/tools/exec", globex, R"({"tool":"exec","command":"echo four"})").status, 200);
  EXPECT_EQ(Post("/v1/tools/exec", "", R"({"tool":"exec","command":"echo five"})").status, 401);
  EXPECT_EQ(Get("/v1/approvals", acme).status, 403);

  std::map<std::string, std::string> decision_of, token_of, tenant_of;
  std::map<std::string, int> ends;
  for (const auto& line : AuditLines()) {
    auto doc = ParseJson(line);
    ASSERT_TRUE(doc) << line;
    const std::string command = JsonString(*doc, "command");
    if (JsonString(*doc, "action") == "end") {
      ++ends[command];
      continue;
    }
    EXPECT_EQ(decision_of.count(command), 0u) << "two decision lines for " << command;
    decision_of[command] = JsonString(*doc, "decision");
    token_of[command] = JsonString(*doc, "token");
    tenant_of[command] = JsonString(*doc, "tenant");
  }
  EXPECT_EQ(decision_of.size(), 4u);
  EXPECT_EQ(decision_of["echo one"], "allow");
  EXPECT_EQ(decision_of["echo three"], "deny");
  EXPECT_EQ(token_of["echo two"], "acme-bot");
  EXPECT_EQ(tenant_of["echo two"], "acme");
  EXPECT_EQ(token_of["echo four"], "globex-bot");
  EXPECT_EQ(tenant_of["echo four"], "globex");
  EXPECT_EQ(decision_of.count("echo five"), 0u);
  EXPECT_EQ(ends, (std::map<std::string, int>{{"echo one", 1}, {"echo two", 1}, {"echo four", 1}}));
}

// Sandboxes are an operator's to list and remove, its own tenant's only.
TEST_F(TenantServerTest, OperatorsManageOnlyTheirTenantsSandboxes) {
  Tenants(R"("acme": {}, "globex": {})");
  const std::string acme = Token("acme", "agent");
  const std::string acme_op = Token("acme", "operator");
  const std::string globex_op = Token("globex", "operator");
  StartTls();
  ASSERT_EQ(Post("/v1/tools/exec", acme, kExecHi).status, 200);

  auto listed = Get("/v1/sandboxes", acme_op);
  ASSERT_EQ(listed.status, 200) << listed.body;
  auto doc = listed.json();
  const auto* boxes = JsonMember(doc, "sandboxes");
  ASSERT_TRUE(boxes && boxes->IsArray() && boxes->Size() == 1) << listed.body;
  const std::string name = JsonString((*boxes)[0], "name");
  EXPECT_NE(name.find("acme"), std::string::npos) << name;

  EXPECT_EQ(Get("/v1/sandboxes", acme).status, 403);
  EXPECT_EQ(Request("DELETE", "/v1/sandboxes/" + name, acme).status, 403);
  auto foreign_list = Get("/v1/sandboxes", globex_op);
  EXPECT_EQ(foreign_list.body, R"({"sandboxes":[]})");
  auto unknown = Request("DELETE", "/v1/sandboxes/sandrun-sbx-nobody", globex_op);
  auto foreign = Request("DELETE", "/v1/sandboxes/" + name, globex_op);
  EXPECT_EQ(foreign.status, 404) << foreign.body;
  EXPECT_EQ(foreign.status, unknown.status);
  EXPECT_EQ(ContainerCount(), 1u);

  auto removed = Request("DELETE", "/v1/sandboxes/" + name, acme_op);
  EXPECT_EQ(removed.status, 200) << removed.body;
  EXPECT_EQ(ContainerCount(), 0u);
  // The removal is an operator action in the audit log, under the operator's token.
  bool audited = false;
  for (const auto& line : AuditLines()) {
    audited = audited || (line.find("\"tool\":\"sandbox\"") != std::string::npos &&
                          line.find(name) != std::string::npos);
  }
  EXPECT_TRUE(audited);
}

// An agent token's event stream is its own agent's: the events of another agent of the tenant
// (commands, output tails) are not for it, as that agent's sessions are not.
TEST_F(TenantServerTest, AnAgentTokenHearsOnlyItsOwnAgentsEvents) {
  Tenants(R"("acme": {})");
  const std::string bots = Token("acme", "agent", {"--agents", "bot*"});
  const std::string main_agent = Token("acme", "agent", {"--agents", "main"});
  StartTls();
  auto stream = Events(bots, {"X-Sandrun-Agent: bot1"});
  const std::string secret = Background(main_agent, "echo topsecret-of-main");
  EXPECT_NE(Finish(main_agent, secret).find("topsecret-of-main"), std::string::npos);
  // Events are delivered in order: once bot1's later session is in the stream, main's events
  // would be there before it.
  const std::string own = Background(bots, "echo bot1-output", {"X-Sandrun-Agent: bot1"});
  EXPECT_TRUE(stream->WaitFor(own, 10s)) << stream->Output();
  EXPECT_EQ(stream->Output().find(secret), std::string::npos) << stream->Output();
  EXPECT_EQ(stream->Output().find("topsecret"), std::string::npos) << stream->Output();
}

// Event streams hold connection slots for as long as their client likes: one tenant may hold an
// eighth of server.maxConnections with them, so it cannot lock the other tenants out.
TEST_F(TenantServerTest, ATenantsEventStreamsCannotTakeEveryConnectionSlot) {
  Tenants(R"("acme": {}, "globex": {})", R"("server": {"maxConnections": 16})");
  const std::string acme = Token("acme", "agent");
  const std::string globex = Token("globex", "agent");
  StartTls();
  auto first = Events(acme);
  auto second = Events(acme);
  std::vector<std::string> argv = {Program("curl"), "-sSN", "-H", "Authorization: Bearer " + acme};
  for (const auto& t : Transport()) argv.push_back(t);
  argv.push_back(Url("/v1/events"));
  Streaming third(argv, home_ + "/events-third");
  EXPECT_TRUE(third.WaitFor("quota-exceeded", 10s)) << third.Output();
  EXPECT_EQ(third.Output().find("event: ready"), std::string::npos) << third.Output();
  auto other = Events(globex);  // waits for its ready event
  EXPECT_NE(other->Output().find("event: ready"), std::string::npos);
  // A stream that ends gives its slot back.
  first.reset();
  bool again = false;
  for (int i = 0; i < 100 && !again; ++i) {
    Streaming retry(argv, home_ + "/events-retry");
    again = retry.WaitFor("event: ready", 2s);
  }
  EXPECT_TRUE(again);
}

// A tenant with host execution: its gateway command asks; an agent token cannot answer it,
// another tenant's operator gets what an unknown id gets, its own operator approves it.
TEST_F(TenantServerTest, OnlyTheTenantsOperatorAnswersItsApprovals) {
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"loginShellPath": false,)"
         R"( "security": "full", "ask": "always"}},)"
         R"( "tenants": {"ops": {"hostExecution": true}, "globex": {}}})");
  const std::string agent = Token("ops", "agent");
  const std::string op = Token("ops", "operator");
  const std::string globex_op = Token("globex", "operator");
  StartTls();

  auto pending = Post("/v1/tools/exec", agent, R"({"tool":"exec","command":"echo approved"})");
  ASSERT_EQ(pending.status, 200) << pending.body;
  const std::string id = Details(pending.json(), "approvalId");
  ASSERT_FALSE(id.empty()) << pending.body;

  EXPECT_EQ(Post("/v1/approvals/" + id, agent, R"({"decision":"allow-once"})").status, 403);
  auto unknown = Post("/v1/approvals/zz-unknown", globex_op, R"({"decision":"allow-once"})");
  auto foreign = Post("/v1/approvals/" + id, globex_op, R"({"decision":"allow-once"})");
  EXPECT_EQ(foreign.status, unknown.status);
  EXPECT_NE(foreign.status, 200) << foreign.body;
  EXPECT_EQ(Get("/v1/approvals", globex_op).body.find(id), std::string::npos);
  EXPECT_NE(Get("/v1/approvals", op).body.find(id), std::string::npos);

  auto answered = Post("/v1/approvals/" + id, op, R"({"decision":"allow-once"})");
  ASSERT_EQ(answered.status, 200) << answered.body;
  const std::string session = JsonString(answered.json(), "sessionId");
  ASSERT_FALSE(session.empty()) << answered.body;
  EXPECT_NE(Finish(agent, session).find("approved"), std::string::npos);

  // The audit log names who answered: the operator's token.
  bool found = false;
  for (const auto& line : AuditLines()) {
    found = found || (line.find("\"tool\":\"approval\"") != std::string::npos &&
                      line.find(id) != std::string::npos);
  }
  EXPECT_TRUE(found);
}

// An operator's answer cannot start what the tenant's quotas would refuse.
TEST_F(TenantServerTest, AnApprovalCannotStartASessionOverTheTenantsQuota) {
  Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"loginShellPath": false,)"
         R"( "security": "full", "ask": "always"}},)"
         R"( "tenants": {"ops": {"hostExecution": true, "quotas": {"maxSessions": 1}}}})");
  const std::string agent = Token("ops", "agent");
  const std::string op = Token("ops", "operator");
  StartTls();
  std::vector<std::string> ids;
  for (const char* command : {"sleep 30", "echo second-run"}) {
    auto pending = Post("/v1/tools/exec", agent,
                        std::string(R"({"tool":"exec","command":")") + command + "\"}");
    ASSERT_EQ(pending.status, 200) << pending.body;
    ids.push_back(Details(pending.json(), "approvalId"));
  }
  auto first = Post("/v1/approvals/" + ids[0], op, R"({"decision":"allow-once"})");
  ASSERT_EQ(first.status, 200) << first.body;
  const std::string session = JsonString(first.json(), "sessionId");
  ASSERT_FALSE(session.empty()) << first.body;
  auto second = Post("/v1/approvals/" + ids[1], op, R"({"decision":"allow-once"})");
  EXPECT_FALSE(JsonBool(second.json(), "approved")) << second.body;
  EXPECT_NE(second.body.find("quota-exceeded"), std::string::npos) << second.body;
  auto list = Post("/v1/tools/process", agent, R"({"tool":"process","action":"list"})");
  EXPECT_EQ(list.body.find("second-run"), std::string::npos) << list.body;
  EXPECT_EQ(Post("/v1/tools/process", agent, ProcessCall("kill", session)).status, 200);
}

// A tenant without hostExecution never runs on the host, whatever it asks.
TEST_F(TenantServerTest, ATenantWithoutHostExecutionIsRefusedTheHost) {
  Tenants(R"("acme": {})");
  const std::string agent = Token("acme", "agent");
  StartTls();
  auto host = Post("/v1/tools/exec", agent, R"({"tool":"exec","host":"gateway","command":"id"})");
  EXPECT_EQ(host.status, 403) << host.body;
  auto elevated =
      Post("/v1/tools/exec", agent, R"({"tool":"exec","elevated":true,"command":"id"})");
  EXPECT_NE(elevated.status, 200) << elevated.body;
}

TEST_F(TenantServerTest, QuotasAnswer429WithRetryAfterAndRunNothing) {
  Tenants(R"("tiny": {"quotas": {"maxSessions": 1, "requestsPerMinute": 4}}, "acme": {})");
  const std::string tiny = Token("tiny", "agent");
  const std::string acme = Token("acme", "agent");
  StartTls();

  const std::string first = Background(tiny, "sleep 30");
  auto second = Post("/v1/tools/exec", tiny,
                     R"({"tool":"exec","background":true,"command":"echo over-quota"})");
  EXPECT_EQ(second.status, 429) << second.body;
  EXPECT_EQ(second.error_code(), "quota-exceeded");
  EXPECT_TRUE(second.HasHeader("Retry-After: ")) << second.headers;
  auto list = Post("/v1/tools/process", tiny, R"({"tool":"process","action":"list"})");
  EXPECT_EQ(list.body.find("over-quota"), std::string::npos) << list.body;

  // Four requests a minute: the next one is refused, another tenant is not.
  HttpResult limited;
  for (int i = 0; i < 6 && limited.status != 429; ++i)
    limited = Post("/v1/tools/exec", tiny, kExecHi);
  EXPECT_EQ(limited.status, 429) << limited.body;
  EXPECT_TRUE(limited.HasHeader("Retry-After: ")) << limited.headers;
  EXPECT_EQ(Post("/v1/tools/exec", acme, kExecHi).status, 200);
  (void)first;
}

// The unix socket: its owner is the local admin without a token, unless --require-tokens.
TEST_F(TenantServerTest, TheSocketNeedsTokensOnlyWithRequireTokens) {
  Tenants(R"("acme": {})");
  const std::string agent = Token("acme", "agent");
  StartUnix({"--require-tokens"});
  auto tokenless = Post("/v1/tools/exec", "", kExecHi);
  EXPECT_EQ(tokenless.status, 401) << tokenless.body;
  EXPECT_TRUE(tokenless.HasHeader("WWW-Authenticate: Bearer")) << tokenless.headers;
  EXPECT_EQ(Get("/v1/approvals", "").status, 401);
  auto with_token = Post("/v1/tools/exec", agent, kExecHi);
  EXPECT_EQ(with_token.status, 200) << with_token.body;
  // The token's tenant, not the local one: its approvals are not the owner's to list.
  EXPECT_EQ(Get("/v1/approvals", agent).status, 403);
}

TEST_F(TenantServerTest, TheSocketsOwnerIsTheLocalAdminWithoutATokenAndATokenStillBinds) {
  Tenants(R"("acme": {})");
  const std::string agent = Token("acme", "agent");
  StartUnix();
  EXPECT_EQ(Post("/v1/tools/exec", "", kExecHi).status, 200);
  EXPECT_EQ(Get("/v1/approvals", "").status, 200);
  // A token presented on the socket is who the caller is: an agent, not the owner.
  EXPECT_EQ(Get("/v1/approvals", agent).status, 403);
  EXPECT_EQ(Post("/v1/tools/exec", "sandrun_" + std::string(64, 'b'), kExecHi).status, 401);
}

// Admin: acts in a tenant named by X-Sandrun-Tenant; sees every tenant's metrics.
TEST_F(TenantServerTest, AnAdminNamesItsTenantAndAnOperatorSeesOnlyItsOwnMetrics) {
  Tenants(R"("acme": {}, "globex": {})");
  const std::string admin = Token("", "admin");
  const std::string acme = Token("acme", "agent");
  const std::string acme_op = Token("acme", "operator");
  StartTls();
  const std::string id = Background(acme, "sleep 30");
  auto as_admin =
      Post("/v1/tools/process", admin, ProcessCall("poll", id), {"X-Sandrun-Tenant: acme"});
  EXPECT_EQ(as_admin.status, 200) << as_admin.body;
  auto wrong =
      Post("/v1/tools/process", admin, ProcessCall("poll", id), {"X-Sandrun-Tenant: globex"});
  EXPECT_EQ(wrong.status, 404) << wrong.body;
  EXPECT_EQ(
      Post("/v1/tools/process", admin, ProcessCall("kill", id), {"X-Sandrun-Tenant: acme"}).status,
      200);

  auto mine = Get("/metrics", acme_op);
  EXPECT_EQ(mine.status, 200);
  EXPECT_NE(mine.body.find("tenant=\"acme\""), std::string::npos) << mine.body;
  EXPECT_EQ(mine.body.find("tenant=\"globex\""), std::string::npos) << mine.body;
}

}  // namespace
}  // namespace sandrun::testing

// Operators and per-session exec state through the binary on a real TLS listener (issue 15):
// `/elevated full` moves one session of an agent to the host while another stays in the
// sandbox, `/elevated off` brings it back, an agent token cannot change (or read) session state,
// directives are all or nothing, config and tenancy bound what an operator may set, the state
// survives a restart, and an agent may read its own agent's approvals only.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "tests/e2e/tenant_server.h"

namespace sandrun::testing {
namespace {

using namespace std::chrono_literals;

// Prints where the command ran: sandrun's containers have its exec helper at /.sandrun/exec, the
// host does not (the host may itself be a container: /.dockerenv proves nothing).
constexpr char kWhere[] =
    R"({"tool":"exec","command":"test -x /.sandrun/exec && echo where=sandbox || echo where=host"})";

class OperatorSessionTest : public TenantServer {
 protected:
  // acme may run on the host, globex may not; elevated is enabled for every API token.
  void OperatorConfig(const std::string& exec_extra = "") {
    Config(R"({"sandbox": {"mode": "all", "docker": {"image": "sandrun-sandbox:minimal"}},)"
           R"( "tools": {"exec": {"loginShellPath": false)" +
           exec_extra +
           R"(}, "elevated": {"enabled": true, "allowFrom": {"api": ["*"]}}},)"
           R"( "tenants": {"acme": {"hostExecution": true}, "globex": {}}})");
  }
  void SetUpTokens() {
    agent_ = Token("acme", "agent", {"--name", "acme-agent"});
    ops_ = Token("acme", "operator", {"--name", "acme-ops"});
    globex_ops_ = Token("globex", "operator", {"--name", "globex-ops"});
  }
  HttpResult Directive(const std::string& token, const std::string& session,
                       const std::string& text, const std::string& tenant_agent = "main") {
    return Post("/v1/agents/" + tenant_agent + "/sessions/" + session + "/directive", token,
                R"({"text":")" + text + "\"}");
  }
  // Where a call of `session` runs ("sandbox" | "host"), by the agent token.
  std::string WhereRuns(const std::string& session) {
    auto r = Post("/v1/tools/exec", agent_, kWhere, {"X-Sandrun-Session: " + session});
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.body.find("where=host") != std::string::npos) return "host";
    if (r.body.find("where=sandbox") != std::string::npos) return "sandbox";
    return "?: " + r.body;
  }
  std::string agent_, ops_, globex_ops_;
};

TEST_F(OperatorSessionTest, ElevatedFullMovesOneSessionToTheHostAndOffBringsItBack) {
  OperatorConfig();
  SetUpTokens();
  StartTls();
  ASSERT_EQ(WhereRuns("A"), "sandbox");
  auto on = Directive(ops_, "A", "please /elevated full now");
  ASSERT_EQ(on.status, 200) << on.body;
  auto doc = on.json();
  EXPECT_EQ(JsonString(*JsonMember(doc, "applied"), "elevated"), "full") << on.body;
  EXPECT_EQ(JsonString(doc, "cleaned"), "please now");
  EXPECT_EQ(JsonString(*JsonMember(doc, "current"), "elevated"), "full");

  EXPECT_EQ(WhereRuns("A"), "host");
  EXPECT_EQ(WhereRuns("B"), "sandbox");  // the same agent's other session is untouched

  auto shown = Get("/v1/agents/main/sessions/A", ops_);
  ASSERT_EQ(shown.status, 200) << shown.body;
  EXPECT_EQ(JsonString(shown.json(), "elevated"), "full");
  EXPECT_EQ(JsonString(shown.json(), "updatedBy"), "acme-ops");

  auto off = Directive(ops_, "A", "/elevated off");
  ASSERT_EQ(off.status, 200) << off.body;
  EXPECT_EQ(WhereRuns("A"), "sandbox");

  // Each change was an audit line naming the operator.
  const std::string audit = ReadWhole(home_ + "/audit/audit.jsonl");
  EXPECT_EQ(Count(audit, R"("tool":"session")"), 2u) << audit;
  EXPECT_NE(audit.find("main/A elevated=full"), std::string::npos) << audit;
}

TEST_F(OperatorSessionTest, TheChangeIsASessionUpdatedEventOfTheTenantOnly) {
  OperatorConfig();
  SetUpTokens();
  StartTls();
  auto acme = Events(ops_);
  auto globex = Events(globex_ops_);
  ASSERT_EQ(Directive(ops_, "A", "/exec ask=always").status, 200);
  ASSERT_TRUE(acme->WaitFor("event: session.updated", 10s)) << acme->Output();
  EXPECT_NE(acme->Output().find(R"("ask":"always")"), std::string::npos) << acme->Output();
  // The other tenant's stream saw nothing of it (a later event of its own proves it is live).
  ASSERT_EQ(Directive(globex_ops_, "G", "/exec ask=on-miss").status, 200);
  ASSERT_TRUE(globex->WaitFor("event: session.updated", 10s)) << globex->Output();
  EXPECT_EQ(globex->Output().find(R"("ask":"always")"), std::string::npos) << globex->Output();
}

TEST_F(OperatorSessionTest, AnAgentTokenCannotChangeOrReadSessionState) {
  OperatorConfig();
  SetUpTokens();
  StartTls();
  EXPECT_EQ(Directive(agent_, "A", "/elevated full").status, 403);
  EXPECT_EQ(Request("PATCH", "/v1/agents/main/sessions/A", agent_, R"({"elevated":"full"})").status,
            403);
  EXPECT_EQ(Request("DELETE", "/v1/agents/main/sessions/A", agent_).status, 403);
  EXPECT_EQ(Get("/v1/agents/main/sessions", agent_).status, 403);
  // Nothing changed: the session still runs in the sandbox and has no state.
  EXPECT_EQ(WhereRuns("A"), "sandbox");
  auto list = Get("/v1/agents/main/sessions", ops_);
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_NE(list.body.find(R"("sessions":[])"), std::string::npos) << list.body;
}

TEST_F(OperatorSessionTest, DirectivesAreAllOrNothingAndBareOnesShowTheCurrentValues) {
  OperatorConfig();
  SetUpTokens();
  StartTls();
  // Mixed text with a valid and an invalid value: nothing is saved.
  auto mixed = Directive(ops_, "A", "go /exec ask=always security=bogus then");
  EXPECT_EQ(mixed.status, 400) << mixed.body;
  EXPECT_EQ(mixed.error_code(), "invalid-directive");
  EXPECT_NE(mixed.body.find(R"("invalid":{"security":"bogus"})"), std::string::npos) << mixed.body;
  EXPECT_NE(mixed.body.find(R"("applied":{})"), std::string::npos) << mixed.body;
  EXPECT_NE(mixed.body.find(R"("cleaned":"go then")"), std::string::npos) << mixed.body;
  auto none = Get("/v1/agents/main/sessions/A", ops_);
  EXPECT_NE(none.body.find(R"("exec":{})"), std::string::npos) << none.body;
  EXPECT_EQ(JsonString(none.json(), "elevated"), "");

  auto bad_level = Directive(ops_, "A", "/elevated sometimes");
  EXPECT_EQ(bad_level.status, 400);
  EXPECT_NE(bad_level.body.find(R"("invalid":{"elevated":"sometimes"})"), std::string::npos);

  // Valid: key=value and key:value, any case.
  auto ok = Directive(ops_, "A", "/exec ASK:on-miss security=Allowlist node=mac-mini rest");
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_NE(ok.body.find(R"("applied":{"security":"allowlist","ask":"on-miss","node":"mac-mini"})"),
            std::string::npos)
      << ok.body;
  EXPECT_NE(ok.body.find(R"("cleaned":"rest")"), std::string::npos) << ok.body;
  // Bare /exec and /elevated change nothing and show the current values.
  for (const char* bare : {"/exec", "/elevated", "/exec:"}) {
    auto shown = Directive(ops_, "A", bare);
    ASSERT_EQ(shown.status, 200) << bare << ": " << shown.body;
    EXPECT_NE(shown.body.find(R"("applied":{})"), std::string::npos) << shown.body;
    const auto doc = shown.json();
    const auto* current = JsonMember(doc, "current");
    ASSERT_NE(current, nullptr) << shown.body;
    EXPECT_EQ(JsonString(*current, "security"), "allowlist");
    EXPECT_EQ(JsonString(*current, "ask"), "on-miss");
    EXPECT_EQ(JsonString(*current, "node"), "mac-mini");
    EXPECT_EQ(JsonString(*current, "elevated"), "off");
  }
  // No directive at all: the text comes back, nothing changes.
  auto plain = Directive(ops_, "A", "just text /executive");
  ASSERT_EQ(plain.status, 200);
  EXPECT_NE(plain.body.find(R"("cleaned":"just text /executive")"), std::string::npos);
}

TEST_F(OperatorSessionTest, ConfigAndTenancyBoundWhatAnOperatorMaySet) {
  OperatorConfig();
  SetUpTokens();
  StartTls();
  // tools.exec.host auto with a sandboxed session: a gateway override is §1.4's refusal.
  auto host = Directive(ops_, "A", "/exec host=gateway");
  EXPECT_EQ(host.status, 400) << host.body;
  EXPECT_EQ(host.error_code(), "host-not-allowed");
  EXPECT_NE(host.body.find("exec host not allowed (requested gateway"), std::string::npos);
  // globex has no hostExecution: no elevated level, no host for its sessions.
  auto elevated = Directive(globex_ops_, "G", "/elevated on");
  EXPECT_EQ(elevated.status, 403) << elevated.body;
  EXPECT_EQ(elevated.error_code(), "forbidden");
  // PATCH: a bad value, an unknown key, a bad session key: 400, nothing saved.
  EXPECT_EQ(
      Request("PATCH", "/v1/agents/main/sessions/A", ops_, R"({"exec":{"host":"moon"}})").status,
      400);
  EXPECT_EQ(Request("PATCH", "/v1/agents/main/sessions/A", ops_, R"({"colour":"red"})").status,
            400);
  EXPECT_EQ(Request("PATCH", "/v1/agents/main/sessions/A", ops_, R"([1])").status, 400);
  EXPECT_EQ(Request("PATCH", "/v1/agents/ma%2Fin/sessions/A", ops_, R"({"elevated":"on"})").status,
            400);
  EXPECT_EQ(Get("/v1/agents/main/sessions/A/nope", ops_).status, 404);
  auto list = Get("/v1/agents/main/sessions", ops_);
  EXPECT_NE(list.body.find(R"("sessions":[])"), std::string::npos) << list.body;
  // A tenant's operator sees its own sessions only.
  ASSERT_EQ(Request("PATCH", "/v1/agents/main/sessions/A", ops_, R"({"elevated":"ask"})").status,
            200);
  auto theirs = Get("/v1/agents/main/sessions", globex_ops_);
  ASSERT_EQ(theirs.status, 200);
  EXPECT_NE(theirs.body.find(R"("sessions":[])"), std::string::npos) << theirs.body;
  // null clears one field; DELETE clears the session.
  auto cleared = Request("PATCH", "/v1/agents/main/sessions/A", ops_, R"({"elevated":null})");
  ASSERT_EQ(cleared.status, 200) << cleared.body;
  EXPECT_EQ(JsonString(cleared.json(), "elevated"), "");
  ASSERT_EQ(
      Request("PATCH", "/v1/agents/main/sessions/A", ops_, R"({"exec":{"ask":"always"}})").status,
      200);
  auto deleted = Request("DELETE", "/v1/agents/main/sessions/A", ops_);
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_NE(deleted.body.find(R"("exec":{})"), std::string::npos) << deleted.body;
}

TEST_F(OperatorSessionTest, OverridesSurviveAServerRestart) {
  OperatorConfig();
  SetUpTokens();
  StartTls();
  ASSERT_EQ(Request("PATCH", "/v1/agents/main/sessions/A", ops_, R"({"elevated":"full"})").status,
            200);
  StopServer();
  std::filesystem::remove(log_);  // the new server's listening line, not the old one's
  StartTls();
  auto shown = Get("/v1/agents/main/sessions/A", ops_);
  ASSERT_EQ(shown.status, 200) << shown.body;
  EXPECT_EQ(JsonString(shown.json(), "elevated"), "full");
  EXPECT_EQ(WhereRuns("A"), "host");
  EXPECT_EQ(WhereRuns("B"), "sandbox");
}

TEST_F(OperatorSessionTest, AnAgentReadsItsOwnAgentsApprovalsOnly) {
  OperatorConfig(R"(, "ask": "always")");
  SetUpTokens();
  const std::string other = Token("acme", "agent", {"--name", "other-agent", "--agents", "other"});
  StartTls();
  ASSERT_EQ(Request("PATCH", "/v1/agents/main/sessions/A", ops_, R"({"elevated":"on"})").status,
            200);
  auto asked = Post("/v1/tools/exec", agent_, R"({"tool":"exec","command":"echo approved"})",
                    {"X-Sandrun-Session: A"});
  ASSERT_EQ(asked.status, 200) << asked.body;
  const std::string id = Details(asked.json(), "approvalId");
  ASSERT_FALSE(id.empty()) << asked.body;
  auto own = Get("/v1/approvals/" + id, agent_);
  ASSERT_EQ(own.status, 200) << own.body;
  EXPECT_EQ(JsonString(own.json(), "status"), "pending");
  EXPECT_EQ(Get("/v1/approvals/" + id, other, {"X-Sandrun-Agent: other"}).status, 404);
  EXPECT_EQ(Get("/v1/approvals/" + id, globex_ops_).status, 404);
  // Answering stays an operator's.
  EXPECT_EQ(Post("/v1/approvals/" + id, agent_, R"({"decision":"allow-once"})").status, 403);
  ASSERT_EQ(Post("/v1/approvals/" + id, ops_, R"({"decision":"deny"})").status, 200);
  auto decided = Get("/v1/approvals/" + id.substr(0, 8), agent_);
  ASSERT_EQ(decided.status, 200) << decided.body;
  EXPECT_EQ(JsonString(decided.json(), "status"), "denied");
  EXPECT_EQ(JsonString(decided.json(), "decidedBy"), "acme-ops");
  EXPECT_GT(JsonInt(decided.json(), "decidedAtMs"), 0);
}

}  // namespace
}  // namespace sandrun::testing

// Attacks on the multi-tenant server through the binary on its TLS listener (loopback), each one
// a hole found by trying it: a repeated header that changed who the caller was, a tool call that
// changed the workspace without its audit line, an event stream that outlived its token.
#include <gtest/gtest.h>

#include "tests/e2e/tenant_server.h"

namespace sandrun::testing {
namespace {

class RedteamTenantTest : public TenantServer {
 protected:
  std::vector<std::string> AuditLines() {
    std::vector<std::string> lines;
    std::stringstream in(ReadWhole(home_ + "/audit/audit.jsonl"));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

// Two Authorization headers used to mean the last one: a proxy that checked the first saw an
// agent token, the server served an operator. Repeats are one list now, which is no token.
TEST_F(RedteamTenantTest, RepeatedAuthorizationHeaderIsNoToken) {
  Tenants(R"("acme": {})");
  const std::string agent = Token("acme", "agent", {"--name", "agent"});
  const std::string op = Token("acme", "operator", {"--name", "op"});
  StartTls();
  // Alone, the operator may list the approvals and the agent may not.
  ASSERT_EQ(Get("/v1/approvals", op).status, 200);
  ASSERT_EQ(Get("/v1/approvals", agent).status, 403);

  auto twice = Get("/v1/approvals", agent, {"Authorization: Bearer " + op});
  EXPECT_EQ(twice.status, 401) << twice.body;
  EXPECT_EQ(twice.error_code(), "unauthorized");
}

// The same for the caller's ids: a repeated X-Sandrun-Agent or X-Sandrun-Tenant is refused, not
// read as its last value.
TEST_F(RedteamTenantTest, RepeatedCallerHeadersAreRefused) {
  Tenants(R"("acme": {}, "globex": {})");
  const std::string bot = Token("acme", "agent", {"--name", "bot", "--agents", "bot*"});
  const std::string admin = Token("", "admin", {"--name", "root"});
  StartTls();
  const std::string check = R"({"tool":"exec","command":"echo hi"})";
  ASSERT_EQ(Post("/v1/policy/check", bot, check, {"X-Sandrun-Agent: bot1"}).status, 200);

  auto agents =
      Post("/v1/policy/check", bot, check, {"X-Sandrun-Agent: main", "X-Sandrun-Agent: bot1"});
  EXPECT_EQ(agents.status, 400) << agents.body;
  EXPECT_EQ(agents.error_code(), "invalid-request");
  auto tenants =
      Get("/v1/approvals", admin, {"X-Sandrun-Tenant: acme", "X-Sandrun-Tenant: globex"});
  EXPECT_EQ(tenants.status, 400) << tenants.body;
  EXPECT_EQ(tenants.error_code(), "invalid-request");
}

// apply_patch changes the tenant's workspace: it has its line, with the patch as its command,
// like every exec; a refused one has its deny line.
TEST_F(RedteamTenantTest, ApplyPatchCallsHaveTheirAuditLines) {
  Tenants(R"("acme": {})");
  const std::string agent = Token("acme", "agent", {"--name", "patcher"});
  StartTls();
  auto made = Post("/v1/tools/apply_patch", agent,
                   R"({"tool":"apply_patch","input":"*** Begin Patch\n*** Add File: )"
                   R"(hello.txt\n+hi\n*** End Patch"})");
  ASSERT_EQ(made.status, 200) << made.body;
  auto refused = Post("/v1/tools/apply_patch", agent,
                      R"({"tool":"apply_patch","input":"*** Begin Patch\n*** Add File: )"
                      R"(../escape.txt\n+hi\n*** End Patch"})");
  ASSERT_NE(refused.status, 200) << refused.body;

  std::vector<std::string> patches;
  for (const std::string& line : AuditLines()) {
    if (line.find(R"("tool":"apply_patch")") != std::string::npos) patches.push_back(line);
  }
  ASSERT_EQ(patches.size(), 2u) << ReadWhole(home_ + "/audit/audit.jsonl");
  EXPECT_NE(patches[0].find(R"("token":"patcher")"), std::string::npos) << patches[0];
  EXPECT_NE(patches[0].find(R"("tenant":"acme")"), std::string::npos) << patches[0];
  EXPECT_NE(patches[0].find(R"("decision":"allow")"), std::string::npos) << patches[0];
  EXPECT_NE(patches[0].find("Add File: hello.txt"), std::string::npos) << patches[0];
  EXPECT_NE(patches[1].find(R"("decision":"deny")"), std::string::npos) << patches[1];
  EXPECT_NE(patches[1].find("escape.txt"), std::string::npos) << patches[1];
}

// An event stream opened before its token was revoked used to go on with the tenant's events for
// ever; it gets an unauthorized error at the next event instead, and nothing of that event.
TEST_F(RedteamTenantTest, RevokedTokensEventStreamEnds) {
  Tenants(R"("acme": {})");
  const std::string doomed = Token("acme", "agent", {"--name", "doomed"});
  const std::string good = Token("acme", "agent", {"--name", "good"});
  StartTls();
  auto doomed_stream = Events(doomed);
  auto good_stream = Events(good);
  ASSERT_EQ(Sandrun({"token", "revoke", "doomed"}).exit_code, 0);
  Reload();

  auto r = Post("/v1/tools/exec", good,
                R"({"tool":"exec","background":true,"command":"echo after-revoke"})");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string id = Details(r.json(), "sessionId");
  ASSERT_FALSE(id.empty()) << r.body;
  // The event was published: the good token's stream has it.
  ASSERT_TRUE(good_stream->WaitFor("\"sessionId\":\"" + id + "\"", std::chrono::seconds(10)))
      << good_stream->Output();
  ASSERT_TRUE(doomed_stream->WaitFor("\"code\":\"unauthorized\"", std::chrono::seconds(10)))
      << doomed_stream->Output();
  EXPECT_EQ(doomed_stream->Output().find("\"" + id + "\""), std::string::npos)
      << doomed_stream->Output();
}

}  // namespace
}  // namespace sandrun::testing

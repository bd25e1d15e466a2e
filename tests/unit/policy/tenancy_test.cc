// Tenant isolation below the front end (issue 14), the pure parts: a hosted tenant's scope keys,
// scratch dirs, container names and labels, its approvals file, and hostExecution in the
// decision itself (so `policy check` and every exec path see it). Tenant "" stays as it was.
#include <gtest/gtest.h>

#include <string>

#include "runner/config/approvals_file.h"
#include "runner/policy/gate.h"
#include "runner/policy/sandbox_spec.h"
#include "runner/policy/tool_policy.h"
#include "sandbox/executors/docker/container_pool.h"

namespace sandrun::policy {
namespace {

using config::SandboxScope;

Caller Of(const std::string& tenant, const std::string& agent = "main",
          const std::string& session = "main") {
  Caller c;
  c.tenant = tenant;
  c.agent_id = agent;
  c.session_key = session;
  return c;
}

TEST(TenantScopeKey, LocalKeysAreUnchanged) {
  EXPECT_EQ(SandboxScopeKey(SandboxScope::kAgent, Of("")), "agent:main");
  EXPECT_EQ(SandboxScopeKey(SandboxScope::kSession, Of("", "main", "s1")), "s1");
  EXPECT_EQ(SandboxScopeKey(SandboxScope::kShared, Of("")), "shared");
}

TEST(TenantScopeKey, TenantsNeverShareAKey) {
  for (SandboxScope scope : {SandboxScope::kAgent, SandboxScope::kSession, SandboxScope::kShared}) {
    const std::string acme = SandboxScopeKey(scope, Of("acme"));
    const std::string globex = SandboxScopeKey(scope, Of("globex"));
    const std::string local = SandboxScopeKey(scope, Of(""));
    EXPECT_NE(acme, globex);
    EXPECT_NE(acme, local);
    EXPECT_EQ(acme.rfind("acme/", 0), 0u) << acme;
    EXPECT_NE(ScratchWorkspaceDir("/state/sandboxes", scope, acme),
              ScratchWorkspaceDir("/state/sandboxes", scope, globex));
    EXPECT_NE(ScratchWorkspaceDir("/state/sandboxes", scope, acme),
              ScratchWorkspaceDir("/state/sandboxes", scope, local));
  }
  EXPECT_EQ(SandboxScopeKey(SandboxScope::kAgent, Of("acme")), "acme/agent:main");
  // A local session key may hold ':' but never '/': it cannot spell a tenant's key.
  EXPECT_TRUE(ValidateCallerIds(Of("", "main", "acme/agent:main")).has_value());
}

TEST(TenantScopeKey, InvalidTenantIdsAreRefused) {
  for (const char* bad : {"Acme", "acme/x", "-acme", "a b", "../etc"}) {
    auto e = ValidateCallerIds(Of(bad));
    ASSERT_TRUE(e.has_value()) << bad;
    EXPECT_EQ(e->WireCode(), "invalid-request");
  }
  EXPECT_FALSE(ValidateCallerIds(Of("acme-2")).has_value());
}

exec::SandboxSpec Spec(const std::string& tenant, const std::string& key) {
  exec::SandboxSpec s;
  s.instance_id = "0123456789abcdef";
  s.tenant = tenant;
  s.scope_key = key;
  return s;
}

TEST(TenantContainer, NameCarriesTheTenant) {
  EXPECT_EQ(exec::ContainerName(Spec("", "shared")), "sandrun-sbx-01234567-shared");
  EXPECT_EQ(exec::ContainerName(Spec("acme", "acme/shared")), "sandrun-sbx-01234567-acme-shared");
  const std::string acme = exec::ContainerName(Spec("acme", "acme/agent:main"));
  const std::string local = exec::ContainerName(Spec("", "agent:main"));
  EXPECT_EQ(acme.rfind("sandrun-sbx-01234567-acme-agent-main-", 0), 0u) << acme;
  EXPECT_EQ(acme, "sandrun-sbx-01234567-acme-" +
                      local.substr(std::string("sandrun-sbx-01234567-").size()));
  const std::string free = exec::CollisionFreeContainerName(Spec("acme", "acme/agent:main"));
  EXPECT_EQ(free.rfind("sandrun-sbx-01234567-acme-", 0), 0u) << free;
  EXPECT_NE(free, exec::CollisionFreeContainerName(Spec("globex", "globex/agent:main")));
  // The longest tenant id and session key still make a Docker name.
  const std::string tenant(32, 't');
  const std::string key = tenant + "/" + std::string(128, 's');
  EXPECT_LE(exec::ContainerName(Spec(tenant, key)).size(), 63u);
  EXPECT_LE(exec::CollisionFreeContainerName(Spec(tenant, key)).size(), 63u);
}

TEST(TenantContainer, EveryTenantContainerIsLabelledWithItsTenant) {
  auto acme = exec::BuildContainerSpec(Spec("acme", "acme/agent:main"), 1);
  EXPECT_EQ(acme.labels.at(exec::kTenantLabel), "acme");
  EXPECT_EQ(acme.labels.at(exec::kScopeLabel), "acme/agent:main");
  // The local server's containers are what they were: same labels, same config hash.
  auto local = exec::BuildContainerSpec(Spec("", "agent:main"), 1);
  EXPECT_EQ(local.labels.count(exec::kTenantLabel), 0u);
  EXPECT_NE(exec::ConfigHash(Spec("acme", "agent:main")), exec::ConfigHash(Spec("", "agent:main")));
}

TEST(TenantApprovals, EachTenantHasItsOwnFile) {
  EXPECT_EQ(config::ApprovalsPath("/s", ""), "/s/exec-approvals.json");
  EXPECT_EQ(config::ApprovalsPath("/s", ""), config::ApprovalsPath("/s"));
  EXPECT_EQ(config::ApprovalsPath("/s", "acme"), "/s/tenants/acme/exec-approvals.json");
  EXPECT_EQ(config::TenantStateDir("/s", "acme"), "/s/tenants/acme");
}

ExecRequest Req(const std::string& command = "echo hi") {
  ExecRequest r;
  r.command = command;
  return r;
}

TEST(TenantHostExecution, SandboxCallsAreAllowed) {
  config::AgentSettings s;  // sandbox.mode all by default
  Decision d = Decide(s, Req(), Of("acme"));
  EXPECT_TRUE(d.allowed()) << d.refusal->message;
  EXPECT_EQ(d.effective_host, Host::kSandbox);
}

TEST(TenantHostExecution, GatewayNodeAndElevatedAreForbidden) {
  config::AgentSettings s;
  s.exec.host = "gateway";  // overrides to the gateway allowed, for the callers who may
  s.elevated.enabled = true;
  s.elevated.allow_from["api"] = {"*"};
  ExecRequest gateway = Req();
  gateway.host = "gateway";
  ExecRequest node = Req();
  node.host = "node";
  ExecRequest elevated = Req();
  elevated.elevated = true;
  Caller acme = Of("acme");
  acme.provider = "api";
  acme.sender = "x";
  for (const ExecRequest& r : {gateway, node, elevated, Req()}) {
    Decision d = Decide(s, r, acme);
    ASSERT_FALSE(d.allowed());
    EXPECT_EQ(d.refusal->WireCode(), "forbidden");
    EXPECT_NE(d.refusal->message.find("tenants.acme.hostExecution"), std::string::npos)
        << d.refusal->message;
  }
  // Sandbox mode off: the call would run on the gateway.
  config::AgentSettings off;
  off.sandbox.mode = config::SandboxMode::kOff;
  Decision d = Decide(off, Req(), Of("acme"));
  ASSERT_FALSE(d.allowed());
  EXPECT_EQ(d.refusal->WireCode(), "forbidden");
  // The same calls for tenant "" and for a tenant with host execution are not forbidden.
  Caller trusted = acme;
  trusted.host_execution = true;
  Caller local = acme;
  local.tenant = "";
  for (const Caller& c : {trusted, local}) {
    EXPECT_TRUE(Decide(s, gateway, c).allowed()) << Decide(s, gateway, c).refusal->message;
    EXPECT_TRUE(Decide(s, elevated, c).allowed()) << Decide(s, elevated, c).refusal->message;
    EXPECT_TRUE(Decide(off, Req(), c).allowed()) << Decide(off, Req(), c).refusal->message;
  }
}

TEST(TenantHostExecution, ApplyPatchOnTheGatewayIsForbidden) {
  config::AgentSettings s;
  s.sandbox.mode = config::SandboxMode::kOff;
  ApplyPatchContext ctx;
  ctx.settings = &s;
  ctx.tools = {&s.tools, &s.tools};
  ctx.caller = Of("acme");
  ctx.workspace_dir = "/state/tenants/acme/workspaces/main";
  auto t = GateApplyPatch(ctx);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().WireCode(), "forbidden");
  EXPECT_NE(t.error().message.find("tenants.acme.hostExecution"), std::string::npos);
  ctx.caller.host_execution = true;
  EXPECT_TRUE(GateApplyPatch(ctx));
  ctx.caller = Of("");
  EXPECT_TRUE(GateApplyPatch(ctx));
}

}  // namespace
}  // namespace sandrun::policy

// A session's exec state in the decision (issue 15): what each override does, through the same
// Decide the exec path and `policy check` use, and which changes an operator may not make.
#include "runner/policy/session_overrides.h"

#include <gtest/gtest.h>

#include <string>

#include "runner/config/session_state.h"
#include "runner/config/settings.h"
#include "runner/policy/gate.h"

namespace sandrun::policy {
namespace {

struct Call {
  config::AgentSettings settings;
  Caller caller;
};

// Sandbox mode all (the default), elevated enabled for provider api, sender ops.
config::AgentSettings Base() {
  config::AgentSettings s;
  s.elevated.enabled = true;
  s.elevated.allow_from["api"] = {"ops"};
  return s;
}

Call With(const config::SessionState& state, config::AgentSettings settings = Base()) {
  Call c{std::move(settings), {}};
  c.caller.provider = "api";
  c.caller.sender = "ops";
  c.caller.session_key = "A";
  ApplySessionState(state, &c.settings, &c.caller);
  return c;
}

Decision DecideFor(const Call& c, ExecRequest request = {}) {
  if (request.command.empty()) request.command = "echo hi";
  return Decide(c.settings, request, c.caller);
}

config::SessionState Elevated(const char* level) {
  config::SessionState s;
  s.elevated = level;
  return s;
}

TEST(SessionOverrides, NoStateRunsAsConfigured) {
  Decision d = DecideFor(With({}));
  ASSERT_TRUE(d.allowed());
  EXPECT_EQ(d.effective_host, Host::kSandbox);
  EXPECT_EQ(d.elevated, ElevatedMode::kOff);
}

TEST(SessionOverrides, ElevatedFullLeavesTheSandboxAndSkipsApprovals) {
  config::AgentSettings settings = Base();
  settings.exec.ask = config::Ask::kAlways;
  Decision d = DecideFor(With(Elevated("full"), settings));
  ASSERT_TRUE(d.allowed()) << d.refusal->message;
  EXPECT_EQ(d.effective_host, Host::kGateway);
  EXPECT_EQ(d.elevated, ElevatedMode::kFull);
  EXPECT_EQ(d.effective.security, config::Security::kFull);
  EXPECT_EQ(d.effective.ask, config::Ask::kOff);
}

TEST(SessionOverrides, ElevatedOnAndAskKeepTheApprovalPolicy) {
  for (const char* level : {"on", "ask"}) {
    config::AgentSettings settings = Base();
    settings.exec.ask = config::Ask::kAlways;
    Decision d = DecideFor(With(Elevated(level), settings));
    ASSERT_TRUE(d.allowed()) << level;
    EXPECT_EQ(d.effective_host, Host::kGateway) << level;
    EXPECT_EQ(d.elevated, ElevatedMode::kAsk) << level;
    EXPECT_EQ(d.effective.ask, config::Ask::kAlways) << level;
    EXPECT_TRUE(d.needs_approval_flow) << level;
  }
}

TEST(SessionOverrides, ElevatedOffOverridesAConfiguredDefaultLevel) {
  config::AgentSettings settings = Base();
  settings.elevated.default_level = "full";
  EXPECT_EQ(DecideFor(With({}, settings)).effective_host, Host::kGateway);
  EXPECT_EQ(DecideFor(With(Elevated("off"), settings)).effective_host, Host::kSandbox);
}

TEST(SessionOverrides, TheGatesStillDecide) {
  // A sender allowFrom does not name: the session's level does not apply (OpenClaw's default
  // mode is off unless enabled && allowed), the call stays in the sandbox.
  Call c = With(Elevated("full"));
  c.caller.sender = "someone-else";
  EXPECT_EQ(DecideFor(c).effective_host, Host::kSandbox);
  config::AgentSettings disabled = Base();
  disabled.elevated.enabled = false;
  EXPECT_EQ(DecideFor(With(Elevated("full"), disabled)).effective_host, Host::kSandbox);
  // A per-call elevated:false turns it off for that call.
  ExecRequest off;
  off.elevated = false;
  EXPECT_EQ(DecideFor(With(Elevated("full")), off).effective_host, Host::kSandbox);
}

TEST(SessionOverrides, ALevelTheGatesRefuseIsAWarningNotASilentMove) {
  Call allowed = With(Elevated("full"));
  EXPECT_FALSE(SessionElevatedWarning(allowed.settings, allowed.caller, std::nullopt));
  Call stranger = With(Elevated("full"));
  stranger.caller.sender = "someone-else";
  auto w = SessionElevatedWarning(stranger.settings, stranger.caller, std::nullopt);
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->find("elevated level (full) does not apply"), std::string::npos) << *w;
  EXPECT_NE(w->find("tools.elevated.allowFrom.api does not name sender \"someone-else\""),
            std::string::npos)
      << *w;
  EXPECT_FALSE(SessionElevatedWarning(stranger.settings, stranger.caller, false));
  EXPECT_FALSE(SessionElevatedWarning(stranger.settings, With({}).caller, std::nullopt));
}

TEST(SessionOverrides, HostIsARequestWithinTheConfiguredHost) {
  config::SessionState gateway;
  gateway.host = "gateway";
  // auto + sandboxed session: gateway is refused, as a per-call host would be.
  Decision refused = DecideFor(With(gateway));
  ASSERT_FALSE(refused.allowed());
  EXPECT_EQ(refused.refusal->WireCode(), "host-not-allowed");
  // Sandbox mode off: auto allows it.
  config::AgentSettings off = Base();
  off.sandbox.mode = config::SandboxMode::kOff;
  Decision d = DecideFor(With(gateway, off));
  ASSERT_TRUE(d.allowed());
  EXPECT_EQ(d.effective_host, Host::kGateway);
  // A per-call host wins over the session's.
  ExecRequest sandbox;
  sandbox.host = "sandbox";
  EXPECT_EQ(DecideFor(With(gateway), sandbox).effective_host, Host::kSandbox);
}

TEST(SessionOverrides, SecurityAskAndNodeReplaceToolsExec) {
  config::SessionState s;
  s.security = "allowlist";
  s.ask = "always";
  s.node = "mac-mini";
  Call c = With(s);
  EXPECT_EQ(c.settings.exec.security, config::Security::kAllowlist);
  EXPECT_EQ(c.settings.exec.ask, config::Ask::kAlways);
  EXPECT_EQ(c.settings.exec.node, "mac-mini");
  config::SessionState deny;
  deny.security = "deny";
  Decision d = DecideFor(With(deny));
  ASSERT_FALSE(d.allowed());
  EXPECT_EQ(d.refusal->WireCode(), "denied");
}

TEST(SessionChange, RefusesAHostConfigDoesNotAllow) {
  config::SessionState next;
  next.host = "gateway";
  Caller caller;
  caller.session_key = "A";
  auto e = CheckSessionChange(Base(), caller, next);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->WireCode(), "host-not-allowed");
  EXPECT_NE(e->message.find("exec host not allowed (requested gateway"), std::string::npos);
  next.host = "sandbox";
  EXPECT_FALSE(CheckSessionChange(Base(), caller, next).has_value());
}

TEST(SessionChange, RefusesElevatedWhileItIsDisabled) {
  config::AgentSettings disabled = Base();
  disabled.elevated.enabled = false;
  Caller caller;
  auto e = CheckSessionChange(disabled, caller, Elevated("full"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->WireCode(), "elevated-unavailable");
  EXPECT_NE(e->message.find("elevated is not available right now"), std::string::npos);
  EXPECT_FALSE(CheckSessionChange(disabled, caller, Elevated("off")).has_value());
}

TEST(SessionChange, ATenantWithoutHostExecutionStaysInTheSandbox) {
  Caller caller;
  caller.tenant = "acme";
  caller.host_execution = false;
  for (const char* level : {"on", "ask", "full"}) {
    auto e = CheckSessionChange(Base(), caller, Elevated(level));
    ASSERT_TRUE(e.has_value()) << level;
    EXPECT_EQ(e->WireCode(), "forbidden") << level;
  }
  config::AgentSettings off = Base();
  off.sandbox.mode = config::SandboxMode::kOff;
  config::SessionState node;
  node.host = "node";
  EXPECT_EQ(CheckSessionChange(off, caller, node)->WireCode(), "forbidden");
  EXPECT_FALSE(CheckSessionChange(Base(), caller, Elevated("off")).has_value());
  caller.host_execution = true;
  EXPECT_FALSE(CheckSessionChange(Base(), caller, Elevated("full")).has_value());
}

// Even a state written by hand (not through CheckSessionChange) cannot take a tenant without
// hostExecution out of the sandbox: the gate refuses the call.
TEST(SessionOverrides, AHandWrittenStateCannotTakeATenantToTheHost) {
  Call c = With(Elevated("full"));
  c.caller.tenant = "acme";
  c.caller.host_execution = false;
  Decision d = DecideFor(c);
  ASSERT_FALSE(d.allowed());
  EXPECT_EQ(d.refusal->WireCode(), "forbidden");
}

}  // namespace
}  // namespace sandrun::policy

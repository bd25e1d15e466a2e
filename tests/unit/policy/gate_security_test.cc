// The gate's security/ask decisions (modes table, explicit overrides, per-call tightening,
// elevated full, deny everywhere) and the order in which refusals win.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>

#include "runner/policy/gate.h"

namespace sandrun::policy {
namespace {

using config::Ask;
using config::ExecMode;
using config::SandboxMode;
using config::Security;

ExecRequest Req(std::string command = "ls") {
  ExecRequest r;
  r.command = std::move(command);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Security and ask.

struct SecurityRow {
  std::string name;
  std::optional<ExecMode> mode;
  std::optional<Security> security;
  std::optional<Ask> ask;
  std::optional<std::string> call_security;
  std::optional<std::string> call_ask;
  bool elevated_full;  // enable elevated with defaultLevel full and request it
  bool sandboxed;
  std::string want_security;
  std::string want_ask;
  bool needs_approval_flow;
  std::string code;  // "" = allowed by Decide
};
class SecurityTest : public ::testing::TestWithParam<SecurityRow> {};

TEST_P(SecurityTest, Resolves) {
  const SecurityRow& row = GetParam();
  config::AgentSettings s;
  s.exec.mode = row.mode;
  s.exec.security = row.security;
  s.exec.ask = row.ask;
  s.sandbox.mode = row.sandboxed ? SandboxMode::kAll : SandboxMode::kOff;
  ExecRequest r = Req();
  r.security = row.call_security;
  r.ask = row.call_ask;
  if (row.elevated_full) {
    s.elevated.enabled = true;
    s.elevated.allow_from["cli"] = {"*"};
    s.elevated.default_level = "full";
    r.elevated = true;
  }
  Decision d = Decide(s, r, Caller{});
  EXPECT_EQ(SecurityName(d.effective.security), row.want_security);
  EXPECT_EQ(AskName(d.effective.ask), row.want_ask);
  EXPECT_EQ(d.needs_approval_flow, row.needs_approval_flow);
  if (row.code.empty()) {
    EXPECT_FALSE(d.refusal.has_value()) << d.refusal->message;
  } else {
    ASSERT_TRUE(d.refusal.has_value());
    EXPECT_EQ(d.refusal->WireCode(), row.code);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, SecurityTest,
    ::testing::Values(
        // Nothing configured: full/off on every host.
        SecurityRow{"none_gateway", {}, {}, {}, {}, {}, false, false, "full", "off", false, ""},
        SecurityRow{"none_sandbox", {}, {}, {}, {}, {}, false, true, "full", "off", false, ""},
        // The seeds' modes table.
        SecurityRow{"mode_deny_gateway",
                    ExecMode::kDeny,
                    {},
                    {},
                    {},
                    {},
                    false,
                    false,
                    "deny",
                    "off",
                    false,
                    "denied"},
        SecurityRow{"mode_deny_sandbox",
                    ExecMode::kDeny,
                    {},
                    {},
                    {},
                    {},
                    false,
                    true,
                    "deny",
                    "off",
                    false,
                    "denied"},
        SecurityRow{"mode_allowlist_gateway",
                    ExecMode::kAllowlist,
                    {},
                    {},
                    {},
                    {},
                    false,
                    false,
                    "allowlist",
                    "off",
                    true,
                    ""},
        SecurityRow{"mode_allowlist_sandbox_runs",
                    ExecMode::kAllowlist,
                    {},
                    {},
                    {},
                    {},
                    false,
                    true,
                    "allowlist",
                    "off",
                    false,
                    ""},
        SecurityRow{"mode_ask",
                    ExecMode::kAsk,
                    {},
                    {},
                    {},
                    {},
                    false,
                    false,
                    "allowlist",
                    "on-miss",
                    true,
                    ""},
        SecurityRow{"mode_auto",
                    ExecMode::kAuto,
                    {},
                    {},
                    {},
                    {},
                    false,
                    false,
                    "allowlist",
                    "on-miss",
                    true,
                    ""},
        SecurityRow{"mode_ask_sandbox_runs",
                    ExecMode::kAsk,
                    {},
                    {},
                    {},
                    {},
                    false,
                    true,
                    "allowlist",
                    "on-miss",
                    false,
                    ""},
        SecurityRow{
            "mode_full", ExecMode::kFull, {}, {}, {}, {}, false, false, "full", "off", false, ""},
        // Explicit security/ask override the mode's.
        SecurityRow{"full_mode_security_allowlist",
                    ExecMode::kFull,
                    Security::kAllowlist,
                    {},
                    {},
                    {},
                    false,
                    false,
                    "allowlist",
                    "off",
                    true,
                    ""},
        SecurityRow{"deny_mode_security_full",
                    ExecMode::kDeny,
                    Security::kFull,
                    {},
                    {},
                    {},
                    false,
                    false,
                    "full",
                    "off",
                    false,
                    ""},
        SecurityRow{"full_mode_security_deny",
                    ExecMode::kFull,
                    Security::kDeny,
                    {},
                    {},
                    {},
                    false,
                    true,
                    "deny",
                    "off",
                    false,
                    "denied"},
        SecurityRow{"ask_mode_ask_off",
                    ExecMode::kAsk,
                    {},
                    Ask::kOff,
                    {},
                    {},
                    false,
                    false,
                    "allowlist",
                    "off",
                    true,
                    ""},
        SecurityRow{"allowlist_mode_ask_always",
                    ExecMode::kAllowlist,
                    {},
                    Ask::kAlways,
                    {},
                    {},
                    false,
                    false,
                    "allowlist",
                    "always",
                    true,
                    ""},
        SecurityRow{"security_only",
                    {},
                    Security::kAllowlist,
                    {},
                    {},
                    {},
                    false,
                    false,
                    "allowlist",
                    "off",
                    true,
                    ""},
        SecurityRow{"full_with_ask_always",
                    {},
                    Security::kFull,
                    Ask::kAlways,
                    {},
                    {},
                    false,
                    false,
                    "full",
                    "always",
                    true,
                    ""},
        // Per-call security is ignored (both ways).
        SecurityRow{"call_security_deny_ignored",
                    {},
                    {},
                    {},
                    "deny",
                    {},
                    false,
                    false,
                    "full",
                    "off",
                    false,
                    ""},
        SecurityRow{"call_security_full_ignored",
                    ExecMode::kAllowlist,
                    {},
                    {},
                    "full",
                    {},
                    false,
                    false,
                    "allowlist",
                    "off",
                    true,
                    ""},
        SecurityRow{"call_security_invalid",
                    {},
                    {},
                    {},
                    "root",
                    {},
                    false,
                    false,
                    "full",
                    "off",
                    false,
                    "invalid-request"},
        // Per-call ask: ignored when off, otherwise only tightens.
        SecurityRow{"call_ask_ignored_when_off",
                    {},
                    {},
                    {},
                    {},
                    "always",
                    false,
                    false,
                    "full",
                    "off",
                    false,
                    ""},
        SecurityRow{"call_ask_tightens",
                    ExecMode::kAsk,
                    {},
                    {},
                    {},
                    "always",
                    false,
                    false,
                    "allowlist",
                    "always",
                    true,
                    ""},
        SecurityRow{"call_ask_cannot_loosen",
                    ExecMode::kAsk,
                    {},
                    {},
                    {},
                    "off",
                    false,
                    false,
                    "allowlist",
                    "on-miss",
                    true,
                    ""},
        SecurityRow{"call_ask_case_trim",
                    ExecMode::kAsk,
                    {},
                    {},
                    {},
                    " ALWAYS ",
                    false,
                    false,
                    "allowlist",
                    "always",
                    true,
                    ""},
        SecurityRow{"call_ask_invalid",
                    {},
                    {},
                    {},
                    {},
                    "sometimes",
                    false,
                    false,
                    "full",
                    "off",
                    false,
                    "invalid-request"},
        // Elevated full forces full/off, except over an explicit deny.
        SecurityRow{"elevated_full_over_allowlist",
                    ExecMode::kAllowlist,
                    {},
                    {},
                    {},
                    {},
                    true,
                    true,
                    "full",
                    "off",
                    false,
                    ""},
        SecurityRow{"elevated_full_over_ask_always",
                    {},
                    {},
                    Ask::kAlways,
                    {},
                    "always",
                    true,
                    true,
                    "full",
                    "off",
                    false,
                    ""},
        SecurityRow{"elevated_full_not_over_deny",
                    ExecMode::kDeny,
                    {},
                    {},
                    {},
                    {},
                    true,
                    true,
                    "deny",
                    "off",
                    false,
                    "denied"}),
    [](const ::testing::TestParamInfo<SecurityRow>& row_info) { return row_info.param.name; });

TEST(Security, ModesTable) {
  EXPECT_EQ(ModeSecurityAsk(ExecMode::kDeny).security, Security::kDeny);
  EXPECT_EQ(ModeSecurityAsk(ExecMode::kDeny).ask, Ask::kOff);
  EXPECT_EQ(ModeSecurityAsk(ExecMode::kAllowlist).security, Security::kAllowlist);
  EXPECT_EQ(ModeSecurityAsk(ExecMode::kAllowlist).ask, Ask::kOff);
  EXPECT_EQ(ModeSecurityAsk(ExecMode::kAsk).security, Security::kAllowlist);
  EXPECT_EQ(ModeSecurityAsk(ExecMode::kAsk).ask, Ask::kOnMiss);
  EXPECT_EQ(ModeSecurityAsk(ExecMode::kAuto).security, Security::kAllowlist);
  EXPECT_EQ(ModeSecurityAsk(ExecMode::kAuto).ask, Ask::kOnMiss);
  EXPECT_EQ(ModeSecurityAsk(ExecMode::kFull).security, Security::kFull);
  EXPECT_EQ(ModeSecurityAsk(ExecMode::kFull).ask, Ask::kOff);
}

TEST(Security, DenyMessageNamesTheEffectiveHost) {
  config::AgentSettings s;
  s.exec.mode = ExecMode::kDeny;
  Decision d = Decide(s, Req(), Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->message, "exec denied: host=sandbox security=deny");
  s.sandbox.mode = SandboxMode::kOff;
  d = Decide(s, Req(), Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->message, "exec denied: host=gateway security=deny");
  s.exec.host = "node";
  d = Decide(s, Req(), Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->message, "exec denied: host=node security=deny");
}

// ---------------------------------------------------------------------------------------------
// Refusal order and the remaining Decide checks.

struct OrderRow {
  std::string name;
  std::function<void(config::AgentSettings&, ExecRequest&)> setup;
  std::string code;
};
class RefusalOrderTest : public ::testing::TestWithParam<OrderRow> {};

TEST_P(RefusalOrderTest, FirstRefusalWins) {
  config::AgentSettings s;
  ExecRequest r = Req();
  GetParam().setup(s, r);
  Decision d = Decide(s, r, Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->WireCode(), GetParam().code) << d.refusal->message;
}

INSTANTIATE_TEST_SUITE_P(
    Order, RefusalOrderTest,
    ::testing::Values(OrderRow{"empty_before_host",
                               [](config::AgentSettings&, ExecRequest& r) {
                                 r.command = "";
                                 r.host = "bogus";
                               },
                               "invalid-request"},
                      OrderRow{"blank_command",
                               [](config::AgentSettings&, ExecRequest& r) { r.command = " \n\t "; },
                               "invalid-request"},
                      OrderRow{"nul_in_command",
                               [](config::AgentSettings&, ExecRequest& r) {
                                 r.command = std::string("ls\0x", 4);
                               },
                               "invalid-request"},
                      OrderRow{"oversized_command",
                               [](config::AgentSettings&, ExecRequest& r) {
                                 r.command = std::string((1 << 20) + 1, 'a');
                               },
                               "invalid-request"},
                      OrderRow{"host_before_elevated",
                               [](config::AgentSettings&, ExecRequest& r) {
                                 r.host = "bogus";
                                 r.elevated = true;
                               },
                               "invalid-host"},
                      OrderRow{"elevated_before_override",
                               [](config::AgentSettings&, ExecRequest& r) {
                                 r.host = "gateway";
                                 r.elevated = true;
                               },
                               "elevated-unavailable"},
                      OrderRow{"override_before_approve",
                               [](config::AgentSettings&, ExecRequest& r) {
                                 r.host = "gateway";
                                 r.command = "/approve abc deny";
                               },
                               "host-not-allowed"},
                      OrderRow{"sandbox_unavailable_before_approve",
                               [](config::AgentSettings& s, ExecRequest& r) {
                                 s.sandbox.mode = SandboxMode::kOff;
                                 r.host = "sandbox";
                                 r.command = "/approve abc deny";
                               },
                               "sandbox-unavailable"},
                      OrderRow{"approve_before_env",
                               [](config::AgentSettings& s, ExecRequest& r) {
                                 s.sandbox.mode = SandboxMode::kOff;
                                 r.command = "/approve abc deny";
                                 r.env["PATH"] = "/x";
                               },
                               "approve-command"},
                      OrderRow{"env_before_deny",
                               [](config::AgentSettings& s, ExecRequest& r) {
                                 s.sandbox.mode = SandboxMode::kOff;
                                 s.exec.mode = ExecMode::kDeny;
                                 r.env["LD_PRELOAD"] = "/x.so";
                               },
                               "security-violation"},
                      OrderRow{"nul_env_in_sandbox",
                               [](config::AgentSettings&, ExecRequest& r) {
                                 r.env["FOO"] = std::string("a\0b", 3);
                               },
                               "security-violation"},
                      OrderRow{"deny_before_node",
                               [](config::AgentSettings& s, ExecRequest&) {
                                 s.exec.host = "node";
                                 s.exec.mode = ExecMode::kDeny;
                               },
                               "denied"},
                      OrderRow{"node_binding",
                               [](config::AgentSettings& s, ExecRequest& r) {
                                 s.exec.host = "node";
                                 s.exec.node = "mac-mini";
                                 r.node = "other";
                               },
                               "node-not-allowed"},
                      OrderRow{"node_binding_same_node",
                               [](config::AgentSettings& s, ExecRequest& r) {
                                 s.exec.host = "node";
                                 s.exec.node = "mac-mini";
                                 r.node = "mac-mini";
                               },
                               "node-unavailable"}),
    [](const ::testing::TestParamInfo<OrderRow>& row_info) { return row_info.param.name; });

TEST(Decide, EmptyCommandText) {
  ExecRequest r = Req("");
  Decision d = Decide(config::AgentSettings{}, r, Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->message, "Provide a command to start.");
}

TEST(Decide, EnvRulesDependOnTheHost) {
  config::AgentSettings s;
  ExecRequest r = Req();
  r.env = {{"PATH", "/opt/bin"}, {"LD_PRELOAD", "/x.so"}, {"NODE_OPTIONS", "--x"}};
  EXPECT_TRUE(Decide(s, r, Caller{}).allowed());  // sandbox: no blocking
  s.sandbox.mode = SandboxMode::kOff;
  Decision d = Decide(s, r, Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->WireCode(), "security-violation");
  EXPECT_EQ(d.refusal->message,
            "Security Violation: Custom 'PATH' variable is forbidden during host execution "
            "(blocked override keys: LD_PRELOAD, NODE_OPTIONS, PATH).");
  r.env = {{"BAD-KEY", "1"}};
  s.sandbox.mode = SandboxMode::kAll;
  d = Decide(s, r, Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->message, "Security Violation: invalid non-portable override keys: BAD-KEY.");
}

TEST(Decide, RefusedDecisionStillFillsHosts) {
  config::AgentSettings s;
  ExecRequest r = Req();
  r.host = "gateway";
  Decision d = Decide(s, r, Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.requested_host, Host::kGateway);
  EXPECT_EQ(d.configured_host, Host::kAuto);
  EXPECT_EQ(d.effective_host, Host::kGateway);
  EXPECT_TRUE(d.sandboxed);
}

TEST(Decide, ApproveGuardAppliesOnEveryHost) {
  config::AgentSettings s;
  ExecRequest r = Req("bash -lc '/approve 1234 allow-always'");
  Decision d = Decide(s, r, Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->WireCode(), "approve-command");
  EXPECT_EQ(d.refusal->message,
            "exec cannot run /approve commands. Show the /approve command to the user as chat "
            "text, or route it through the approval command handler instead of shell "
            "execution.");
  s.sandbox.mode = SandboxMode::kOff;
  EXPECT_EQ(Decide(s, r, Caller{}).refusal->WireCode(), "approve-command");
}

}  // namespace
}  // namespace sandrun::policy

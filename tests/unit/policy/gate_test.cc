// The gate's host decisions: the host resolution matrix (reference §1.4), "sandboxed", invalid
// host values, elevated (§1.3). Security/ask and refusal order: gate_security_test.cc.
#include "runner/policy/gate.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sandrun::policy {
namespace {

using config::Ask;
using config::SandboxMode;
using config::Security;

std::string NotAllowed(const std::string& r, const std::string& c, const std::string& x) {
  return "exec host not allowed (requested " + r + "; configured host is " + c +
         "; set tools.exec.host=" + x + " to allow this override).";
}

constexpr char kSandboxUnavailable[] =
    "exec host=sandbox requires a sandbox runtime for this session.\nEnable sandbox mode "
    "(`agents.defaults.sandbox.mode=\"non-main\"` or `\"all\"`) or use host=auto/gateway/node.";
constexpr char kNodeUnavailable[] =
    "exec host=node requires a paired node (none available). This requires a companion app or "
    "node host.";

ExecRequest Req(std::string command = "ls") {
  ExecRequest r;
  r.command = std::move(command);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Host resolution matrix: configured x requested x sandboxed.

struct HostRow {
  std::string name;
  std::string configured;
  std::optional<std::string> requested;
  bool sandboxed;
  std::string effective;  // expected effective host
  std::string code;       // "" = allowed
  std::string message;
};

class HostMatrixTest : public ::testing::TestWithParam<HostRow> {};

TEST_P(HostMatrixTest, Resolves) {
  const HostRow& row = GetParam();
  config::AgentSettings s;
  s.exec.host = row.configured;
  s.sandbox.mode = row.sandboxed ? SandboxMode::kAll : SandboxMode::kOff;
  ExecRequest r = Req();
  r.host = row.requested;
  Decision d = Decide(s, r, Caller{});
  EXPECT_EQ(HostName(d.effective_host), row.effective);
  EXPECT_EQ(d.sandboxed, row.sandboxed);
  if (row.code.empty()) {
    EXPECT_FALSE(d.refusal.has_value()) << d.refusal->message;
  } else {
    ASSERT_TRUE(d.refusal.has_value());
    EXPECT_EQ(d.refusal->WireCode(), row.code);
    EXPECT_EQ(d.refusal->message, row.message);
  }
}

const std::string kNA = "host-not-allowed";

INSTANTIATE_TEST_SUITE_P(
    Matrix, HostMatrixTest,
    ::testing::Values(
        // sandboxed, configured auto
        HostRow{"sbx_auto_none", "auto", std::nullopt, true, "sandbox", "", ""},
        HostRow{"sbx_auto_auto", "auto", "auto", true, "sandbox", "", ""},
        HostRow{"sbx_auto_sandbox", "auto", "sandbox", true, "sandbox", "", ""},
        HostRow{"sbx_auto_gateway", "auto", "gateway", true, "gateway", kNA,
                NotAllowed("gateway", "auto", "gateway")},
        HostRow{"sbx_auto_node", "auto", "node", true, "node", kNA,
                NotAllowed("node", "auto", "node")},
        // sandboxed, configured sandbox
        HostRow{"sbx_sandbox_none", "sandbox", std::nullopt, true, "sandbox", "", ""},
        HostRow{"sbx_sandbox_auto", "sandbox", "auto", true, "sandbox", kNA,
                NotAllowed("auto", "sandbox", "auto or auto")},
        HostRow{"sbx_sandbox_sandbox", "sandbox", "sandbox", true, "sandbox", "", ""},
        HostRow{"sbx_sandbox_gateway", "sandbox", "gateway", true, "gateway", kNA,
                NotAllowed("gateway", "sandbox", "gateway or auto")},
        HostRow{"sbx_sandbox_node", "sandbox", "node", true, "node", kNA,
                NotAllowed("node", "sandbox", "node or auto")},
        // sandboxed, configured gateway
        HostRow{"sbx_gateway_none", "gateway", std::nullopt, true, "gateway", "", ""},
        HostRow{"sbx_gateway_auto", "gateway", "auto", true, "sandbox", kNA,
                NotAllowed("auto", "gateway", "auto or auto")},
        HostRow{"sbx_gateway_sandbox", "gateway", "sandbox", true, "sandbox", kNA,
                NotAllowed("sandbox", "gateway", "sandbox or auto")},
        HostRow{"sbx_gateway_gateway", "gateway", "gateway", true, "gateway", "", ""},
        HostRow{"sbx_gateway_node", "gateway", "node", true, "node", kNA,
                NotAllowed("node", "gateway", "node or auto")},
        // sandboxed, configured node
        HostRow{"sbx_node_none", "node", std::nullopt, true, "node", "node-unavailable",
                kNodeUnavailable},
        HostRow{"sbx_node_auto", "node", "auto", true, "sandbox", kNA,
                NotAllowed("auto", "node", "auto or auto")},
        HostRow{"sbx_node_sandbox", "node", "sandbox", true, "sandbox", kNA,
                NotAllowed("sandbox", "node", "sandbox or auto")},
        HostRow{"sbx_node_gateway", "node", "gateway", true, "gateway", kNA,
                NotAllowed("gateway", "node", "gateway or auto")},
        HostRow{"sbx_node_node", "node", "node", true, "node", "node-unavailable",
                kNodeUnavailable},
        // not sandboxed, configured auto
        HostRow{"direct_auto_none", "auto", std::nullopt, false, "gateway", "", ""},
        HostRow{"direct_auto_auto", "auto", "auto", false, "gateway", "", ""},
        HostRow{"direct_auto_sandbox", "auto", "sandbox", false, "sandbox", "sandbox-unavailable",
                kSandboxUnavailable},
        HostRow{"direct_auto_gateway", "auto", "gateway", false, "gateway", "", ""},
        HostRow{"direct_auto_node", "auto", "node", false, "node", "node-unavailable",
                kNodeUnavailable},
        // not sandboxed, configured sandbox
        HostRow{"direct_sandbox_none", "sandbox", std::nullopt, false, "sandbox",
                "sandbox-unavailable", kSandboxUnavailable},
        HostRow{"direct_sandbox_auto", "sandbox", "auto", false, "gateway", kNA,
                NotAllowed("auto", "sandbox", "auto or auto")},
        HostRow{"direct_sandbox_sandbox", "sandbox", "sandbox", false, "sandbox",
                "sandbox-unavailable", kSandboxUnavailable},
        HostRow{"direct_sandbox_gateway", "sandbox", "gateway", false, "gateway", kNA,
                NotAllowed("gateway", "sandbox", "gateway or auto")},
        HostRow{"direct_sandbox_node", "sandbox", "node", false, "node", kNA,
                NotAllowed("node", "sandbox", "node or auto")},
        // not sandboxed, configured gateway
        HostRow{"direct_gateway_none", "gateway", std::nullopt, false, "gateway", "", ""},
        HostRow{"direct_gateway_auto", "gateway", "auto", false, "gateway", kNA,
                NotAllowed("auto", "gateway", "auto or auto")},
        HostRow{"direct_gateway_sandbox", "gateway", "sandbox", false, "sandbox", kNA,
                NotAllowed("sandbox", "gateway", "sandbox or auto")},
        HostRow{"direct_gateway_gateway", "gateway", "gateway", false, "gateway", "", ""},
        HostRow{"direct_gateway_node", "gateway", "node", false, "node", kNA,
                NotAllowed("node", "gateway", "node or auto")},
        // not sandboxed, configured node
        HostRow{"direct_node_none", "node", std::nullopt, false, "node", "node-unavailable",
                kNodeUnavailable},
        HostRow{"direct_node_auto", "node", "auto", false, "gateway", kNA,
                NotAllowed("auto", "node", "auto or auto")},
        HostRow{"direct_node_sandbox", "node", "sandbox", false, "sandbox", kNA,
                NotAllowed("sandbox", "node", "sandbox or auto")},
        HostRow{"direct_node_gateway", "node", "gateway", false, "gateway", kNA,
                NotAllowed("gateway", "node", "gateway or auto")},
        HostRow{"direct_node_node", "node", "node", false, "node", "node-unavailable",
                kNodeUnavailable},
        // Per-call values are trimmed and case-insensitive; "" is "not requested".
        HostRow{"trim_case_gateway", "auto", " GATEWAY ", false, "gateway", "", ""},
        HostRow{"case_sandbox", "auto", "Sandbox", true, "sandbox", "", ""},
        HostRow{"empty_is_unset", "gateway", "", true, "gateway", "", ""},
        HostRow{"blank_is_unset", "auto", "   ", true, "sandbox", "", ""},
        HostRow{"configured_case", " Gateway ", std::nullopt, true, "gateway", "", ""}),
    [](const ::testing::TestParamInfo<HostRow>& row_info) { return row_info.param.name; });

// "sandboxed": mode all, or non-main and a session other than the main one.
struct SandboxedRow {
  std::string name;
  SandboxMode mode;
  std::string session;
  std::string main_key;
  bool sandboxed;
};
class SandboxedTest : public ::testing::TestWithParam<SandboxedRow> {};

TEST_P(SandboxedTest, Mode) {
  const SandboxedRow& row = GetParam();
  config::AgentSettings s;
  s.sandbox.mode = row.mode;
  s.sandbox.main_session_key = row.main_key;
  Caller c;
  c.session_key = row.session;
  EXPECT_EQ(IsSessionSandboxed(s.sandbox, c), row.sandboxed);
  Decision d = Decide(s, Req(), c);
  EXPECT_EQ(d.effective_host, row.sandboxed ? Host::kSandbox : Host::kGateway);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, SandboxedTest,
    ::testing::Values(
        SandboxedRow{"all_main", SandboxMode::kAll, "main", "main", true},
        SandboxedRow{"all_other", SandboxMode::kAll, "x", "main", true},
        SandboxedRow{"off_other", SandboxMode::kOff, "x", "main", false},
        SandboxedRow{"nonmain_main", SandboxMode::kNonMain, "main", "main", false},
        SandboxedRow{"nonmain_empty_is_main", SandboxMode::kNonMain, "", "main", false},
        SandboxedRow{"nonmain_trimmed", SandboxMode::kNonMain, " main ", "main", false},
        SandboxedRow{"nonmain_other", SandboxMode::kNonMain, "chat-42", "main", true},
        SandboxedRow{"nonmain_custom_main", SandboxMode::kNonMain, "boss", "boss", false}),
    [](const ::testing::TestParamInfo<SandboxedRow>& row_info) { return row_info.param.name; });

TEST(GateDefaults, NoConfigRunsInTheSandbox) {
  Decision d = Decide(config::AgentSettings{}, Req(), Caller{});
  EXPECT_TRUE(d.allowed());
  EXPECT_TRUE(d.sandboxed);
  EXPECT_EQ(d.configured_host, Host::kAuto);
  EXPECT_EQ(d.effective_host, Host::kSandbox);
  EXPECT_FALSE(d.approvals_apply);
  EXPECT_FALSE(d.needs_approval_flow);
  EXPECT_EQ(d.effective.security, Security::kFull);
  EXPECT_EQ(d.effective.ask, Ask::kOff);
}

// ---------------------------------------------------------------------------------------------
// Invalid host values.

struct InvalidHostRow {
  std::string name;
  std::string value;
};
class InvalidHostTest : public ::testing::TestWithParam<InvalidHostRow> {};

TEST_P(InvalidHostTest, Rejected) {
  ExecRequest r = Req();
  r.host = GetParam().value;
  Decision d = Decide(config::AgentSettings{}, r, Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->WireCode(), "invalid-host");
  EXPECT_EQ(d.refusal->message, "Invalid exec host \"" + GetParam().value +
                                    "\". Allowed values: auto, sandbox, gateway, node.");
}

INSTANTIATE_TEST_SUITE_P(
    Values, InvalidHostTest,
    ::testing::Values(InvalidHostRow{"hostname", "spark-ff13"}, InvalidHostRow{"local", "local"},
                      InvalidHostRow{"padded", " docker "}, InvalidHostRow{"prefix", "gateway2"},
                      InvalidHostRow{"ip", "10.0.0.1"}),
    [](const ::testing::TestParamInfo<InvalidHostRow>& row_info) { return row_info.param.name; });

TEST(GateConfig, InvalidConfiguredHostIsAConfigError) {
  config::AgentSettings s;
  s.exec.host = "laptop";
  Decision d = Decide(s, Req(), Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->WireCode(), "invalid-config");
  EXPECT_EQ(d.refusal->message,
            "Invalid tools.exec.host \"laptop\". Allowed values: auto, sandbox, gateway, node.");
}

// ---------------------------------------------------------------------------------------------
// Elevated.

const std::string kFixIt =
    "Fix-it keys:\n- tools.elevated.enabled\n- tools.elevated.allowFrom.<provider>\n"
    "- agents.list[].tools.elevated.enabled\n- agents.list[].tools.elevated.allowFrom.<provider>";
const std::string kGateEnabled =
    "Failing gates: enabled (tools.elevated.enabled / agents.list[].tools.elevated.enabled)";
const std::string kGateAllowFrom =
    "Failing gates: allowFrom (tools.elevated.allowFrom.<provider> / "
    "agents.list[].tools.elevated.allowFrom.<provider>)";

struct ElevatedRow {
  std::string name;
  bool enabled;
  std::map<std::string, std::vector<std::string>> allow_from;
  std::string default_level;
  std::string provider;
  std::string sender;
  std::optional<bool> elevated;
  std::string configured_host;
  bool sandboxed;
  std::string mode;       // expected elevated mode
  std::string effective;  // expected effective host
  std::string code;       // "" = allowed
  std::string message;    // checked when code is elevated-unavailable
};
class ElevatedTest : public ::testing::TestWithParam<ElevatedRow> {};

TEST_P(ElevatedTest, Resolves) {
  const ElevatedRow& row = GetParam();
  config::AgentSettings s;
  s.elevated.enabled = row.enabled;
  s.elevated.allow_from = row.allow_from;
  s.elevated.default_level = row.default_level;
  s.exec.host = row.configured_host;
  s.sandbox.mode = row.sandboxed ? SandboxMode::kAll : SandboxMode::kOff;
  Caller c;
  c.provider = row.provider;
  c.sender = row.sender;
  ExecRequest r = Req();
  r.elevated = row.elevated;
  Decision d = Decide(s, r, c);
  EXPECT_EQ(ElevatedModeName(d.elevated), row.mode);
  EXPECT_EQ(HostName(d.effective_host), row.effective);
  if (row.code.empty()) {
    EXPECT_FALSE(d.refusal.has_value()) << d.refusal->message;
  } else {
    ASSERT_TRUE(d.refusal.has_value());
    EXPECT_EQ(d.refusal->WireCode(), row.code);
    if (!row.message.empty()) {
      EXPECT_EQ(d.refusal->message, row.message);
    }
  }
}

using AllowFrom = std::map<std::string, std::vector<std::string>>;

INSTANTIATE_TEST_SUITE_P(
    Gates, ElevatedTest,
    ::testing::Values(
        ElevatedRow{"disabled_sandboxed",
                    false,
                    {},
                    "off",
                    "cli",
                    "root",
                    true,
                    "auto",
                    true,
                    "ask",
                    "sandbox",
                    "elevated-unavailable",
                    "elevated is not available right now (runtime=sandboxed).\n" + kGateEnabled +
                        "\nContext: provider=cli session=main\n" + kFixIt},
        ElevatedRow{"disabled_direct", false, AllowFrom{{"cli", {"*"}}}, "full", "cli", "root",
                    true, "auto", false, "ask", "gateway", "elevated-unavailable",
                    "elevated is not available right now (runtime=direct).\n" + kGateEnabled +
                        "\nContext: provider=cli session=main\n" + kFixIt},
        ElevatedRow{"allow_from_empty",
                    true,
                    {},
                    "off",
                    "cli",
                    "root",
                    true,
                    "auto",
                    true,
                    "ask",
                    "sandbox",
                    "elevated-unavailable",
                    "elevated is not available right now (runtime=sandboxed).\n" + kGateAllowFrom +
                        "\nContext: provider=cli session=main\n" + kFixIt},
        ElevatedRow{"allow_from_miss", true, AllowFrom{{"cli", {"root"}}}, "off", "cli", "alice",
                    true, "auto", true, "ask", "sandbox", "elevated-unavailable",
                    "elevated is not available right now (runtime=sandboxed).\n" + kGateAllowFrom +
                        "\nContext: provider=cli session=main\n" + kFixIt},
        ElevatedRow{"provider_missing", true, AllowFrom{{"api", {"*"}}}, "off", "cli", "root", true,
                    "auto", true, "ask", "sandbox", "elevated-unavailable", ""},
        ElevatedRow{"glob_star_prefix", true, AllowFrom{{"api", {"ops-*"}}}, "off", "api",
                    "ops-bob", true, "auto", true, "ask", "gateway", "", ""},
        ElevatedRow{"glob_star_prefix_miss", true, AllowFrom{{"api", {"ops-*"}}}, "off", "api",
                    "dev-bob", true, "auto", true, "ask", "sandbox", "elevated-unavailable", ""},
        ElevatedRow{"glob_question", true, AllowFrom{{"cli", {"?lice"}}}, "off", "cli", "alice",
                    true, "auto", true, "ask", "gateway", "", ""},
        ElevatedRow{"glob_case_sensitive", true, AllowFrom{{"cli", {"root"}}}, "off", "cli", "ROOT",
                    true, "auto", true, "ask", "sandbox", "elevated-unavailable", ""},
        ElevatedRow{"star_anyone", true, AllowFrom{{"cli", {"*"}}}, "off", "cli", "", true, "auto",
                    true, "ask", "gateway", "", ""},
        ElevatedRow{"second_entry_matches", true, AllowFrom{{"cli", {"bob", " root "}}}, "off",
                    "cli", "root", true, "auto", true, "ask", "gateway", "", ""},
        ElevatedRow{"level_full", true, AllowFrom{{"cli", {"*"}}}, "full", "cli", "u", true, "auto",
                    true, "full", "gateway", "", ""},
        ElevatedRow{"level_ask", true, AllowFrom{{"cli", {"*"}}}, "ask", "cli", "u", true, "auto",
                    true, "ask", "gateway", "", ""},
        ElevatedRow{"level_on_default_applies", true, AllowFrom{{"cli", {"*"}}}, "on", "cli", "u",
                    std::nullopt, "auto", true, "ask", "gateway", "", ""},
        ElevatedRow{"level_full_default_applies", true, AllowFrom{{"cli", {"*"}}}, "full", "cli",
                    "u", std::nullopt, "auto", true, "full", "gateway", "", ""},
        ElevatedRow{"level_off_default", true, AllowFrom{{"cli", {"*"}}}, "off", "cli", "u",
                    std::nullopt, "auto", true, "off", "sandbox", "", ""},
        ElevatedRow{"explicit_false", true, AllowFrom{{"cli", {"*"}}}, "full", "cli", "u", false,
                    "auto", true, "off", "sandbox", "", ""},
        ElevatedRow{"false_when_disabled",
                    false,
                    {},
                    "off",
                    "cli",
                    "u",
                    false,
                    "auto",
                    true,
                    "off",
                    "sandbox",
                    "",
                    ""},
        ElevatedRow{"omitted_when_disabled",
                    false,
                    {},
                    "full",
                    "cli",
                    "u",
                    std::nullopt,
                    "auto",
                    true,
                    "off",
                    "sandbox",
                    "",
                    ""},
        ElevatedRow{"keeps_node", true, AllowFrom{{"cli", {"*"}}}, "full", "cli", "u", true, "node",
                    true, "full", "node", "node-unavailable", kNodeUnavailable},
        ElevatedRow{"escapes_configured_sandbox", true, AllowFrom{{"cli", {"*"}}}, "full", "cli",
                    "u", true, "sandbox", true, "full", "gateway", "", ""},
        ElevatedRow{"escapes_when_not_sandboxed_too", true, AllowFrom{{"cli", {"*"}}}, "ask", "cli",
                    "u", true, "sandbox", false, "ask", "gateway", "", ""}),
    [](const ::testing::TestParamInfo<ElevatedRow>& row_info) { return row_info.param.name; });

TEST(Elevated, ContextLineOmitsEmptyParts) {
  config::AgentSettings s;
  Caller c;
  c.provider = "";
  c.session_key = "  ";
  ExecRequest r = Req();
  r.elevated = true;
  Decision d = Decide(s, r, c);
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->message, "elevated is not available right now (runtime=sandboxed).\n" +
                                    kGateEnabled + "\n" + kFixIt);
  c.provider = "api";
  c.session_key = "s-1";
  d = Decide(s, r, c);
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_NE(d.refusal->message.find("\nContext: provider=api session=s-1\n"), std::string::npos);
}

TEST(Elevated, HostOverrideIsCheckedBeforeElevatedMovesTheTarget) {
  config::AgentSettings s;
  s.elevated.enabled = true;
  s.elevated.allow_from["cli"] = {"*"};
  ExecRequest r = Req();
  r.elevated = true;
  r.host = "gateway";  // sandboxed + auto: a per-call gateway is refused even when elevated
  Decision d = Decide(s, r, Caller{});
  ASSERT_TRUE(d.refusal.has_value());
  EXPECT_EQ(d.refusal->WireCode(), "host-not-allowed");
  r.host = "sandbox";  // allowed override; elevated then moves it to the gateway
  d = Decide(s, r, Caller{});
  EXPECT_TRUE(d.allowed());
  EXPECT_EQ(d.effective_host, Host::kGateway);
}

TEST(Elevated, GlobMatch) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*", "anyone"));
  EXPECT_TRUE(GlobMatch("ops-*", "ops-"));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXXbYYc"));
  EXPECT_TRUE(GlobMatch("a?c", "abc"));
  EXPECT_FALSE(GlobMatch("a?c", "ac"));
  EXPECT_FALSE(GlobMatch("ops-*", "xops-a"));
  EXPECT_FALSE(GlobMatch("root", "root2"));
  EXPECT_TRUE(GlobMatch("**x", "x"));
  EXPECT_FALSE(GlobMatch("", "a"));
  EXPECT_TRUE(GlobMatch("", ""));
}

}  // namespace
}  // namespace sandrun::policy

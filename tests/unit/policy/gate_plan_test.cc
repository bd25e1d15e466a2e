// BuildPlan: sandbox and gateway plans (env, PATH, workdir, shell, timeouts, yield), the
// approvals fail-closed refusal, and what the caller must probe.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "runner/policy/gate.h"
#include "runner/policy/sandbox_spec.h"
#include "sandbox/base/sha256.h"

namespace sandrun::policy {
namespace {

using config::ExecMode;
using config::SandboxMode;

constexpr char kSeccomp[] = R"({"defaultAction":"SCMP_ACT_ERRNO"})";

struct Fixture {
  config::AgentSettings settings;
  std::set<std::string> dirs = {"/ws", "/ws/src", "/home/u", "/cwd"};
  std::set<std::string> executables;

  GateContext Ctx() {
    GateContext ctx;
    ctx.settings = &settings;
    ctx.state_dir = "/state";
    ctx.instance_id = "0123456789abcdef";
    ctx.workspace_dir = "/ws";
    ctx.cwd = "/cwd";
    ctx.host_env = {{"HOME", "/home/u"},
                    {"PATH", "/usr/local/bin:/usr/bin:/bin"},
                    {"SHELL", "/bin/bash"},
                    {"LANG", "en_US.UTF-8"},
                    {"LD_PRELOAD", "/evil.so"},
                    {"NODE_OPTIONS", "--require /evil.js"},
                    {"BASH_FUNC_ls%%", "() { :; }"},
                    {"HTTP_PROXY", "http://proxy:3128"},
                    {"SSH_AUTH_SOCK", "/tmp/agent.sock"}};
    ctx.login_path = "/home/u/.local/bin:/usr/bin";
    ctx.seccomp_profile_json = kSeccomp;
    ctx.dir_exists = [this](const std::string& p) { return dirs.count(p) > 0; };
    ctx.is_executable = [this](const std::string& p) { return executables.count(p) > 0; };
    // The sandbox's host paths: /ws is a directory of uid 1000; below a mount only these.
    ctx.host_probe.inspect = [](const std::string& p) -> Result<HostPathInfo> {
      if (p != "/ws") return Error(ErrorCode::kNotFound, "no " + p);
      HostPathInfo info;
      info.path = p;
      info.id = PathIdentity{1, 2};
      info.mode = 040755;
      info.uid = info.gid = 1000;
      return info;
    };
    ctx.host_probe.inspect_real = ctx.host_probe.inspect;
    ctx.host_probe.dir_beneath = [](const std::string& root, const std::string& rel) {
      return (root == "/ws" && rel == "src") || rel == "sub";
    };
    ctx.host_probe.uid = ctx.host_probe.gid = 0;
    return ctx;
  }
};

ExecRequest Req(std::string command = "ls") {
  ExecRequest r;
  r.command = std::move(command);
  return r;
}

GatedPlan MustGate(const ExecRequest& r, const GateContext& ctx) {
  Result<GatedPlan> g = Gate(r, ctx);
  EXPECT_TRUE(g.has_value()) << (g ? "" : g.error().WireCode() + ": " + g.error().message);
  return g ? std::move(g).value() : GatedPlan{};
}

TEST(SandboxPlan, Defaults) {
  Fixture f;
  GatedPlan g = MustGate(Req(), f.Ctx());
  const exec::Plan& p = g.plan;
  EXPECT_EQ(p.target, exec::Target::kSandbox);
  EXPECT_EQ(p.command, "ls");
  EXPECT_EQ(p.env, (std::map<std::string, std::string>{
                       {"HOME", "/home/sandrun"}, {"LANG", "C.UTF-8"}, {"SANDRUN_SHELL", "exec"}}));
  EXPECT_EQ(p.prepend_path, "");
  EXPECT_EQ(p.cwd, "/workspace");
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(p.timeout_ms, 1800000);
  EXPECT_EQ(p.max_output_chars, 200000u);
  EXPECT_FALSE(p.pty);
  EXPECT_EQ(g.yield_ms, 10000);
  EXPECT_FALSE(g.background);
  EXPECT_EQ(p.sandbox.scope_key, "agent:main");
  EXPECT_EQ(p.sandbox.instance_id, "0123456789abcdef");
  EXPECT_EQ(p.sandbox.workspace_host_dir, "/state/sandboxes/agent-main-" + Sha256Hex("agent:main"));
  EXPECT_FALSE(p.sandbox.workspace_read_only);
  EXPECT_EQ(g.decision.effective_host, Host::kSandbox);
}

TEST(SandboxPlan, RequestEnvIsMergedUnblockedAndPathMovesToPrepend) {
  Fixture f;
  f.settings.exec.path_prepend = {"/p1", " /opt/bin ", "~/bin"};
  ExecRequest r = Req();
  r.env = {{"PATH", "/opt/bin:/usr/bin::/opt/bin"},
           {"LD_PRELOAD", "/lib/x.so"},
           {"LANG", "C"},
           {"SANDRUN_PREPEND_PATH", "/hijack"},
           {"SANDRUN_SHELL", "bash"}};
  GatedPlan g = MustGate(r, f.Ctx());
  EXPECT_EQ(g.plan.prepend_path, "/p1:/opt/bin:/home/sandrun/bin:/usr/bin");
  EXPECT_EQ(g.plan.env, (std::map<std::string, std::string>{{"HOME", "/home/sandrun"},
                                                            {"LANG", "C"},
                                                            {"LD_PRELOAD", "/lib/x.so"},
                                                            {"SANDRUN_SHELL", "exec"}}));
}

TEST(SandboxPlan, PathValueStaysInert) {
  Fixture f;
  ExecRequest r = Req();
  r.env["PATH"] = "$(touch /tmp/x)";
  GatedPlan g = MustGate(r, f.Ctx());
  EXPECT_EQ(g.plan.prepend_path, "$(touch /tmp/x)");
  EXPECT_EQ(g.plan.command, "ls");
}

TEST(SandboxPlan, DockerEnvOverridesHomeAndItsPathIsAFallbackPrepend) {
  Fixture f;
  f.settings.sandbox.docker.env = {{"HOME", "/home/sandbox"}, {"PATH", "/opt/tools/bin"}};
  GatedPlan g = MustGate(Req(), f.Ctx());
  EXPECT_EQ(g.plan.env.at("HOME"), "/home/sandbox");
  EXPECT_EQ(g.plan.env.count("PATH"), 0u);
  EXPECT_EQ(g.plan.prepend_path, "/opt/tools/bin");
  ExecRequest r = Req();
  r.env["PATH"] = "/req/bin";
  g = MustGate(r, f.Ctx());
  EXPECT_EQ(g.plan.prepend_path, "/req/bin");
}

struct WorkdirRow {
  std::string name;
  std::optional<std::string> workdir;
  std::string cwd;
  std::string warning;  // "" = none
};
class SandboxWorkdirPlanTest : public ::testing::TestWithParam<WorkdirRow> {};

TEST_P(SandboxWorkdirPlanTest, Maps) {
  Fixture f;
  ExecRequest r = Req();
  r.workdir = GetParam().workdir;
  GatedPlan g = MustGate(r, f.Ctx());
  EXPECT_EQ(g.plan.cwd, GetParam().cwd);
  if (GetParam().warning.empty()) {
    EXPECT_TRUE(g.plan.warnings.empty());
  } else {
    ASSERT_EQ(g.plan.warnings.size(), 1u);
    EXPECT_EQ(g.plan.warnings[0], GetParam().warning);
  }
}

const std::string kScratch = "/state/sandboxes/agent-main-" + Sha256Hex("agent:main");

INSTANTIATE_TEST_SUITE_P(
    Rows, SandboxWorkdirPlanTest,
    ::testing::Values(
        WorkdirRow{"absent", std::nullopt, "/workspace", ""},
        WorkdirRow{"root", "/workspace", "/workspace", ""},
        WorkdirRow{"root_slash", "/workspace/", "/workspace", ""},
        WorkdirRow{"sub", "/workspace/sub", "/workspace/sub", ""},
        WorkdirRow{"relative", "sub", "/workspace/sub", ""},
        WorkdirRow{"host_path_of_mount", kScratch + "/sub", "/workspace/sub", ""},
        WorkdirRow{"missing", "/workspace/nope", "/workspace",
                   "Warning: workdir \"/workspace/nope\" is unavailable; using \"/workspace\"."},
        WorkdirRow{"escape", "/workspace/../etc", "/workspace",
                   "Warning: workdir \"/workspace/../etc\" is unavailable; using \"/workspace\"."},
        WorkdirRow{"outside", "/etc", "/workspace",
                   "Warning: workdir \"/etc\" is unavailable; using \"/workspace\"."},
        WorkdirRow{"real_workspace_not_mounted", "/ws/src", "/workspace",
                   "Warning: workdir \"/ws/src\" is unavailable; using \"/workspace\"."}),
    [](const ::testing::TestParamInfo<WorkdirRow>& row_info) { return row_info.param.name; });

TEST(SandboxPlan, WorkspaceAccessRwMapsTheRealWorkspace) {
  Fixture f;
  f.settings.sandbox.workspace_access = config::WorkspaceAccess::kRw;
  ExecRequest r = Req();
  r.workdir = "/workspace/src";
  GatedPlan g = MustGate(r, f.Ctx());
  EXPECT_EQ(g.plan.sandbox.workspace_host_dir, "/ws");
  EXPECT_FALSE(g.plan.sandbox.workspace_read_only);
  EXPECT_EQ(g.plan.cwd, "/workspace/src");
  r.workdir = "/ws/src";  // the host path of the mount works too
  g = MustGate(r, f.Ctx());
  EXPECT_EQ(g.plan.cwd, "/workspace/src");
  f.settings.sandbox.workspace_access = config::WorkspaceAccess::kRo;
  g = MustGate(r, f.Ctx());
  EXPECT_TRUE(g.plan.sandbox.workspace_read_only);
}

TEST(SandboxPlan, PtyWorksInTheSandbox) {
  Fixture f;
  ExecRequest r = Req();
  r.pty = true;
  EXPECT_TRUE(MustGate(r, f.Ctx()).plan.pty);
}

TEST(SandboxPlan, MissingSeccompProfileFailsClosed) {
  Fixture f;
  GateContext ctx = f.Ctx();
  ctx.seccomp_profile_json.clear();
  Result<GatedPlan> g = Gate(Req(), ctx);
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().WireCode(), "invalid-config");
}

TEST(SandboxPlan, UnsafeBindRefusesTheCall) {
  Fixture f;
  f.settings.sandbox.docker.binds = {"/var/run/docker.sock:/var/run/docker.sock"};
  Result<GatedPlan> g = Gate(Req(), f.Ctx());
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().WireCode(), "invalid-config");
}

TEST(SandboxPlan, AllowlistModeDoesNotApplyInTheSandbox) {
  Fixture f;
  f.settings.exec.mode = ExecMode::kAsk;
  GatedPlan g = MustGate(Req(), f.Ctx());
  EXPECT_EQ(g.plan.target, exec::Target::kSandbox);
}

// ---------------------------------------------------------------------------------------------
// Gateway.

Fixture GatewayFixture() {
  Fixture f;
  f.settings.sandbox.mode = SandboxMode::kOff;
  return f;
}

TEST(GatewayPlan, EnvIsSanitizedAndMarked) {
  Fixture f = GatewayFixture();
  ExecRequest r = Req();
  r.env = {{"FOO", "bar"}, {"LANG", "C"}};
  GatedPlan g = MustGate(r, f.Ctx());
  const exec::Plan& p = g.plan;
  EXPECT_EQ(p.target, exec::Target::kGateway);
  EXPECT_EQ(p.env, (std::map<std::string, std::string>{
                       {"FOO", "bar"},
                       {"HOME", "/home/u"},
                       {"HTTP_PROXY", "http://proxy:3128"},
                       {"LANG", "C"},
                       {"PATH", "/home/u/.local/bin:/usr/bin:/usr/local/bin:/bin"},
                       {"SANDRUN_SHELL", "exec"},
                       {"SSH_AUTH_SOCK", "/tmp/agent.sock"}}));
  EXPECT_EQ(p.shell, "/bin/bash");
  EXPECT_EQ(p.cwd, "/ws");
  EXPECT_EQ(p.host_profile, "default");
  EXPECT_EQ(p.prepend_path, "");
}

TEST(GatewayPlan, PathPrependComesFirst) {
  Fixture f = GatewayFixture();
  f.settings.exec.path_prepend = {"~/bin", "/usr/bin", "/opt/oss/bin"};
  GatedPlan g = MustGate(Req(), f.Ctx());
  EXPECT_EQ(g.plan.env.at("PATH"),
            "/home/u/bin:/usr/bin:/opt/oss/bin:/home/u/.local/bin:/usr/local/bin:/bin");
}

TEST(GatewayPlan, LoginPathCanBeTurnedOff) {
  Fixture f = GatewayFixture();
  f.settings.exec.login_shell_path = false;
  GateContext ctx = f.Ctx();
  Decision d = Decide(f.settings, Req(), ctx.caller);
  EXPECT_FALSE(NeedsLoginPath(d, f.settings, ctx.host_env));
  GatedPlan g = MustGate(Req(), ctx);
  EXPECT_EQ(g.plan.env.at("PATH"), "/usr/local/bin:/usr/bin:/bin");

  f.settings.exec.login_shell_path = true;
  ctx = f.Ctx();
  EXPECT_TRUE(NeedsLoginPath(d, f.settings, ctx.host_env));
  ctx.host_env["SANDRUN_LOAD_SHELL_ENV"] = "0";
  EXPECT_FALSE(NeedsLoginPath(d, f.settings, ctx.host_env));
  EXPECT_EQ(MustGate(Req(), ctx).plan.env.at("PATH"), "/usr/local/bin:/usr/bin:/bin");
}

TEST(GatewayPlan, MinimalPathWhenUnset) {
  Fixture f = GatewayFixture();
  GateContext ctx = f.Ctx();
  ctx.host_env.erase("PATH");
  ctx.login_path.clear();
  EXPECT_EQ(MustGate(Req(), ctx).plan.env.at("PATH"), "/usr/local/bin:/usr/bin:/bin");
}

TEST(GatewayPlan, Shell) {
  Fixture f = GatewayFixture();
  GateContext ctx = f.Ctx();
  ctx.host_env["SHELL"] = "/usr/bin/fish";
  EXPECT_EQ(MustGate(Req(), ctx).plan.shell, "/usr/bin/fish");  // no bash/sh found
  f.executables = {"/bin/sh", "/usr/bin/bash"};
  EXPECT_EQ(MustGate(Req(), ctx).plan.shell, "/usr/bin/bash");
  f.executables = {"/bin/sh"};
  EXPECT_EQ(MustGate(Req(), ctx).plan.shell, "/bin/sh");
  ctx.host_env.erase("SHELL");
  EXPECT_EQ(MustGate(Req(), ctx).plan.shell, "/bin/sh");
  ctx.host_env["SHELL"] = " /bin/zsh ";
  EXPECT_EQ(MustGate(Req(), ctx).plan.shell, "/bin/zsh");
}

struct GatewayWorkdirRow {
  std::string name;
  std::optional<std::string> workdir;
  std::string workspace;
  std::string cwd;
  std::string warning;
};
class GatewayWorkdirTest : public ::testing::TestWithParam<GatewayWorkdirRow> {};

TEST_P(GatewayWorkdirTest, Resolves) {
  Fixture f = GatewayFixture();
  GateContext ctx = f.Ctx();
  ctx.workspace_dir = GetParam().workspace;
  ExecRequest r = Req();
  r.workdir = GetParam().workdir;
  GatedPlan g = MustGate(r, ctx);
  EXPECT_EQ(g.plan.cwd, GetParam().cwd);
  if (GetParam().warning.empty()) {
    EXPECT_TRUE(g.plan.warnings.empty());
  } else {
    ASSERT_EQ(g.plan.warnings.size(), 1u);
    EXPECT_EQ(g.plan.warnings[0], GetParam().warning);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, GatewayWorkdirTest,
    ::testing::Values(
        GatewayWorkdirRow{"default_workspace", std::nullopt, "/ws", "/ws", ""},
        GatewayWorkdirRow{"absolute", "/ws/src", "/ws", "/ws/src", ""},
        GatewayWorkdirRow{"relative", "src", "/ws", "/ws/src", ""},
        GatewayWorkdirRow{"normalized", "/ws/./src/", "/ws", "/ws/src", ""},
        GatewayWorkdirRow{"missing", "/nope", "/ws", "/ws",
                          "Warning: workdir \"/nope\" is unavailable; using \"/ws\"."},
        GatewayWorkdirRow{"missing_workspace_falls_to_cwd", "/nope", "/gone", "/cwd",
                          "Warning: workdir \"/nope\" is unavailable; using \"/cwd\"."},
        GatewayWorkdirRow{"no_workspace_uses_cwd", std::nullopt, "", "/cwd", ""}),
    [](const ::testing::TestParamInfo<GatewayWorkdirRow>& row_info) {
      return row_info.param.name;
    });

TEST(GatewayPlan, HostProfile) {
  Fixture f = GatewayFixture();
  f.settings.exec.host_profile = "custom";
  f.settings.elevated.host_profile = "privileged";
  EXPECT_EQ(MustGate(Req(), f.Ctx()).plan.host_profile, "custom");
  f.settings.elevated.enabled = true;
  f.settings.elevated.allow_from["cli"] = {"*"};
  ExecRequest r = Req();
  r.elevated = true;
  EXPECT_EQ(MustGate(r, f.Ctx()).plan.host_profile, "privileged");
  f.settings.elevated.host_profile.clear();
  EXPECT_EQ(MustGate(r, f.Ctx()).plan.host_profile, "custom");
}

TEST(GatewayPlan, ElevatedEscapesTheSandbox) {
  Fixture f;  // sandboxed
  f.settings.elevated.enabled = true;
  f.settings.elevated.allow_from["cli"] = {"*"};
  ExecRequest r = Req();
  r.elevated = true;
  GatedPlan g = MustGate(r, f.Ctx());
  EXPECT_EQ(g.plan.target, exec::Target::kGateway);
  EXPECT_EQ(g.decision.elevated, ElevatedMode::kAsk);
}

struct ApprovalRow {
  std::string name;
  std::optional<ExecMode> mode;
  std::optional<config::Ask> ask;
  bool sandboxed;
  bool refused;
};
class ApprovalRequiredTest : public ::testing::TestWithParam<ApprovalRow> {};

// The gate builds the plan; whether it needs the approvals flow is in the decision (the flow
// itself is approval_flow.h, tested in approval_flow_test.cc).
TEST_P(ApprovalRequiredTest, PlanCarriesTheNeedForApprovals) {
  Fixture f;
  f.settings.exec.mode = GetParam().mode;
  f.settings.exec.ask = GetParam().ask;
  f.settings.sandbox.mode = GetParam().sandboxed ? SandboxMode::kAll : SandboxMode::kOff;
  Result<GatedPlan> g = Gate(Req(), f.Ctx());
  ASSERT_TRUE(g.has_value()) << g.error().message;
  EXPECT_EQ(g->decision.needs_approval_flow, GetParam().refused);
  EXPECT_EQ(g->decision.approvals_apply, !GetParam().sandboxed);
}

INSTANTIATE_TEST_SUITE_P(
    Rows, ApprovalRequiredTest,
    ::testing::Values(ApprovalRow{"allowlist_gateway", ExecMode::kAllowlist, {}, false, true},
                      ApprovalRow{"ask_gateway", ExecMode::kAsk, {}, false, true},
                      ApprovalRow{"auto_gateway", ExecMode::kAuto, {}, false, true},
                      ApprovalRow{"full_ask_always", ExecMode::kFull, config::Ask::kAlways, false,
                                  true},
                      ApprovalRow{"full_gateway", ExecMode::kFull, {}, false, false},
                      ApprovalRow{"allowlist_sandbox", ExecMode::kAllowlist, {}, true, false},
                      ApprovalRow{"ask_sandbox", ExecMode::kAsk, {}, true, false}),
    [](const ::testing::TestParamInfo<ApprovalRow>& row_info) { return row_info.param.name; });

// ---------------------------------------------------------------------------------------------
// Timeouts and yield.

struct TimeoutRow {
  std::string name;
  std::optional<double> request;
  int64_t configured;
  bool background;
  int64_t want_ms;
};
class TimeoutTest : public ::testing::TestWithParam<TimeoutRow> {};

TEST_P(TimeoutTest, Computes) {
  Fixture f;
  f.settings.exec.timeout_seconds = GetParam().configured;
  ExecRequest r = Req();
  r.timeout_seconds = GetParam().request;
  r.background = GetParam().background;
  EXPECT_EQ(MustGate(r, f.Ctx()).plan.timeout_ms, GetParam().want_ms);
}

INSTANTIATE_TEST_SUITE_P(
    Rows, TimeoutTest,
    ::testing::Values(TimeoutRow{"default", std::nullopt, 1800, false, 1800000},
                      TimeoutRow{"configured_zero_is_none", std::nullopt, 0, false, 0},
                      TimeoutRow{"request_zero_is_none", 0.0, 1800, false, 0},
                      TimeoutRow{"request_negative_is_none", -5.0, 1800, false, 0},
                      TimeoutRow{"request_wins", 10.0, 0, false, 10000},
                      TimeoutRow{"floor_ms", 2.5009, 1800, false, 2500},
                      TimeoutRow{"tiny_is_one_ms", 0.0001, 1800, false, 1},
                      TimeoutRow{"background_keeps_default", std::nullopt, 1800, true, 1800000},
                      TimeoutRow{"background_with_request", 30.0, 1800, true, 30000},
                      TimeoutRow{"huge_is_capped", 1e300, 1800, false, int64_t{1} << 53}),
    [](const ::testing::TestParamInfo<TimeoutRow>& row_info) { return row_info.param.name; });

TEST(Timeout, NanIsInvalid) {
  Fixture f;
  ExecRequest r = Req();
  r.timeout_seconds = std::nan("");
  Result<GatedPlan> g = Gate(r, f.Ctx());
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().WireCode(), "invalid-request");
}

struct YieldRow {
  std::string name;
  std::optional<int64_t> request;
  int64_t background_ms;
  bool background;
  int64_t want;
};
class YieldTest : public ::testing::TestWithParam<YieldRow> {};

TEST_P(YieldTest, Clamps) {
  Fixture f;
  f.settings.exec.background_ms = GetParam().background_ms;
  ExecRequest r = Req();
  r.yield_ms = GetParam().request;
  r.background = GetParam().background;
  GatedPlan g = MustGate(r, f.Ctx());
  EXPECT_EQ(g.yield_ms, GetParam().want);
  EXPECT_EQ(g.background, GetParam().background);
}

INSTANTIATE_TEST_SUITE_P(
    Rows, YieldTest,
    ::testing::Values(YieldRow{"default", std::nullopt, 10000, false, 10000},
                      YieldRow{"configured", std::nullopt, 50, false, 50},
                      YieldRow{"configured_low", std::nullopt, 1, false, 10},
                      YieldRow{"configured_high", std::nullopt, 999999, false, 120000},
                      YieldRow{"request_low", 5, 10000, false, 10},
                      YieldRow{"request_high", 999999, 10000, false, 120000},
                      YieldRow{"request", 2500, 10000, false, 2500},
                      YieldRow{"background", 2500, 10000, true, 0}),
    [](const ::testing::TestParamInfo<YieldRow>& row_info) { return row_info.param.name; });

TEST(Plan, MaxOutputCharsAndTerm) {
  Fixture f;
  f.settings.exec.max_output_chars = 5000;
  GateContext ctx = f.Ctx();
  ctx.host_env["TERM"] = "screen";
  GatedPlan g = MustGate(Req(), ctx);
  EXPECT_EQ(g.plan.max_output_chars, 5000u);
  EXPECT_EQ(g.plan.term, "screen");
}

TEST(Plan, ProbesOnlyWhatTheTargetNeeds) {
  Fixture f;
  GateContext ctx = f.Ctx();
  Decision d = Decide(f.settings, Req(), ctx.caller);
  EXPECT_TRUE(NeedsSeccompProfile(d));
  EXPECT_FALSE(NeedsLoginPath(d, f.settings, ctx.host_env));
  f.settings.sandbox.mode = SandboxMode::kOff;
  d = Decide(f.settings, Req(), ctx.caller);
  EXPECT_FALSE(NeedsSeccompProfile(d));
  EXPECT_TRUE(NeedsLoginPath(d, f.settings, ctx.host_env));
  f.settings.exec.mode = ExecMode::kDeny;
  d = Decide(f.settings, Req(), ctx.caller);
  EXPECT_FALSE(NeedsSeccompProfile(d));
  EXPECT_FALSE(NeedsLoginPath(d, f.settings, ctx.host_env));
}

TEST(Plan, RefusedDecisionIsReturnedByBuildPlan) {
  Fixture f;
  ExecRequest r = Req();
  r.host = "spark-ff13";
  GateContext ctx = f.Ctx();
  Decision d = Decide(f.settings, r, ctx.caller);
  Result<GatedPlan> g = BuildPlan(d, r, ctx);
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().WireCode(), "invalid-host");
}

TEST(Plan, NoSettingsIsAnError) {
  GateContext ctx;
  Result<GatedPlan> g = Gate(Req(), ctx);
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().WireCode(), "invalid-config");
}

}  // namespace
}  // namespace sandrun::policy

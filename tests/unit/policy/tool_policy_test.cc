// Tool policy (tools.allow / tools.deny with groups, per agent) and the apply_patch gate.
#include "runner/policy/tool_policy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "runner/config/config.h"
#include "runner/policy/sandbox_spec.h"

namespace sandrun::policy {
namespace {

using config::ToolPolicy;

struct PolicyCase {
  const char* name;
  ToolPolicy global;
  ToolPolicy agent;
  const char* tool;
  const char* refusal;  // "" = allowed; else the expected message
};

class ToolPolicyTable : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(ToolPolicyTable, Decides) {
  const PolicyCase& c = GetParam();
  std::optional<Error> e = CheckToolAllowed({&c.global, &c.agent}, c.tool);
  if (std::string(c.refusal).empty()) {
    EXPECT_FALSE(e.has_value()) << e->message;
    EXPECT_TRUE(IsToolAllowed({&c.global, &c.agent}, c.tool));
  } else {
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->WireCode(), "tool-denied");
    EXPECT_EQ(e->message, c.refusal);
    EXPECT_FALSE(IsToolAllowed({&c.global, &c.agent}, c.tool));
  }
}

const char* kExecDenied = "Tool exec is denied by tool policy (tools.deny).";
const char* kPatchDenied = "Tool apply_patch is denied by tool policy (tools.deny).";

INSTANTIATE_TEST_SUITE_P(
    Table, ToolPolicyTable,
    ::testing::Values(
        PolicyCase{"NothingConfiguredAllowsAll", {}, {}, "exec", ""},
        PolicyCase{"DenyExec", {{}, {"exec"}}, {}, "exec", kExecDenied},
        PolicyCase{"DenyExecLeavesProcess", {{}, {"exec"}}, {}, "process", ""},
        PolicyCase{"DenyIsCaseAndSpaceInsensitive", {{}, {" EXEC "}}, {}, "exec", kExecDenied},
        PolicyCase{"BashIsAnAliasOfExec", {{}, {"bash"}}, {}, "exec", kExecDenied},
        PolicyCase{"DenyRuntimeGroupDeniesExec", {{}, {"group:runtime"}}, {}, "exec", kExecDenied},
        PolicyCase{"DenyRuntimeGroupDeniesProcess",
                   {{}, {"group:runtime"}},
                   {},
                   "process",
                   "Tool process is denied by tool policy (tools.deny)."},
        PolicyCase{
            "DenyFsGroupDeniesApplyPatch", {{}, {"group:fs"}}, {}, "apply_patch", kPatchDenied},
        PolicyCase{"DenyFsGroupLeavesExec", {{}, {"group:fs"}}, {}, "exec", ""},
        PolicyCase{"DenyWriteDoesNotDenyApplyPatch", {{}, {"write"}}, {}, "apply_patch", ""},
        PolicyCase{"DenyApplyPatchByName", {{}, {"apply_patch"}}, {}, "apply_patch", kPatchDenied},
        PolicyCase{
            "DenyApplyPatchByDashedAlias", {{}, {"apply-patch"}}, {}, "apply_patch", kPatchDenied},
        PolicyCase{"DenyStarDeniesEverything",
                   {{}, {"*"}},
                   {},
                   "process",
                   "Tool process is denied by tool policy (tools.deny)."},
        PolicyCase{"AllowListMisses",
                   {{"read"}, {}},
                   {},
                   "exec",
                   "Tool exec is denied by tool policy (tools.allow)."},
        PolicyCase{"AllowListNamesIt", {{"read", "exec"}, {}}, {}, "exec", ""},
        PolicyCase{"AllowWriteImpliesApplyPatch", {{"write"}, {}}, {}, "apply_patch", ""},
        PolicyCase{"AllowWriteDoesNotAllowExec",
                   {{"write"}, {}},
                   {},
                   "exec",
                   "Tool exec is denied by tool policy (tools.allow)."},
        PolicyCase{"AllowFsGroupAllowsApplyPatch", {{"group:fs"}, {}}, {}, "apply_patch", ""},
        PolicyCase{"AllowGlob", {{"ex*"}, {}}, {}, "exec", ""},
        PolicyCase{"DenyWinsOverAllow", {{"exec"}, {"exec"}}, {}, "exec", kExecDenied},
        PolicyCase{"AgentDenyApplies", {}, {{}, {"exec"}}, "exec", kExecDenied},
        PolicyCase{"AgentAllowCannotWidenGlobalAllow",
                   {{"read"}, {}},
                   {{"exec"}, {}},
                   "exec",
                   "Tool exec is denied by tool policy (tools.allow)."},
        PolicyCase{"UnknownGroupMatchesNothing", {{}, {"group:nope"}}, {}, "exec", ""}),
    [](const auto& test_case) { return std::string(test_case.param.name); });

TEST(ToolPolicy, ExpandToolGroups) {
  EXPECT_EQ(ExpandToolGroups({"group:fs", "exec", "write", "Bash"}),
            (std::vector<std::string>{"read", "write", "edit", "apply_patch", "exec"}));
  EXPECT_EQ(ExpandToolGroups({"group:runtime"}), (std::vector<std::string>{"exec", "process"}));
  EXPECT_EQ(NormalizeToolName(" Apply-Patch "), "apply_patch");
}

TEST(ToolPolicy, NullLayersAreSkipped) {
  ToolPolicy deny{{}, {"exec"}};
  EXPECT_TRUE(IsToolAllowed({nullptr}, "exec"));
  EXPECT_FALSE(IsToolAllowed({nullptr, &deny}, "exec"));
}

struct ModelCase {
  std::vector<std::string> allow;
  std::optional<std::string> model;
  bool allowed;
};

class AllowModels : public ::testing::TestWithParam<ModelCase> {};

TEST_P(AllowModels, Match) {
  config::ApplyPatchSettings s;
  s.allow_models = GetParam().allow;
  EXPECT_EQ(ApplyPatchAllowedForModel(s, GetParam().model), GetParam().allowed);
}

INSTANTIATE_TEST_SUITE_P(
    Table, AllowModels,
    ::testing::Values(ModelCase{{}, std::nullopt, true}, ModelCase{{}, "anything", true},
                      ModelCase{{"gpt-5.4"}, std::nullopt, false},
                      ModelCase{{"gpt-5.4"}, "gpt-5.4", true},
                      ModelCase{{"gpt-5.4"}, "GPT-5.4", true},
                      ModelCase{{"gpt-5.4"}, "openai/gpt-5.4", true},
                      ModelCase{{"openai/gpt-5.4"}, "gpt-5.4", true},
                      ModelCase{{"openai/gpt-5.4"}, "openai/gpt-5.4", true},
                      ModelCase{{"openai/gpt-5.4"}, "azure/gpt-5.4", false},
                      ModelCase{{"gpt-5.4"}, "gpt-5.5", false},
                      ModelCase{{"gpt-5.4", "claude-x"}, "anthropic/claude-x", true},
                      ModelCase{{"  "}, "x", true}));

// ---- The apply_patch gate. ----

class ApplyPatchGate : public ::testing::Test {
 protected:
  ApplyPatchContext Ctx() {
    ApplyPatchContext c;
    c.settings = &settings_;
    c.caller.agent_id = "main";
    c.caller.session_key = "main";
    c.state_dir = "/home/u/.sandrun";
    c.workspace_dir = "/work/ws";
    c.home = "/home/u";
    return c;
  }
  config::AgentSettings settings_;
};

TEST_F(ApplyPatchGate, DefaultSandboxWritesTheScratchDir) {
  auto t = GateApplyPatch(Ctx());
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_TRUE(t->sandboxed);
  EXPECT_TRUE(t->scratch);
  EXPECT_TRUE(t->workspace_only);
  EXPECT_EQ(t->root, "/home/u/.sandrun/sandboxes/" + ScopeDirName("agent:main"));
  EXPECT_EQ(t->workdir, t->root);
  EXPECT_EQ(t->alias_root, "/workspace");
  EXPECT_EQ(t->display_cwd, "/workspace");
}

TEST_F(ApplyPatchGate, SandboxWorkdirIsMappedFromTheContainerView) {
  auto c = Ctx();
  c.workdir = "/workspace/src";
  auto t = GateApplyPatch(c);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->workdir, t->root + "/src");
  EXPECT_EQ(t->display_cwd, "/workspace/src");
  c.workdir = "lib";
  t = GateApplyPatch(c);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->workdir, t->root + "/lib");
  EXPECT_EQ(t->display_cwd, "/workspace/lib");
  c.workdir = "/etc";
  t = GateApplyPatch(c);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().WireCode(), "invalid-request");
  c.workdir = "../..";
  EXPECT_FALSE(GateApplyPatch(c).has_value());
}

TEST_F(ApplyPatchGate, WorkspaceRootAndSharedScope) {
  settings_.sandbox.workspace_root = "~/scratch";
  settings_.sandbox.scope = config::SandboxScope::kShared;
  auto t = GateApplyPatch(Ctx());
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->root, "/home/u/scratch/" + ScopeDirName("shared")) << "its own dir, not the root";
}

TEST_F(ApplyPatchGate, SandboxEvenWithoutWorkspaceOnlyStaysInTheMount) {
  settings_.exec.apply_patch.workspace_only = false;
  auto t = GateApplyPatch(Ctx());
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(t->workspace_only);
}

TEST_F(ApplyPatchGate, ReadOnlyWorkspaceIsRefused) {
  settings_.sandbox.workspace_access = config::WorkspaceAccess::kRo;
  auto t = GateApplyPatch(Ctx());
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().WireCode(), "read-only-workspace");
}

TEST_F(ApplyPatchGate, RwWorkspaceIsTheRealOne) {
  settings_.sandbox.workspace_access = config::WorkspaceAccess::kRw;
  auto t = GateApplyPatch(Ctx());
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->root, "/work/ws");
  EXPECT_FALSE(t->scratch);
  EXPECT_TRUE(t->sandboxed);
}

TEST_F(ApplyPatchGate, GatewayWritesTheWorkspaceRelativeToTheWorkdir) {
  settings_.sandbox.mode = config::SandboxMode::kOff;
  auto c = Ctx();
  c.workdir = "pkg";
  auto t = GateApplyPatch(c);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_FALSE(t->sandboxed);
  EXPECT_EQ(t->root, "/work/ws");
  EXPECT_EQ(t->workdir, "/work/ws/pkg");
  EXPECT_EQ(t->display_cwd, "/work/ws/pkg");
  EXPECT_TRUE(t->alias_root.empty());
  c.workdir = "/tmp";
  t = GateApplyPatch(c);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().WireCode(), "invalid-request");
  settings_.exec.apply_patch.workspace_only = false;
  t = GateApplyPatch(c);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->workdir, "/tmp");
  EXPECT_FALSE(t->workspace_only);
}

TEST_F(ApplyPatchGate, NonMainSessionOfNonMainModeIsSandboxed) {
  settings_.sandbox.mode = config::SandboxMode::kNonMain;
  auto c = Ctx();
  EXPECT_FALSE(GateApplyPatch(c)->sandboxed);
  c.caller.session_key = "other";
  EXPECT_TRUE(GateApplyPatch(c)->sandboxed);
}

TEST_F(ApplyPatchGate, RefusalsInOrder) {
  auto c = Ctx();
  ToolPolicy deny{{}, {"group:fs"}};
  c.tools = {&deny};
  settings_.exec.apply_patch.enabled = false;
  auto t = GateApplyPatch(c);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().message, "Tool apply_patch is denied by tool policy (tools.deny).");
  c.tools.clear();
  t = GateApplyPatch(c);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().WireCode(), "tool-denied");
  EXPECT_EQ(t.error().message,
            "Tool apply_patch is disabled (tools.exec.applyPatch.enabled is false).");
  settings_.exec.apply_patch.enabled = true;
  settings_.exec.apply_patch.allow_models = {"gpt-5.4"};
  t = GateApplyPatch(c);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().message,
            "Tool apply_patch is not allowed for a call without a model "
            "(tools.exec.applyPatch.allowModels: gpt-5.4).");
  c.model = "openai/gpt-5.4";
  settings_.sandbox.workspace_access = config::WorkspaceAccess::kRo;
  t = GateApplyPatch(c);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().WireCode(), "read-only-workspace");
}

// ---- tools.exec.applyPatch and tools.allow/deny from config.json. ----

Result<config::Config> LoadText(const std::string& json) {
  char path[] = "/tmp/sandrun-toolcfg-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) return Error(ErrorCode::kIo, "mkstemp");
  ::close(fd);
  std::ofstream(path) << json;
  auto cfg = config::LoadConfig(path, true);
  std::remove(path);
  return cfg;
}

TEST(ToolConfig, ApplyPatchKeysAndPerAgentToolsAreRead) {
  auto cfg = LoadText(R"({
    "tools": {"deny": ["process"],
              "exec": {"applyPatch": {"workspaceOnly": false, "allowModels": ["gpt-5.4"]}}},
    "agents": {"ops": {"tools": {"allow": ["write"],
                                 "exec": {"applyPatch": {"enabled": false}}}}},
  })");
  ASSERT_TRUE(cfg.has_value()) << cfg.error().ToString();
  const config::ApplyPatchSettings& global = cfg->global.exec.apply_patch;
  EXPECT_TRUE(global.enabled);
  EXPECT_FALSE(global.workspace_only);
  EXPECT_EQ(global.allow_models, (std::vector<std::string>{"gpt-5.4"}));
  config::AgentSettings ops = cfg->ForAgent("ops");
  EXPECT_FALSE(ops.exec.apply_patch.enabled);
  EXPECT_FALSE(ops.exec.apply_patch.workspace_only) << "merged key by key over the global level";
  EXPECT_EQ(ops.tools.allow, (std::vector<std::string>{"write"}));
  ToolPolicyLayers layers = {&cfg->global.tools, &ops.tools};
  EXPECT_TRUE(IsToolAllowed(layers, "apply_patch"));
  EXPECT_FALSE(IsToolAllowed(layers, "exec"));
  EXPECT_FALSE(IsToolAllowed(layers, "process"));
  config::AgentSettings main_agent = cfg->ForAgent("main");
  EXPECT_TRUE(main_agent.exec.apply_patch.enabled);
  EXPECT_TRUE(config::AgentSettings{}.exec.apply_patch.enabled) << "defaults: enabled";
  EXPECT_TRUE(config::AgentSettings{}.exec.apply_patch.workspace_only);
}

TEST(ToolConfig, ApplyPatchKeysAreTypeChecked) {
  auto cfg = LoadText(R"({"tools": {"exec": {"applyPatch": {"enabled": "yes"}}}})");
  ASSERT_FALSE(cfg.has_value());
  EXPECT_NE(cfg.error().message.find("tools.exec.applyPatch.enabled: expected true or false"),
            std::string::npos)
      << cfg.error().message;
  cfg = LoadText(R"({"tools": {"exec": {"applyPatch": {"allowModels": [""]}}}})");
  ASSERT_FALSE(cfg.has_value());
  EXPECT_NE(cfg.error().message.find("tools.exec.applyPatch.allowModels[0]"), std::string::npos)
      << cfg.error().message;
}

}  // namespace
}  // namespace sandrun::policy

// Tests of the config loader: defaults, every key, positions in errors and warnings, merging.
#include "runner/config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace sandrun::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sandrun-config-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    root_ = templ;
    path_ = root_ + "/config.json";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // Writes `text` to config.json (or `name`) and returns its path.
  std::string Write(const std::string& text, const std::string& name = "config.json") {
    std::string path = root_ + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out << text;
    return path;
  }

  // Loads `text`; fails the test if it does not load.
  Config Load(const std::string& text) {
    auto config = LoadConfig(Write(text), true);
    EXPECT_TRUE(config) << config.error().message;
    return config ? *config : Config{};
  }

  // Loads `text` expecting an error; returns its message.
  std::string LoadError(const std::string& text) {
    auto config = LoadConfig(Write(text), true);
    EXPECT_FALSE(config) << "loaded: " << text;
    return config ? "" : config.error().message;
  }

  std::string root_, path_;
};

void ExpectDefaults(const AgentSettings& s) {
  AgentSettings d;
  EXPECT_EQ(s.exec.host, "auto");
  EXPECT_FALSE(s.exec.mode.has_value());
  EXPECT_FALSE(s.exec.security.has_value());
  EXPECT_FALSE(s.exec.ask.has_value());
  EXPECT_EQ(s.exec.timeout_seconds, 1800);
  EXPECT_EQ(s.exec.background_ms, 10000);
  EXPECT_EQ(s.exec.max_output_chars, 200000);
  EXPECT_EQ(s.exec.host_profile, "default");
  EXPECT_FALSE(s.elevated.enabled);
  EXPECT_EQ(s.elevated.default_level, "off");
  EXPECT_EQ(s.sandbox.mode, SandboxMode::kAll);
  EXPECT_EQ(s.sandbox.scope, SandboxScope::kAgent);
  EXPECT_EQ(s.sandbox.workspace_access, WorkspaceAccess::kNone);
  EXPECT_EQ(s.sandbox.docker.image, "sandrun-sandbox:bookworm");
  EXPECT_EQ(s.sandbox.docker.env, d.sandbox.docker.env);
  EXPECT_EQ(s.sandbox.docker.tmpfs, d.sandbox.docker.tmpfs);
  EXPECT_EQ(s.sandbox.docker.memory_bytes, int64_t{1} << 30);
  EXPECT_THAT(s.sandbox.docker.binds, IsEmpty());
  EXPECT_THAT(s.tools.allow, IsEmpty());
  EXPECT_EQ(s.workspace, "");
}

// ---- Files: missing, empty, explicit. ----

TEST_F(ConfigTest, MissingOptionalFileMeansDefaults) {
  auto config = LoadConfig(root_ + "/absent.json", false);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->source_path, "");
  EXPECT_THAT(config->warnings, IsEmpty());
  ExpectDefaults(config->ForAgent("main"));
  ExpectDefaults(config->global);
}

TEST_F(ConfigTest, MissingRequiredFileIsAnErrorNamingIt) {
  auto config = LoadConfig(root_ + "/absent.json", true);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(config.error().message, HasSubstr(root_ + "/absent.json"));
}

TEST_F(ConfigTest, UnreadableConfigIsAnErrorEvenWhenOptional) {
  std::filesystem::create_directory(root_ + "/dir.json");
  auto config = LoadConfig(root_ + "/dir.json", false);
  ASSERT_FALSE(config);
  EXPECT_THAT(config.error().message, HasSubstr(root_ + "/dir.json"));
}

TEST_F(ConfigTest, EmptyOrCommentOnlyFileMeansDefaults) {
  for (const char* text : {"", "  \n\t\n", "// nothing yet\n/* really */\n", "{}"}) {
    Config config = Load(text);
    EXPECT_EQ(config.source_path, path_) << text;
    EXPECT_THAT(config.warnings, IsEmpty());
    ExpectDefaults(config.ForAgent("main"));
  }
}

TEST_F(ConfigTest, ByteOrderMarkIsSkipped) {
  Config config = Load("\xEF\xBB\xBF{\"tools\": {\"exec\": {\"host\": \"gateway\"}}}");
  EXPECT_EQ(config.global.exec.host, "gateway");
}

TEST_F(ConfigTest, LoadConfigForPrefersTheExplicitPath) {
  auto missing = LoadConfigFor(root_ + "/nope.json", root_);
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, HasSubstr("nope.json"));

  auto defaults = LoadConfigFor("", root_);  // no config.json in the state dir yet
  ASSERT_TRUE(defaults) << defaults.error().message;
  EXPECT_EQ(defaults->source_path, "");

  Write(R"({"sandbox": {"mode": "off"}})");
  auto from_state = LoadConfigFor("", root_);
  ASSERT_TRUE(from_state) << from_state.error().message;
  EXPECT_EQ(from_state->source_path, path_);
  EXPECT_EQ(from_state->global.sandbox.mode, SandboxMode::kOff);

  std::string other = Write(R"({"sandbox": {"mode": "non-main"}})", "other.json");
  auto explicit_config = LoadConfigFor(other, root_);
  ASSERT_TRUE(explicit_config) << explicit_config.error().message;
  EXPECT_EQ(explicit_config->source_path, other);
  EXPECT_EQ(explicit_config->global.sandbox.mode, SandboxMode::kNonMain);
}

TEST_F(ConfigTest, LoadConfigForUsesSandrunHomeWithoutAStateDir) {
  const char* old = std::getenv("SANDRUN_HOME");
  std::string saved = old ? old : "";
  setenv("SANDRUN_HOME", root_.c_str(), 1);
  Write(R"({"tools": {"exec": {"host": "node"}}})");
  auto config = LoadConfigFor("", "");
  if (old) {
    setenv("SANDRUN_HOME", saved.c_str(), 1);
  } else {
    unsetenv("SANDRUN_HOME");
  }
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->global.exec.host, "node");
}

// ---- Every key. ----

TEST_F(ConfigTest, EveryKeyRoundTrips) {
  Config config = Load(R"({
    "$schema": "https://example.com/sandrun.schema.json",
    "version": 1,
    "tools": {
      "exec": {
        "host": "gateway",
        "mode": "allowlist",
        "security": "deny",
        "ask": "on-miss",
        "timeoutSeconds": 60,
        "backgroundMs": 2500,
        "maxOutputChars": 5000,
        "pendingMaxOutputChars": 4000,
        "cleanupMs": 120000,
        "notifyOnExit": false,
        "notifyOnExitEmptySuccess": true,
        "pathPrepend": ["/opt/bin", "/usr/local/go/bin"],
        "loginShellPath": false,
        "node": "mac-mini",
        "hostProfile": "privileged",
        "hostUser": "builder",
        "safeBins": ["jq"],
        "safeBinTrustedDirs": ["/opt/bin"],
        "safeBinProfiles": {"tr": {"maxPositional": 2}},
        "strictInlineEval": true,
        "autoAllowSkills": false,
        "approvalTimeoutMs": 60000,
        "reviewer": {"command": ["review", "--json"], "model": "m", "timeoutMs": 30000},
        "applyPatch": {"enabled": true, "workspaceOnly": false, "allowModels": ["gpt-5.4"]}
      },
      "elevated": {
        "enabled": true,
        "allowFrom": {"cli": ["root"], "api": ["ops-*", 12345]},
        "defaultLevel": "ask",
        "hostProfile": "privileged"
      },
      "allow": ["exec", "group:fs"],
      "deny": ["process"]
    },
    "sandbox": {
      "mode": "non-main",
      "scope": "session",
      "workspaceAccess": "rw",
      "workspaceRoot": "/srv/sandboxes",
      "mainSessionKey": " primary ",
      "docker": {
        "image": "sandrun-sandbox:minimal",
        "containerPrefix": "ci-sbx-",
        "workdir": "/work",
        "readOnlyRoot": false,
        "tmpfs": ["/tmp:size=64m"],
        "network": "bridge",
        "capDrop": ["NET_RAW"],
        "env": {"FOO": "bar"},
        "user": "1000:1000",
        "setupCommand": "apt-get update",
        "pidsLimit": 0,
        "memory": "512m",
        "memorySwap": "1g",
        "cpus": 1.5,
        "seccompProfile": "strict",
        "apparmorProfile": "docker-default",
        "binds": ["/data:/data:ro"]
      },
      "prune": {"idleHours": 2, "maxAgeDays": 0.5},
      "pool": {"min": 1, "max": 3, "idleTtlMs": 60000}
    },
    "agents": {
      "defaults": {"workspace": "/home/ci/project"}
    }
  })");
  EXPECT_THAT(config.warnings, IsEmpty());
  const AgentSettings& s = config.global;
  EXPECT_EQ(s.exec.host, "gateway");
  EXPECT_EQ(s.exec.mode, ExecMode::kAllowlist);
  EXPECT_EQ(s.exec.security, Security::kDeny);
  EXPECT_EQ(s.exec.ask, Ask::kOnMiss);
  EXPECT_EQ(s.exec.timeout_seconds, 60);
  EXPECT_EQ(s.exec.background_ms, 2500);
  EXPECT_EQ(s.exec.max_output_chars, 5000);
  EXPECT_EQ(s.exec.pending_max_output_chars, 4000);
  EXPECT_EQ(s.exec.cleanup_ms, 120000);
  EXPECT_FALSE(s.exec.notify_on_exit);
  EXPECT_TRUE(s.exec.notify_on_exit_empty_success);
  EXPECT_THAT(s.exec.path_prepend, ElementsAre("/opt/bin", "/usr/local/go/bin"));
  EXPECT_FALSE(s.exec.login_shell_path);
  EXPECT_EQ(s.exec.node, "mac-mini");
  EXPECT_EQ(s.exec.host_profile, "privileged");
  EXPECT_EQ(s.exec.host_user, "builder");

  EXPECT_TRUE(s.elevated.enabled);
  EXPECT_THAT(s.elevated.allow_from,
              UnorderedElementsAre(Pair("cli", ElementsAre("root")),
                                   Pair("api", ElementsAre("ops-*", "12345"))));
  EXPECT_EQ(s.elevated.default_level, "ask");
  EXPECT_EQ(s.elevated.host_profile, "privileged");
  EXPECT_THAT(s.tools.allow, ElementsAre("exec", "group:fs"));
  EXPECT_THAT(s.tools.deny, ElementsAre("process"));

  EXPECT_EQ(s.sandbox.mode, SandboxMode::kNonMain);
  EXPECT_EQ(s.sandbox.scope, SandboxScope::kSession);
  EXPECT_EQ(s.sandbox.workspace_access, WorkspaceAccess::kRw);
  EXPECT_EQ(s.sandbox.workspace_root, "/srv/sandboxes");
  EXPECT_EQ(s.sandbox.main_session_key, "primary");
  const DockerSettings& d = s.sandbox.docker;
  EXPECT_EQ(d.image, "sandrun-sandbox:minimal");
  EXPECT_EQ(d.container_prefix, "ci-sbx-");
  EXPECT_EQ(d.workdir, "/work");
  EXPECT_FALSE(d.read_only_root);
  EXPECT_THAT(d.tmpfs, ElementsAre("/tmp:size=64m"));
  EXPECT_EQ(d.network, "bridge");
  EXPECT_THAT(d.cap_drop, ElementsAre("NET_RAW"));
  EXPECT_THAT(d.env, ElementsAre(Pair("FOO", "bar")));  // replaces the built-in LANG
  EXPECT_EQ(d.user, "1000:1000");
  EXPECT_EQ(d.setup_command, "apt-get update");
  EXPECT_EQ(d.pids_limit, 0);
  EXPECT_EQ(d.memory_bytes, 512 * 1024 * 1024);
  EXPECT_EQ(d.memory_swap_bytes, int64_t{1} << 30);
  EXPECT_DOUBLE_EQ(d.cpus, 1.5);
  EXPECT_EQ(d.seccomp_profile, "strict");
  EXPECT_EQ(d.apparmor_profile, "docker-default");
  EXPECT_THAT(d.binds, ElementsAre("/data:/data:ro"));
  EXPECT_DOUBLE_EQ(s.sandbox.prune.idle_hours, 2);
  EXPECT_DOUBLE_EQ(s.sandbox.prune.max_age_days, 0.5);
  EXPECT_EQ(s.sandbox.pool.min, 1);
  EXPECT_EQ(s.sandbox.pool.max, 3);
  EXPECT_EQ(s.sandbox.pool.idle_ttl_ms, 60000);
  EXPECT_EQ(s.workspace, "/home/ci/project");
}

TEST_F(ConfigTest, AllowlistKeysAreTyped) {
  Config config = Load(R"({"tools": {"exec": {
    "safeBins": [" WC ", "jq"],
    "safeBinTrustedDirs": ["/opt/tools/bin"],
    "safeBinProfiles": {"Rg": {"minPositional": 1, "maxPositional": 2,
                               "allowedValueFlags": ["-e"], "allowedFlags": ["-n"],
                               "deniedFlags": ["--pre"]}},
    "strictInlineEval": true, "autoAllowSkills": true, "skillBinDirs": ["/opt/skills/bin"],
    "approvalTimeoutMs": 60000, "approvalRunningNoticeMs": 0,
    "reviewer": {"command": "exit 0", "timeoutMs": 5000, "model": "m"}}}})");
  const ExecSettings& e = config.global.exec;
  ASSERT_TRUE(e.safe_bins.has_value());
  EXPECT_THAT(*e.safe_bins, ElementsAre("wc", "jq"));
  EXPECT_THAT(e.safe_bin_trusted_dirs, ElementsAre("/opt/tools/bin"));
  ASSERT_EQ(e.safe_bin_profiles.count("rg"), 1u);
  const SafeBinProfileSettings& rg = e.safe_bin_profiles.at("rg");
  EXPECT_EQ(rg.min_positional, 1);
  EXPECT_EQ(rg.max_positional, 2);
  EXPECT_THAT(rg.allowed_value_flags, ElementsAre("-e"));
  EXPECT_THAT(rg.allowed_flags, ElementsAre("-n"));
  EXPECT_THAT(rg.denied_flags, ElementsAre("--pre"));
  EXPECT_TRUE(e.strict_inline_eval);
  EXPECT_TRUE(e.auto_allow_skills);
  EXPECT_THAT(e.skill_bin_dirs, ElementsAre("/opt/skills/bin"));
  EXPECT_EQ(e.approval_timeout_ms, 60000);
  EXPECT_EQ(e.approval_running_notice_ms, 0);
  EXPECT_THAT(e.reviewer.command, ElementsAre("/bin/sh", "-c", "exit 0"));
  EXPECT_EQ(e.reviewer.timeout_ms, 5000);
  // Unset safeBins stays unset (the defaults apply), as OpenClaw distinguishes [] from absent.
  EXPECT_FALSE(Load("{}").global.exec.safe_bins.has_value());
  EXPECT_EQ(Load("{}").global.exec.approval_timeout_ms, 1800000);
}

TEST_F(ConfigTest, CommentsAndTrailingCommasAreAllowed) {
  Config config = Load(R"({
    // line comment
    "tools": {
      /* block
         comment */
      "exec": {"host": "gateway", "pathPrepend": ["/a", "/b",],},
    },
    "sandbox": {"mode": "off",}, // after a value
  }
  // trailing comment
  )");
  EXPECT_THAT(config.warnings, IsEmpty());
  EXPECT_EQ(config.global.exec.host, "gateway");
  EXPECT_THAT(config.global.exec.path_prepend, ElementsAre("/a", "/b"));
  EXPECT_EQ(config.global.sandbox.mode, SandboxMode::kOff);
}

TEST_F(ConfigTest, EnumsAreTrimmedAndCaseInsensitive) {
  Config config = Load(R"({
    "tools": {"exec": {"host": " Gateway ", "mode": "FULL", "ask": "On-Miss"},
              "elevated": {"defaultLevel": "Full"}},
    "sandbox": {"mode": "Non-Main", "workspaceAccess": "RO"}
  })");
  EXPECT_EQ(config.global.exec.host, "gateway");
  EXPECT_EQ(config.global.exec.mode, ExecMode::kFull);
  EXPECT_EQ(config.global.exec.ask, Ask::kOnMiss);
  EXPECT_EQ(config.global.elevated.default_level, "full");
  EXPECT_EQ(config.global.sandbox.mode, SandboxMode::kNonMain);
  EXPECT_EQ(config.global.sandbox.workspace_access, WorkspaceAccess::kRo);
}

TEST_F(ConfigTest, TildePathsAreExpandedWithHome) {
  const char* old = std::getenv("HOME");
  std::string saved = old ? old : "";
  setenv("HOME", "/home/tester", 1);
  auto config = LoadConfig(Write(R"({"sandbox": {"workspaceRoot": "~/sandboxes"},
                                     "agents": {"ops": {"workspace": "~"}}})"),
                           true);
  setenv("HOME", saved.c_str(), 1);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->global.sandbox.workspace_root, "/home/tester/sandboxes");
  EXPECT_EQ(config->ForAgent("ops").workspace, "/home/tester");
}

// ---- Errors with positions. ----

TEST_F(ConfigTest, SyntaxErrorNamesFileLineAndColumn) {
  std::string message = LoadError(
      "{\n"
      "  \"tools\": {\n"
      "    \"exec\": {\"host\": \"sandbox\" \"mode\": \"full\"}\n"
      "  }\n"
      "}\n");
  EXPECT_EQ(message, path_ + ":3:32: Missing a comma or '}' after an object member.");
}

TEST_F(ConfigTest, WrongTypeNamesKeyPathAndExactLine) {
  std::string message = LoadError(R"({
  "tools": {
    "exec": {
      "host": "sandbox",
      "timeoutSeconds": "abc"
    }
  }
})");
  EXPECT_EQ(
      message,
      path_ + ":5:25: tools.exec.timeoutSeconds: expected a non-negative integer, got \"abc\"");
}

TEST_F(ConfigTest, ErrorPositionsSurviveCommentsAndArrays) {
  std::string message = LoadError(R"({
  /* a comment with "quotes" and { braces [ */
  "sandbox": {
    "docker": {
      "binds": [
        "/a:/a", // first
        /* second */ 42,
      ],
    },
  },
})");
  EXPECT_EQ(message, path_ + ":7:22: sandbox.docker.binds[1]: expected a non-empty string, got 42");
}

TEST_F(ConfigTest, TopLevelMustBeAnObject) {
  EXPECT_EQ(LoadError("[1, 2]"),
            path_ + ":1:1: expected a JSON object at the top level, got an array");
}

TEST_F(ConfigTest, DuplicateKeysAreAnError) {
  std::string message = LoadError(R"({
  "tools": {"exec": {"host": "sandbox"}},
  "sandbox": {},
  "tools": {"exec": {"host": "gateway"}}
})");
  EXPECT_EQ(message, path_ + ":4:3: duplicate key tools (first at line 2)");
}

TEST_F(ConfigTest, DeepNestingIsRefusedNotCrashed) {
  std::string deep = "{\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_THAT(LoadError(deep), HasSubstr("nested deeper than"));
}

TEST_F(ConfigTest, NulBytesInStringsAreRefused) {
  EXPECT_THAT(LoadError(R"({"tools": {"exec": {"node": "a\u0000b"}}})"),
              HasSubstr("tools.exec.node: contains a NUL byte"));
}

struct BadValue {
  const char* name;
  const char* json;
  const char* message;  // expected after "FILE:LINE:COL: "
};

class BadValueTest : public ConfigTest, public ::testing::WithParamInterface<BadValue> {};

TEST_P(BadValueTest, IsRefusedWithKeyPathAndPosition) {
  std::string message = LoadError(GetParam().json);
  EXPECT_THAT(message, StartsWith(path_ + ":1:"));
  EXPECT_THAT(message, HasSubstr(GetParam().message));
}

// clang-format off
const BadValue kBadValues[] = {
    {"HostEnum", R"({"tools": {"exec": {"host": "spark"}}})",
     R"(tools.exec.host: expected one of auto, sandbox, gateway, node, got "spark")"},
    {"HostType", R"({"tools": {"exec": {"host": 1}}})",
     "tools.exec.host: expected one of auto, sandbox, gateway, node, got 1"},
    {"ModeEnum", R"({"tools": {"exec": {"mode": "sometimes"}}})",
     R"(tools.exec.mode: expected one of deny, allowlist, ask, auto, full, got "sometimes")"},
    {"SecurityEnum", R"({"tools": {"exec": {"security": "open"}}})",
     R"(tools.exec.security: expected one of deny, allowlist, full, got "open")"},
    {"AskEnum", R"({"tools": {"exec": {"ask": "never"}}})",
     R"(tools.exec.ask: expected one of off, on-miss, always, got "never")"},
    {"TimeoutNegative", R"({"tools": {"exec": {"timeoutSeconds": -1}}})",
     "tools.exec.timeoutSeconds: expected a non-negative integer, got -1"},
    {"TimeoutFraction", R"({"tools": {"exec": {"timeoutSeconds": 1.5}}})",
     "tools.exec.timeoutSeconds: expected a non-negative integer, got 1.5"},
    {"TimeoutHuge", R"({"tools": {"exec": {"timeoutSeconds": 99999999999999999999}}})",
     "tools.exec.timeoutSeconds: expected a non-negative integer, got 100000000000000000000.0"},
    {"TimeoutSecAliasType", R"({"tools": {"exec": {"timeoutSec": "10"}}})",
     R"(tools.exec.timeoutSec: expected a non-negative integer, got "10")"},
    {"BackgroundMsType", R"({"tools": {"exec": {"backgroundMs": "x"}}})",
     R"(tools.exec.backgroundMs: expected an integer, got "x")"},
    {"MaxOutputCharsType", R"({"tools": {"exec": {"maxOutputChars": true}}})",
     "tools.exec.maxOutputChars: expected an integer, got true"},
    {"CleanupMsType", R"({"tools": {"exec": {"cleanupMs": null}}})",
     "tools.exec.cleanupMs: expected an integer, got null"},
    {"NotifyOnExitType", R"({"tools": {"exec": {"notifyOnExit": "yes"}}})",
     R"(tools.exec.notifyOnExit: expected true or false, got "yes")"},
    {"LoginShellPathType", R"({"tools": {"exec": {"loginShellPath": 0}}})",
     "tools.exec.loginShellPath: expected true or false, got 0"},
    {"PathPrependType", R"({"tools": {"exec": {"pathPrepend": "/opt/bin"}}})",
     R"(tools.exec.pathPrepend: expected an array of strings, got "/opt/bin")"},
    {"PathPrependElement", R"({"tools": {"exec": {"pathPrepend": ["/a", 1]}}})",
     "tools.exec.pathPrepend[1]: expected a string, got 1"},
    {"HostProfileTraversal", R"({"tools": {"exec": {"hostProfile": "../etc"}}})",
     "tools.exec.hostProfile: expected a profile name of lowercase letters, digits and '-'"},
    {"HostProfileUppercase", R"({"tools": {"exec": {"hostProfile": "Default"}}})",
     "tools.exec.hostProfile: expected a profile name of lowercase letters, digits and '-', "
     R"(got "Default")"},
    {"ExecNotObject", R"({"tools": {"exec": true}})",
     "tools.exec: expected an object, got true"},
    {"ToolsNotObject", R"({"tools": "all"})", R"(tools: expected an object, got "all")"},
    {"SafeBinsType", R"({"tools": {"exec": {"safeBins": "jq"}}})",
     R"(tools.exec.safeBins: expected an array of strings, got "jq")"},
    {"StrictInlineEvalType", R"({"tools": {"exec": {"strictInlineEval": "on"}}})",
     R"(tools.exec.strictInlineEval: expected true or false, got "on")"},
    {"ApprovalTimeoutType", R"({"tools": {"exec": {"approvalTimeoutMs": -5}}})",
     "tools.exec.approvalTimeoutMs: expected an integer from 1000 to 9007199254740991, got -5"},
    {"SafeBinProfilesType", R"({"tools": {"exec": {"safeBinProfiles": []}}})",
     "tools.exec.safeBinProfiles: expected an object of bin: profile, got an array"},
    {"ReviewerCommandType", R"({"tools": {"exec": {"reviewer": {"command": 5}}}})",
     "tools.exec.reviewer.command: expected a string or a non-empty array of strings, got 5"},
    {"SafeBinProfileKey", R"({"tools": {"exec": {"safeBinProfiles": {"wc": {"maxPositional": -1}}}}})",
     "tools.exec.safeBinProfiles.wc.maxPositional: expected a non-negative integer, got -1"},
    {"SafeBinTrustedDirRelative", R"({"tools": {"exec": {"safeBinTrustedDirs": ["bin"]}}})",
     R"(tools.exec.safeBinTrustedDirs[0]: expected an absolute path, got "bin")"},
    {"ReviewerEmptyArray", R"({"tools": {"exec": {"reviewer": {"command": []}}}})",
     "tools.exec.reviewer.command: expected a string or a non-empty array of strings, got an array"},
    {"ApplyPatchEnabledType", R"({"tools": {"exec": {"applyPatch": {"enabled": "yes"}}}})",
     R"(tools.exec.applyPatch.enabled: expected true or false, got "yes")"},
    {"ElevatedEnabledType", R"({"tools": {"elevated": {"enabled": 1}}})",
     "tools.elevated.enabled: expected true or false, got 1"},
    {"AllowFromProviderType", R"({"tools": {"elevated": {"allowFrom": {"cli": "root"}}}})",
     R"(tools.elevated.allowFrom.cli: expected an array of strings, got "root")"},
    {"AllowFromType", R"({"tools": {"elevated": {"allowFrom": ["root"]}}})",
     "tools.elevated.allowFrom: expected an object of provider: [senders], got an array"},
    {"DefaultLevelEnum", R"({"tools": {"elevated": {"defaultLevel": "maybe"}}})",
     R"(tools.elevated.defaultLevel: expected one of off, on, ask, full, got "maybe")"},
    {"ToolsAllowType", R"({"tools": {"allow": "exec"}})",
     R"(tools.allow: expected an array of strings, got "exec")"},
    {"ToolsDenyElement", R"({"tools": {"deny": [null]}})",
     "tools.deny[0]: expected a string, got null"},
    {"SandboxNotObject", R"({"sandbox": []})", "sandbox: expected an object, got an array"},
    {"SandboxModeEnum", R"({"sandbox": {"mode": "some"}})",
     R"(sandbox.mode: expected one of off, non-main, all, got "some")"},
    {"ScopeEnum", R"({"sandbox": {"scope": "global"}})",
     R"(sandbox.scope: expected one of session, agent, shared, got "global")"},
    {"PerSessionType", R"({"sandbox": {"perSession": "yes"}})",
     R"(sandbox.perSession: expected true or false, got "yes")"},
    {"WorkspaceAccessEnum", R"({"sandbox": {"workspaceAccess": "write"}})",
     R"(sandbox.workspaceAccess: expected one of none, ro, rw, got "write")"},
    {"WorkspaceRootRelative", R"({"sandbox": {"workspaceRoot": "relative/dir"}})",
     "sandbox.workspaceRoot: expected an absolute path or one starting with ~/, "
     R"(got "relative/dir")"},
    {"MainSessionKeyBlank", R"({"sandbox": {"mainSessionKey": "  "}})",
     R"(sandbox.mainSessionKey: expected a non-empty string, got "  ")"},
    {"ImageEmpty", R"({"sandbox": {"docker": {"image": ""}}})",
     R"(sandbox.docker.image: expected a non-empty string, got "")"},
    {"ContainerPrefixInvalid", R"({"sandbox": {"docker": {"containerPrefix": "-x/"}}})",
     R"(sandbox.docker.containerPrefix: expected a container name prefix)"},
    {"WorkdirRelative", R"({"sandbox": {"docker": {"workdir": "work"}}})",
     R"(sandbox.docker.workdir: expected an absolute path, got "work")"},
    {"ReadOnlyRootType", R"({"sandbox": {"docker": {"readOnlyRoot": "true"}}})",
     R"(sandbox.docker.readOnlyRoot: expected true or false, got "true")"},
    {"TmpfsRelative", R"({"sandbox": {"docker": {"tmpfs": ["/tmp", "tmp"]}}})",
     "sandbox.docker.tmpfs[1]: expected an absolute path (optionally followed by :options), "
     R"(got "tmp")"},
    {"CapDropType", R"({"sandbox": {"docker": {"capDrop": "ALL"}}})",
     R"(sandbox.docker.capDrop: expected an array of strings, got "ALL")"},
    {"EnvValueType", R"({"sandbox": {"docker": {"env": {"A": 1}}}})",
     "sandbox.docker.env.A: expected a string, got 1"},
    {"EnvName", R"({"sandbox": {"docker": {"env": {"A=B": "x"}}}})",
     R"(sandbox.docker.env["A=B"]: invalid environment variable name)"},
    {"EnvType", R"({"sandbox": {"docker": {"env": ["A=1"]}}})",
     "sandbox.docker.env: expected an object of NAME: value strings, got an array"},
    {"PidsLimitNegative", R"({"sandbox": {"docker": {"pidsLimit": -5}}})",
     "sandbox.docker.pidsLimit: expected a non-negative integer, got -5"},
    {"MemoryBad", R"({"sandbox": {"docker": {"memory": "bad"}}})",
     R"(sandbox.docker.memory: expected a byte count (an integer or a string like "512m" or )"
     R"("1.5g"), got "bad")"},
    {"MemoryNegative", R"({"sandbox": {"docker": {"memory": -1}}})",
     "sandbox.docker.memory: expected a byte count"},
    {"MemoryUnit", R"({"sandbox": {"docker": {"memory": "1.5x"}}})",
     R"(sandbox.docker.memory: expected a byte count (an integer or a string like "512m" or )"
     R"("1.5g"), got "1.5x")"},
    {"MemoryTwoDots", R"({"sandbox": {"docker": {"memory": "1.2.3g"}}})",
     "sandbox.docker.memory: expected a byte count"},
    {"MemoryType", R"({"sandbox": {"docker": {"memory": true}}})",
     "sandbox.docker.memory: expected a byte count"},
    {"MemorySwapBelowMinusOne", R"({"sandbox": {"docker": {"memorySwap": -2}}})",
     R"(sandbox.docker.memorySwap: expected a byte count (an integer, -1, or a string like )"
     R"("512m" or "1.5g"), got -2)"},
    {"CpusNegative", R"({"sandbox": {"docker": {"cpus": -1}}})",
     "sandbox.docker.cpus: expected a non-negative number, got -1"},
    {"CpusString", R"({"sandbox": {"docker": {"cpus": "2"}}})",
     R"(sandbox.docker.cpus: expected a non-negative number, got "2")"},
    {"SeccompProfileTraversal", R"({"sandbox": {"docker": {"seccompProfile": "../x"}}})",
     "sandbox.docker.seccompProfile: expected a profile name of lowercase letters, digits and "
     R"('-', got "../x")"},
    {"BindsType", R"({"sandbox": {"docker": {"binds": "/a:/a"}}})",
     R"(sandbox.docker.binds: expected an array of strings, got "/a:/a")"},
    {"PruneIdleHoursNegative", R"({"sandbox": {"prune": {"idleHours": -1}}})",
     "sandbox.prune.idleHours: expected a non-negative number, got -1"},
    {"PruneMaxAgeDaysType", R"({"sandbox": {"prune": {"maxAgeDays": "7"}}})",
     R"(sandbox.prune.maxAgeDays: expected a non-negative number, got "7")"},
    {"PoolMinNegative", R"({"sandbox": {"pool": {"min": -1}}})", "sandbox.pool.min: "},
    {"PoolMaxTooLarge", R"({"sandbox": {"pool": {"max": 65}}})", "sandbox.pool.max: "},
    {"PoolIdleTtlTooShort", R"({"sandbox": {"pool": {"idleTtlMs": 10}}})",
     "sandbox.pool.idleTtlMs: "},
    {"PoolNotObject", R"({"sandbox": {"pool": 2}})", "sandbox.pool: expected an object"},
    {"AgentsType", R"({"agents": []})", "agents: expected an object, got an array"},
    {"AgentHostEnum", R"({"agents": {"ops": {"tools": {"exec": {"host": "spark"}}}}})",
     R"(agents.ops.tools.exec.host: expected one of auto, sandbox, gateway, node, got "spark")"},
    {"AgentNotObject", R"({"agents": {"ops": true}})", "agents.ops: expected an object, got true"},
    {"AgentIdInvalid", R"({"agents": {"bad.id": {}}})",
     R"(agents["bad.id"]: invalid agent id "bad.id")"},
    {"AgentWorkspaceRelative", R"({"agents": {"ops": {"workspace": "src"}}})",
     R"(agents.ops.workspace: expected an absolute path or one starting with ~/, got "src")"},
    {"AgentSandboxDockerInvalid", R"({"agents": {"ops": {"sandbox": {"docker": {"cpus": "x"}}}}})",
     R"(agents.ops.sandbox.docker.cpus: expected a non-negative number, got "x")"},
    {"AgentsDefaultsInvalid", R"({"agents": {"defaults": {"sandbox": {"mode": "maybe"}}}})",
     R"(agents.defaults.sandbox.mode: expected one of off, non-main, all, got "maybe")"},
    {"AgentsListType", R"({"agents": {"list": {"id": "ops"}}})",
     "agents.list: expected an array of agents"},
    {"AgentsListEntryWithoutId", R"({"agents": {"list": [{"tools": {}}]}})",
     "agents.list[0]: expected an agent with an \"id\", got an object"},
    {"AgentsListIdType", R"({"agents": {"list": [{"id": 3}]}})",
     "agents.list[0].id: expected a non-empty string, got 3"},
    {"AgentsListReservedId", R"({"agents": {"list": [{"id": "defaults"}]}})",
     R"(agents.list[0].id: "defaults" is reserved and cannot be an agent id)"},
    {"AgentDefinedTwice", R"({"agents": {"ops": {}, "list": [{"id": "ops"}]}})",
     "agents.list[0].id: agent ops is defined twice (first at line 1)"},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(Table, BadValueTest, ::testing::ValuesIn(kBadValues),
                         [](const auto& row) { return std::string(row.param.name); });

// ---- Warnings. ----

TEST_F(ConfigTest, UnknownKeysWarnWithLineAndStillLoad) {
  Config config = Load(R"({
  "tools": {
    "exec": {
      "host": "gateway",
      "foo": 1
    }
  },
  "gateway": {"port": 8080}
})");
  EXPECT_EQ(config.global.exec.host, "gateway");
  EXPECT_THAT(config.warnings, ElementsAre(path_ + ":5:7: unknown key tools.exec.foo (ignored)",
                                           path_ + ":8:3: unknown key gateway (ignored)"));
}

TEST_F(ConfigTest, SchemaVersionAndLaterKeysAreSilent) {
  Config config = Load(R"({"$schema": "x", "version": 2,
    "tools": {"exec": {"safeBins": ["cut"], "strictInlineEval": true, "autoAllowSkills": true,
                       "approvalTimeoutMs": 1000, "reviewer": {"command": "review"},
                       "applyPatch": {"allowModels": []}, "safeBinProfiles": {}}}})");
  EXPECT_THAT(config.warnings, IsEmpty());
}

TEST_F(ConfigTest, ClampsOutOfRangeDurationsAndCapsWithAWarning) {
  Config config = Load(R"({"tools": {"exec": {
    "backgroundMs": 5,
    "maxOutputChars": 10,
    "pendingMaxOutputChars": 900000,
    "cleanupMs": 1
  }}})");
  EXPECT_EQ(config.global.exec.background_ms, 10);
  EXPECT_EQ(config.global.exec.max_output_chars, 1000);
  EXPECT_EQ(config.global.exec.pending_max_output_chars, 200000);
  EXPECT_EQ(config.global.exec.cleanup_ms, 60000);
  ASSERT_EQ(config.warnings.size(), 4u);
  EXPECT_EQ(config.warnings[0],
            path_ + ":2:21: tools.exec.backgroundMs: 5 is outside 10..120000; using 10");

  Config high = Load(R"({"tools": {"exec": {"backgroundMs": 500000}}})");
  EXPECT_EQ(high.global.exec.background_ms, 120000);
  Config inside = Load(R"({"tools": {"exec": {"backgroundMs": 120000}}})");
  EXPECT_EQ(inside.global.exec.background_ms, 120000);
  EXPECT_THAT(inside.warnings, IsEmpty());
}

TEST_F(ConfigTest, TimeoutSecIsAnAliasAndTimeoutSecondsWins) {
  EXPECT_EQ(Load(R"({"tools": {"exec": {"timeoutSec": 90}}})").global.exec.timeout_seconds, 90);
  EXPECT_EQ(Load(R"({"tools": {"exec": {"timeoutSec": 0}}})").global.exec.timeout_seconds, 0);
  Config both = Load(R"({"tools": {"exec": {"timeoutSeconds": 30, "timeoutSec": 90}}})");
  EXPECT_EQ(both.global.exec.timeout_seconds, 30);
  ASSERT_EQ(both.warnings.size(), 1u);
  EXPECT_THAT(both.warnings[0], HasSubstr("tools.exec.timeoutSec is ignored"));
  Config reversed = Load(R"({"tools": {"exec": {"timeoutSec": 90, "timeoutSeconds": 30}}})");
  EXPECT_EQ(reversed.global.exec.timeout_seconds, 30);
}

TEST_F(ConfigTest, LegacyPerSession) {
  EXPECT_EQ(Load(R"({"sandbox": {"perSession": true}})").global.sandbox.scope,
            SandboxScope::kSession);
  EXPECT_EQ(Load(R"({"sandbox": {"perSession": false}})").global.sandbox.scope,
            SandboxScope::kShared);
  EXPECT_EQ(Load(R"({"sandbox": {"perSession": true, "scope": "agent"}})").global.sandbox.scope,
            SandboxScope::kAgent);
  EXPECT_EQ(Load(R"({"sandbox": {"scope": "agent", "perSession": false}})").global.sandbox.scope,
            SandboxScope::kAgent);
}

// ---- Agents. ----

TEST_F(ConfigTest, AgentOverridesMergeOverTheGlobalSettings) {
  Config config = Load(R"({
    "tools": {"exec": {"host": "auto", "timeoutSeconds": 60, "pathPrepend": ["/g"]},
              "elevated": {"enabled": true, "allowFrom": {"cli": ["root"], "api": ["ops-*"]}}},
    "sandbox": {"mode": "all", "docker": {"env": {"A": "1", "B": "2"}, "binds": ["/g:/g"],
                                          "image": "global:img", "memory": "1g"}},
    "agents": {
      "ops": {
        "tools": {"exec": {"host": "gateway", "pathPrepend": ["/o"]},
                  "elevated": {"allowFrom": {"cli": ["alice"]}}},
        "sandbox": {"docker": {"env": {"B": "3", "C": "4"}, "binds": ["/o:/o:ro"],
                               "memory": "2g"}},
        "workspace": "/srv/ops"
      }
    }
  })");
  EXPECT_THAT(config.warnings, IsEmpty());
  AgentSettings ops = config.ForAgent("ops");
  EXPECT_EQ(ops.exec.host, "gateway");                    // replaced
  EXPECT_EQ(ops.exec.timeout_seconds, 60);                // inherited
  EXPECT_THAT(ops.exec.path_prepend, ElementsAre("/o"));  // arrays replace
  EXPECT_TRUE(ops.elevated.enabled);
  EXPECT_THAT(
      ops.elevated.allow_from,  // objects merge key by key
      UnorderedElementsAre(Pair("cli", ElementsAre("alice")), Pair("api", ElementsAre("ops-*"))));
  EXPECT_THAT(ops.sandbox.docker.env,
              UnorderedElementsAre(Pair("A", "1"), Pair("B", "3"), Pair("C", "4")));
  EXPECT_THAT(ops.sandbox.docker.binds, ElementsAre("/g:/g", "/o:/o:ro"));  // concatenated
  EXPECT_EQ(ops.sandbox.docker.image, "global:img");
  EXPECT_EQ(ops.sandbox.docker.memory_bytes, int64_t{2} << 30);
  EXPECT_EQ(ops.workspace, "/srv/ops");

  for (const char* other : {"main", "nobody", "defaults"}) {
    AgentSettings s = config.ForAgent(other);
    EXPECT_EQ(s.exec.host, "auto") << other;
    EXPECT_THAT(s.sandbox.docker.env, UnorderedElementsAre(Pair("A", "1"), Pair("B", "2")));
    EXPECT_THAT(s.sandbox.docker.binds, ElementsAre("/g:/g"));
    EXPECT_EQ(s.workspace, "");
  }
}

TEST_F(ConfigTest, AgentEnvMergesOverTheBuiltInEnv) {
  Config config = Load(R"({"agents": {"ops": {"sandbox": {"docker": {"env": {"X": "1"}}}}}})");
  EXPECT_THAT(config.ForAgent("ops").sandbox.docker.env,
              UnorderedElementsAre(Pair("LANG", "C.UTF-8"), Pair("X", "1")));
  EXPECT_THAT(config.ForAgent("main").sandbox.docker.env,
              UnorderedElementsAre(Pair("LANG", "C.UTF-8")));
}

TEST_F(ConfigTest, ErrorInAnUnusedAgentIsReportedAtLoad) {
  std::string message = LoadError(R"({
  "agents": {
    "main": {},
    "rarely-used": {
      "tools": {"exec": {"mode": "sometimes"}}
    }
  }
})");
  EXPECT_EQ(message, path_ +
                         ":5:34: agents.rarely-used.tools.exec.mode: expected one of deny, "
                         "allowlist, ask, auto, full, got \"sometimes\"");
}

TEST_F(ConfigTest, AgentsDefaultsIsTheGlobalLevel) {
  Config config = Load(R"({
    "agents": {
      "defaults": {
        "sandbox": {"mode": "off", "docker": {"image": "defaults:img"}},
        "tools": {"exec": {"host": "gateway", "timeoutSeconds": 5}},
        "workspace": "/srv/default"
      },
      "ops": {"tools": {"exec": {"timeoutSeconds": 7}}}
    },
    "tools": {"exec": {"timeoutSeconds": 9}}
  })");
  EXPECT_THAT(config.warnings, IsEmpty());
  EXPECT_EQ(config.global.sandbox.mode, SandboxMode::kOff);
  EXPECT_EQ(config.global.sandbox.docker.image, "defaults:img");
  EXPECT_EQ(config.global.exec.host, "gateway");
  EXPECT_EQ(config.global.exec.timeout_seconds, 9);  // the top level wins over agents.defaults
  EXPECT_EQ(config.global.workspace, "/srv/default");
  EXPECT_EQ(config.ForAgent("main").workspace, "/srv/default");
  AgentSettings ops = config.ForAgent("ops");
  EXPECT_EQ(ops.exec.timeout_seconds, 7);
  EXPECT_EQ(ops.exec.host, "gateway");
  EXPECT_EQ(ops.sandbox.mode, SandboxMode::kOff);
  EXPECT_EQ(config.agents.count("defaults"), 0u);
}

TEST_F(ConfigTest, AgentsListAndEntriesFormsAreAccepted) {
  Config config = Load(R"({
    "agents": {
      "list": [{"id": "ops", "name": "Ops", "tools": {"exec": {"host": "gateway"}}}],
      "entries": {"ci": {"sandbox": {"mode": "off"}}}
    }
  })");
  EXPECT_EQ(config.ForAgent("ops").exec.host, "gateway");
  EXPECT_EQ(config.ForAgent("ci").sandbox.mode, SandboxMode::kOff);
  EXPECT_EQ(config.ForAgent("main").exec.host, "auto");
  ASSERT_EQ(config.warnings.size(), 1u);  // OpenClaw's other agent keys are not ours
  EXPECT_THAT(config.warnings[0], HasSubstr("unknown key agents.list[0].name (ignored)"));
}

TEST_F(ConfigTest, SharedScopeIgnoresAgentDockerAndPruneWithAWarning) {
  Config config = Load(R"({
  "sandbox": {"scope": "shared", "docker": {"image": "shared:img"}},
  "agents": {
    "ops": {
      "sandbox": {"workspaceAccess": "ro", "docker": {"image": "x"}, "prune": {"idleHours": 1}}
    },
    "solo": {
      "sandbox": {"scope": "agent", "docker": {"image": "solo:img"}}
    }
  }
})");
  AgentSettings ops = config.ForAgent("ops");
  EXPECT_EQ(ops.sandbox.docker.image, "shared:img");
  EXPECT_DOUBLE_EQ(ops.sandbox.prune.idle_hours, 24);
  EXPECT_EQ(ops.sandbox.workspace_access, WorkspaceAccess::kRo);  // not a container setting
  EXPECT_EQ(config.ForAgent("solo").sandbox.docker.image, "solo:img");
  ASSERT_EQ(config.warnings.size(), 2u);
  EXPECT_THAT(config.warnings[0],
              StartsWith(path_ + ":5:44: agents.ops.sandbox.docker is ignored"));
  EXPECT_THAT(config.warnings[0], HasSubstr("shared"));
  EXPECT_THAT(config.warnings[1], HasSubstr("agents.ops.sandbox.prune is ignored"));
}

TEST_F(ConfigTest, SharedScopeStillValidatesIgnoredAgentDocker) {
  EXPECT_THAT(LoadError(R"({"sandbox": {"scope": "shared"},
                            "agents": {"ops": {"sandbox": {"docker": {"memory": "lots"}}}}})"),
              HasSubstr("agents.ops.sandbox.docker.memory: expected a byte count"));
}

// ---- Byte sizes. ----

struct ByteSizeCase {
  const char* text;
  int64_t bytes;
};

class ByteSizeTest : public ::testing::TestWithParam<ByteSizeCase> {};

TEST_P(ByteSizeTest, Parses) {
  auto bytes = ParseByteSize(GetParam().text);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(*bytes, GetParam().bytes);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, ByteSizeTest,
    ::testing::Values(ByteSizeCase{"512m", 536870912}, ByteSizeCase{"1g", 1073741824},
                      ByteSizeCase{"1G", 1073741824}, ByteSizeCase{"1gb", 1073741824},
                      ByteSizeCase{"1.5g", 1610612736}, ByteSizeCase{"2k", 2048},
                      ByteSizeCase{"2KB", 2048}, ByteSizeCase{"1t", int64_t{1} << 40},
                      ByteSizeCase{"100", 100}, ByteSizeCase{"100b", 100},
                      ByteSizeCase{" 64m ", 64 << 20}, ByteSizeCase{"0.5k", 512},
                      ByteSizeCase{"0", 0}));

TEST(ByteSize, RejectsMalformedSizes) {
  for (const char* text :
       {"", "bad", "m", "-5m", "1.5x", "1.2.3g", ".5g", "5.g", "1 g", "1e3", "99999999999t"}) {
    EXPECT_FALSE(ParseByteSize(text)) << text;
  }
}

TEST_F(ConfigTest, MemoryAcceptsNumbersAndStrings) {
  Config config = Load(R"({"sandbox": {"docker": {"memory": 1048576, "memorySwap": -1}},
                           "agents": {"a": {"sandbox": {"docker": {"memory": "512m",
                                                                   "memorySwap": "-1"}}},
                                      "b": {"sandbox": {"docker": {"memorySwap": "2g"}}}}})");
  EXPECT_EQ(config.global.sandbox.docker.memory_bytes, 1048576);
  EXPECT_EQ(config.global.sandbox.docker.memory_swap_bytes, -1);
  EXPECT_EQ(config.ForAgent("a").sandbox.docker.memory_bytes, 536870912);
  EXPECT_EQ(config.ForAgent("a").sandbox.docker.memory_swap_bytes, -1);
  EXPECT_EQ(config.ForAgent("b").sandbox.docker.memory_swap_bytes, int64_t{2} << 30);
}

TEST(Settings, EnumNames) {
  EXPECT_STREQ(ToString(SandboxMode::kNonMain), "non-main");
  EXPECT_STREQ(ToString(SandboxScope::kShared), "shared");
  EXPECT_STREQ(ToString(WorkspaceAccess::kRo), "ro");
  EXPECT_STREQ(ToString(Security::kAllowlist), "allowlist");
  EXPECT_STREQ(ToString(Ask::kOnMiss), "on-miss");
  EXPECT_STREQ(ToString(ExecMode::kAuto), "auto");
}

}  // namespace
}  // namespace sandrun::config

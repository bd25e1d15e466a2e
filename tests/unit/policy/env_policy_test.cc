// Env override policy (reference §3.3): the four message shapes, sorting and dedupe, NUL
// values, the sandbox's rules, inherited-env sanitization and the PATH helpers.
#include "runner/policy/env_policy.h"

#include <gtest/gtest.h>

#include <string>

namespace sandrun::policy {
namespace {

struct ViolationRow {
  std::string name;
  EnvMap overrides;
  std::string message;  // "" = accepted
};
class HostEnvTest : public ::testing::TestWithParam<ViolationRow> {};

TEST_P(HostEnvTest, Validates) {
  const ViolationRow& row = GetParam();
  Result<EnvMap> r = ValidateHostEnvOverrides(row.overrides);
  if (row.message.empty()) {
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(*r, row.overrides);
  } else {
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().WireCode(), "security-violation");
    EXPECT_EQ(r.error().message, row.message);
  }
}

const std::string kSV = "Security Violation: ";

INSTANTIATE_TEST_SUITE_P(
    Shapes, HostEnvTest,
    ::testing::Values(
        ViolationRow{"accepted", {{"FOO", "1"}, {"TERM", "xterm"}, {"_x9", "y"}}, ""},
        ViolationRow{"empty", {}, ""},
        // Shape 1: PATH alone.
        ViolationRow{"path_only",
                     {{"PATH", "/x"}},
                     kSV + "Custom 'PATH' variable is forbidden during host execution."},
        ViolationRow{"path_lowercase_is_path",
                     {{"path", "/x"}},
                     kSV + "Custom 'PATH' variable is forbidden during host execution."},
        // Shape 2: exactly one blocked key.
        ViolationRow{"one_blocked",
                     {{"LD_PRELOAD", "/x.so"}, {"FOO", "1"}},
                     kSV + "Environment variable 'LD_PRELOAD' is forbidden during host "
                           "execution."},
        ViolationRow{"one_blocked_upper_cased",
                     {{"node_options", "--x"}},
                     kSV + "Environment variable 'NODE_OPTIONS' is forbidden during host "
                           "execution."},
        ViolationRow{"dedupe_case_variants",
                     {{"ld_preload", "a"}, {"LD_PRELOAD", "b"}},
                     kSV + "Environment variable 'LD_PRELOAD' is forbidden during host "
                           "execution."},
        // Shape 3: PATH among several.
        ViolationRow{"path_among_blocked",
                     {{"PATH", "/x"}, {"LD_PRELOAD", "/x.so"}},
                     kSV + "Custom 'PATH' variable is forbidden during host execution (blocked "
                           "override keys: LD_PRELOAD, PATH)."},
        ViolationRow{"path_with_invalid",
                     {{"PATH", "/x"}, {"BAD-KEY", "1"}},
                     kSV + "Custom 'PATH' variable is forbidden during host execution (blocked "
                           "override keys: PATH; invalid non-portable override keys: BAD-KEY)."},
        ViolationRow{"path_blocked_and_invalid",
                     {{"PATH", "/x"}, {"HOME", "/h"}, {"1X", "1"}},
                     kSV + "Custom 'PATH' variable is forbidden during host execution (blocked "
                           "override keys: HOME, PATH; invalid non-portable override keys: 1X)."},
        // Shape 4: otherwise.
        ViolationRow{"two_blocked",
                     {{"NODE_OPTIONS", "x"}, {"BASH_ENV", "y"}},
                     kSV + "blocked override keys: BASH_ENV, NODE_OPTIONS."},
        ViolationRow{"invalid_only",
                     {{"BAD-KEY", "1"}},
                     kSV + "invalid non-portable override keys: BAD-KEY."},
        ViolationRow{"blocked_and_invalid",
                     {{"NODE_OPTIONS", "x"}, {"1X", "1"}},
                     kSV + "blocked override keys: NODE_OPTIONS; invalid non-portable override "
                           "keys: 1X."},
        ViolationRow{"one_blocked_one_invalid",
                     {{"LD_PRELOAD", "x"}, {"A B", "1"}},
                     kSV + "blocked override keys: LD_PRELOAD; invalid non-portable override "
                           "keys: A B."},
        // localeCompare order: '_' sorts before letters (ASCII would put GITHUB_TOKEN first).
        ViolationRow{"locale_sorted",
                     {{"GITHUB_TOKEN", "t"}, {"GIT_DIR", "d"}, {"GIT_CONFIG_X", "c"}},
                     kSV + "blocked override keys: GIT_CONFIG_X, GIT_DIR, GITHUB_TOKEN."},
        ViolationRow{"invalid_sorted_case",
                     {{"b-key", "1"}, {"A-KEY", "1"}, {"a-key", "1"}},
                     kSV + "invalid non-portable override keys: a-key, A-KEY, b-key."},
        ViolationRow{"invalid_empty_and_equals",
                     {{"", "1"}, {"A=B", "1"}},
                     kSV + "invalid non-portable override keys: , A=B."}),
    [](const ::testing::TestParamInfo<ViolationRow>& row_info) { return row_info.param.name; });

struct KeyRow {
  std::string key;
  bool blocked;
};
class BlockedKeyTest : public ::testing::TestWithParam<KeyRow> {};

TEST_P(BlockedKeyTest, Classifies) {
  EXPECT_EQ(IsDangerousOverrideKey(GetParam().key), GetParam().blocked) << GetParam().key;
}

INSTANTIATE_TEST_SUITE_P(
    Keys, BlockedKeyTest,
    ::testing::Values(KeyRow{"PATH", true}, KeyRow{"LD_PRELOAD", true},
                      KeyRow{"LD_LIBRARY_PATH", true}, KeyRow{"DYLD_INSERT_LIBRARIES", true},
                      KeyRow{"BASH_FUNC_FOO", true}, KeyRow{"NODE_OPTIONS", true},
                      KeyRow{"PYTHONPATH", true}, KeyRow{"BASH_ENV", true}, KeyRow{"ENV", true},
                      KeyRow{"SHELL", true}, KeyRow{"IFS", true}, KeyRow{"GLIBC_TUNABLES", true},
                      KeyRow{"LUA_INIT_5_3", true}, KeyRow{"HOSTALIASES", true},
                      KeyRow{"GIT_CONFIG_COUNT", true}, KeyRow{"NPM_CONFIG_REGISTRY", true},
                      KeyRow{"CARGO_REGISTRIES_X_INDEX", true}, KeyRow{"TF_VAR_token", true},
                      KeyRow{"HOME", true}, KeyRow{"ZDOTDIR", true}, KeyRow{"HTTP_PROXY", true},
                      KeyRow{"HTTPS_PROXY", true}, KeyRow{"GIT_SSH_COMMAND", true},
                      KeyRow{"AWS_SECRET_ACCESS_KEY", true}, KeyRow{"PIP_INDEX_URL", true},
                      KeyRow{"SSL_CERT_FILE", true}, KeyRow{"DOCKER_HOST", true},
                      KeyRow{"KUBECONFIG", true}, KeyRow{"SSH_AUTH_SOCK", true},
                      KeyRow{"TAR_OPTIONS", true}, KeyRow{"ZIPOPT", true},
                      KeyRow{"RSYNC_RSH", true}, KeyRow{"WGETRC", true}, KeyRow{"LESS", true},
                      KeyRow{"TERM", false}, KeyRow{"LANG", false}, KeyRow{"LC_ALL", false},
                      KeyRow{"FOO", false}, KeyRow{"CI", false}, KeyRow{"NODE_ENV", false},
                      KeyRow{"DEBUG", false}, KeyRow{"LDX", false}, KeyRow{"PATHX", false}),
    [](const ::testing::TestParamInfo<KeyRow>& row_info) { return row_info.param.key; });

TEST(EnvNul, RefusedEverywhere) {
  EnvMap env = {{"A", "ok"}, {"FOO", std::string("a\0b", 3)}};
  const std::string want = "Security Violation: Environment variable 'FOO' contains a NUL byte.";
  Result<EnvMap> host = ValidateHostEnvOverrides(env);
  ASSERT_FALSE(host.has_value());
  EXPECT_EQ(host.error().message, want);
  Result<EnvMap> sandbox = ValidateSandboxEnvOverrides(env);
  ASSERT_FALSE(sandbox.has_value());
  EXPECT_EQ(sandbox.error().WireCode(), "security-violation");
  EXPECT_EQ(sandbox.error().message, want);
  EXPECT_FALSE(CheckEnvNul({{"A", "b"}}).has_value());
}

TEST(SandboxEnv, NoBlockingButKeysMustBePortable) {
  EnvMap env = {{"PATH", "/x"}, {"LD_PRELOAD", "/y"}, {"HOME", "/h"}, {"NODE_OPTIONS", "z"}};
  Result<EnvMap> ok = ValidateSandboxEnvOverrides(env);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, env);
  Result<EnvMap> bad = ValidateSandboxEnvOverrides({{"BAD-KEY", "1"}, {"ALSO BAD", "2"}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message,
            "Security Violation: invalid non-portable override keys: ALSO BAD, BAD-KEY.");
}

TEST(PortableKey, Regex) {
  EXPECT_TRUE(IsPortableEnvKey("A"));
  EXPECT_TRUE(IsPortableEnvKey("_"));
  EXPECT_TRUE(IsPortableEnvKey("a_B9"));
  EXPECT_FALSE(IsPortableEnvKey(""));
  EXPECT_FALSE(IsPortableEnvKey("9A"));
  EXPECT_FALSE(IsPortableEnvKey("A-B"));
  EXPECT_FALSE(IsPortableEnvKey("A.B"));
  EXPECT_FALSE(IsPortableEnvKey("A()"));
  EXPECT_FALSE(IsPortableEnvKey("\xc3\xa9"));
}

TEST(InheritedEnv, DropsDangerousKeysKeepsTheOperatorsOwn) {
  EnvMap host = {
      {"HOME", "/home/u"},     {"PATH", "/usr/bin"},        {"HTTP_PROXY", "http://p"},
      {"SSH_AUTH_SOCK", "/s"}, {"AWS_REGION", "eu-west-1"}, {"GIT_CONFIG_GLOBAL", "/g"},
      {"LD_PRELOAD", "/x.so"}, {"DYLD_LIBRARY_PATH", "/d"}, {"NODE_OPTIONS", "--x"},
      {"SHELL", "/bin/bash"},  {"BASH_ENV", "/e"},          {"BASH_FUNC_ls%%", "() { :; }"},
      {"BAD-KEY", "1"}};
  EXPECT_EQ(SanitizeInheritedEnv(host), (EnvMap{{"AWS_REGION", "eu-west-1"},
                                                {"GIT_CONFIG_GLOBAL", "/g"},
                                                {"HOME", "/home/u"},
                                                {"HTTP_PROXY", "http://p"},
                                                {"PATH", "/usr/bin"},
                                                {"SSH_AUTH_SOCK", "/s"}}));
}

TEST(LocaleLess, Order) {
  EXPECT_TRUE(LocaleLess("A_B", "AB"));
  EXPECT_TRUE(LocaleLess("A1", "AA"));
  EXPECT_TRUE(LocaleLess("a", "A"));
  EXPECT_TRUE(LocaleLess("A", "b"));
  EXPECT_TRUE(LocaleLess("AB", "ABC"));
  EXPECT_FALSE(LocaleLess("ABC", "ABC"));
  EXPECT_TRUE(LocaleLess("-", "_") == false);  // '_' sorts before '-' in CLDR root
}

TEST(PathList, SplitJoinDedupe) {
  EXPECT_EQ(SplitPathList("/a::/b:"), (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(SplitPathList(""), std::vector<std::string>{});
  EXPECT_EQ(JoinPathList({"/a", "/b"}), "/a:/b");
  EXPECT_EQ(DedupePathEntries({"/a", "/b", "/a", "", "/c", "/b"}),
            (std::vector<std::string>{"/a", "/b", "/c"}));
}

TEST(PathList, NormalizePrepend) {
  EXPECT_EQ(
      NormalizePathPrepend({" ~/bin ", "/opt/oss/bin", "", "/opt/oss/bin", "a:b", "~"}, "/home/u"),
      (std::vector<std::string>{"/home/u/bin", "/opt/oss/bin", "a", "b", "/home/u"}));
  EXPECT_EQ(NormalizePathPrepend({"~/bin", "~user/bin"}, ""),
            (std::vector<std::string>{"~/bin", "~user/bin"}));
}

struct MergeRow {
  std::string name;
  std::string login;
  std::optional<std::string> base;
  std::vector<std::string> prepend;
  std::string want;
};
class MergePathTest : public ::testing::TestWithParam<MergeRow> {};

TEST_P(MergePathTest, Merges) {
  EXPECT_EQ(MergeGatewayPath(GetParam().login, GetParam().base, GetParam().prepend),
            GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Rows, MergePathTest,
    ::testing::Values(MergeRow{"base_only", "", "/usr/bin:/bin", {}, "/usr/bin:/bin"},
                      MergeRow{"unset_base", "", std::nullopt, {}, "/usr/local/bin:/usr/bin:/bin"},
                      MergeRow{"empty_base", "", "", {}, "/usr/local/bin:/usr/bin:/bin"},
                      MergeRow{"login_first",
                               "/opt/login/bin:/usr/bin",
                               "/usr/bin:/bin",
                               {},
                               "/opt/login/bin:/usr/bin:/bin"},
                      MergeRow{"prepend_last_applied_first",
                               "/opt/login/bin:/usr/bin",
                               "/usr/bin:/bin",
                               {"/x", "/usr/bin"},
                               "/x:/usr/bin:/opt/login/bin:/bin"},
                      MergeRow{"dedupe_everything", "/a:/a", "/b:/a:/b", {"/b"}, "/b:/a"}),
    [](const ::testing::TestParamInfo<MergeRow>& row_info) { return row_info.param.name; });

}  // namespace
}  // namespace sandrun::policy

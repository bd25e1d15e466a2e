// The inherited-secrets strip list (profiles/env): pattern matching, the loader's refusals, and
// the shipped default against the variables a runner typically holds.
#include "runner/policy/env_strip.h"

#include <gtest/gtest.h>

#include "sandbox/harden/profile_file.h"

namespace sandrun::policy {
namespace {

struct MatchCase {
  const char* pattern;
  const char* key;
  bool matches;
};

class EnvPatternTest : public ::testing::TestWithParam<MatchCase> {};

TEST_P(EnvPatternTest, Matches) {
  EXPECT_EQ(EnvPatternMatches(GetParam().pattern, GetParam().key), GetParam().matches)
      << GetParam().pattern << " vs " << GetParam().key;
}

INSTANTIATE_TEST_SUITE_P(
    Table, EnvPatternTest,
    ::testing::Values(
        MatchCase{"GITHUB_TOKEN", "GITHUB_TOKEN", true},
        MatchCase{"GITHUB_TOKEN", "github_token", true},
        MatchCase{"GITHUB_TOKEN", "GITHUB_TOKENS", false}, MatchCase{"*TOKEN", "NPM_TOKEN", true},
        MatchCase{"*TOKEN", "TOKEN", true}, MatchCase{"*TOKEN", "TOKENIZER", false},
        MatchCase{"*TOKEN_*", "ACTIONS_ID_TOKEN_REQUEST_URL", true},
        MatchCase{"AWS_*", "AWS_", true}, MatchCase{"AWS_*", "AWS", false},
        MatchCase{"AWS_*", "XAWS_KEY", false}, MatchCase{"*PASSWORD*", "DB_PASSWORD_FILE", true},
        MatchCase{"MONGO*_URL", "MONGODB_URL", true}, MatchCase{"MONGO*_URL", "MONGO_URL", true},
        MatchCase{"MONGO*_URL", "MONGODB_URI", false}, MatchCase{"*_KEY", "PATH", false},
        MatchCase{"A*B*C", "AXXBYYC", true}, MatchCase{"A*B*C", "AXXBYY", false},
        MatchCase{"**X", "X", true}));

TEST(EnvStripTest, UrlsWithPasswordsAreSecretsWhateverTheirName) {
  EXPECT_TRUE(ValueHoldsUrlCredentials("http://u:pw@proxy:3128"));
  EXPECT_TRUE(ValueHoldsUrlCredentials("https://h/simple https://u:p@mirror/simple"));
  EXPECT_TRUE(ValueHoldsUrlCredentials("postgres://app:s3cret@db/app"));
  EXPECT_FALSE(ValueHoldsUrlCredentials("http://proxy:3128"));
  EXPECT_FALSE(ValueHoldsUrlCredentials("git@github.com:x/y"));
  EXPECT_FALSE(ValueHoldsUrlCredentials("https://h/path/user:x@y"));
  EXPECT_FALSE(ValueHoldsUrlCredentials("ssh://git@host/repo"));
  auto out = StripInheritedSecrets({{"HTTPS_PROXY", "http://u:pw@proxy:3128"},
                                    {"PIP_INDEX_URL", "https://h/simple"},
                                    {"MY_URL", "https://u:p@h/"}},
                                   {}, {"MY_URL"});
  EXPECT_EQ(out, (std::map<std::string, std::string>{{"MY_URL", "https://u:p@h/"},
                                                     {"PIP_INDEX_URL", "https://h/simple"}}));
}

TEST(EnvStripTest, PassThroughWinsOverStrip) {
  std::map<std::string, std::string> env = {
      {"GITHUB_TOKEN", "g"}, {"NPM_TOKEN", "n"}, {"HOME", "/root"}, {"PATH", "/bin"}};
  auto out = StripInheritedSecrets(env, {"*TOKEN"}, {"npm_token"});
  EXPECT_EQ(out, (std::map<std::string, std::string>{
                     {"HOME", "/root"}, {"NPM_TOKEN", "n"}, {"PATH", "/bin"}}));
}

// The shipped list removes what the issue names, and leaves what builds need.
TEST(EnvStripTest, DefaultProfileStripsTheRunnersSecretsAndKeepsTheRest) {
  auto profile = LoadEnvStripProfile(harden::DefaultProfilesDir());
  ASSERT_TRUE(profile) << profile.error().ToString();
  std::map<std::string, std::string> env;
  const std::vector<std::string> secrets = {"GITHUB_TOKEN",
                                            "GH_TOKEN",
                                            "OPENAI_API_KEY",
                                            "ANTHROPIC_API_KEY",
                                            "AWS_ACCESS_KEY_ID",
                                            "AWS_SECRET_ACCESS_KEY",
                                            "AWS_SESSION_TOKEN",
                                            "DATABASE_URL",
                                            "NPM_TOKEN",
                                            "NODE_AUTH_TOKEN",
                                            "DOCKER_HOST",
                                            "DOCKER_CONFIG",
                                            "SANDRUN_HOME",
                                            "SANDRUN_PROFILES_DIR",
                                            "SSH_AUTH_SOCK",
                                            "CI_JOB_TOKEN",
                                            "ACTIONS_RUNTIME_TOKEN",
                                            "PGPASSWORD",
                                            "VAULT_TOKEN",
                                            "GOOGLE_APPLICATION_CREDENTIALS",
                                            "KUBECONFIG",
                                            "SLACK_WEBHOOK_URL",
                                            "HF_TOKEN",
                                            "STRIPE_SECRET_KEY",
                                            "MY_SERVICE_PASSWORD"};
  const std::vector<std::string> kept = {"PATH",       "HOME",      "LANG",   "TERM",
                                         "GITHUB_SHA", "CI_JOB_ID", "USER",   "SHELL",
                                         "PWD",        "OLDPWD",    "LC_ALL", "CC"};
  for (const auto& k : secrets) env[k] = "x";
  for (const auto& k : kept) env[k] = "x";
  auto out = StripInheritedSecrets(env, profile->strip, {});
  for (const auto& k : secrets) EXPECT_EQ(out.count(k), 0u) << k << " was inherited";
  for (const auto& k : kept) EXPECT_EQ(out.count(k), 1u) << k << " was stripped";
}

struct BadProfile {
  const char* label;
  const char* text;
  const char* expected;
};

class EnvStripProfileBadTest : public ::testing::TestWithParam<BadProfile> {};

TEST_P(EnvStripProfileBadTest, IsRefusedWithKeyAndReason) {
  auto p = ParseEnvStripProfile(GetParam().text, "/p/env/t.json", "t");
  ASSERT_FALSE(p) << GetParam().label;
  EXPECT_NE(p.error().message.find(GetParam().expected), std::string::npos) << p.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, EnvStripProfileBadTest,
    ::testing::Values(
        BadProfile{"no strip", R"({"name": "t", "description": "d"})", "strip: required"},
        BadProfile{"not array", R"({"name": "t", "description": "d", "strip": "X"})",
                   "strip: expected an array"},
        BadProfile{"lone star", R"({"name": "t", "description": "d", "strip": ["*"]})",
                   "strip[0]: \"*\" is not a variable name pattern"},
        BadProfile{"empty", R"({"name": "t", "description": "d", "strip": ["A", ""]})",
                   "strip[1]:"},
        BadProfile{"bad char", R"({"name": "t", "description": "d", "strip": ["A-B"]})",
                   "strip[0]: \"A-B\" is not a variable name pattern"},
        BadProfile{"unknown key", R"({"name": "t", "description": "d", "strip": [], "keep": []})",
                   "keep: unknown key"}));

}  // namespace
}  // namespace sandrun::policy

// Tests of the API token store: create/revoke through the state-file writer, strict parsing,
// authentication (missing, invalid, revoked, expired), agent globs and durations.
#include "runner/auth/tokens.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace sandrun::auth {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

constexpr int64_t kNow = 1790000000000;

class TokensTest : public ::testing::Test {
 protected:
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void Write(const std::string& text, mode_t mode = 0600) {
    std::ofstream(path_, std::ios::binary) << text;
    ::chmod(path_.c_str(), mode);
  }
  NewToken Create(TokenSpec spec) {
    auto t = CreateToken(path_, spec, kNow);
    EXPECT_TRUE(t) << t.error().ToString();
    return t ? *t : NewToken{};
  }
  TokensFile Load() {
    auto f = LoadTokens(path_);
    EXPECT_TRUE(f) << f.error().ToString();
    return f ? *f : TokensFile{};
  }

  sandrun::testing::TempDir tmp_{"tokens-test"};
  std::string root_ = tmp_.path();
  std::string path_ = TokensPath(root_);
};

TEST_F(TokensTest, CreatePrintsASecretAndStoresOnlyItsDigest) {
  NewToken t = Create({"acme", Role::kAgent, "ci-bot", {"main", "build-*"}, 0});
  EXPECT_THAT(t.secret, MatchesRegex("sandrun_[0-9a-f]{64}"));
  std::string text = Read(path_);
  EXPECT_THAT(text, Not(HasSubstr(t.secret)));
  EXPECT_THAT(text, Not(HasSubstr(t.secret.substr(8, 16))));
  EXPECT_THAT(text, HasSubstr("\"sha256\": \"" + t.token.sha256 + "\""));
  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  TokensFile file = Load();
  ASSERT_EQ(file.tokens.size(), 1u);
  EXPECT_EQ(file.tokens[0], t.token);
  auto who = Authenticate(file, t.secret, kNow);
  ASSERT_TRUE(who) << who.error().ToString();
  EXPECT_EQ(who->token_name, "ci-bot");
  EXPECT_EQ(who->tenant, "acme");
  EXPECT_EQ(who->role, Role::kAgent);
  EXPECT_TRUE(AgentAllowed(*who, "main"));
  EXPECT_TRUE(AgentAllowed(*who, "build-7"));
  EXPECT_FALSE(AgentAllowed(*who, "deploy"));
  EXPECT_FALSE(AgentAllowed(*who, "mainx"));
}

TEST_F(TokensTest, TwoTokensAuthenticateAsThemselves) {
  NewToken a = Create({"acme", Role::kAgent, "a", {}, 0});
  NewToken b = Create({"globex", Role::kOperator, "b", {}, 0});
  EXPECT_NE(a.secret, b.secret);
  TokensFile file = Load();
  EXPECT_EQ(Authenticate(file, a.secret, kNow)->tenant, "acme");
  EXPECT_EQ(Authenticate(file, b.secret, kNow)->tenant, "globex");
  EXPECT_EQ(Authenticate(file, b.secret, kNow)->role, Role::kOperator);
  EXPECT_EQ(Authenticate(file, a.secret, kNow)->agents, std::vector<std::string>{"*"});
}

TEST_F(TokensTest, MissingInvalidRevokedAndExpiredAreUnauthorized) {
  NewToken t = Create({"acme", Role::kAgent, "short", {}, 60000});
  TokensFile file = Load();
  auto wire = [&](std::string_view secret, int64_t now) {
    auto r = Authenticate(file, secret, now);
    EXPECT_FALSE(r);
    if (r) return std::string("ok");
    EXPECT_EQ(r.error().WireCode(), "unauthorized");
    EXPECT_EQ(r.error().http_status, 401);
    return r.error().message;
  };
  EXPECT_EQ(wire("", kNow), "missing token");
  EXPECT_EQ(wire("sandrun_" + std::string(64, '0'), kNow), "invalid token");
  EXPECT_EQ(wire(t.secret.substr(0, t.secret.size() - 1), kNow), "invalid token");
  EXPECT_EQ(wire(t.secret + "0", kNow), "invalid token");
  std::string flipped = t.secret;
  flipped.back() = flipped.back() == 'a' ? 'b' : 'a';
  EXPECT_EQ(wire(flipped, kNow), "invalid token");
  EXPECT_EQ(wire(t.token.sha256, kNow), "invalid token") << "the digest is not a secret";
  EXPECT_TRUE(Authenticate(file, t.secret, kNow + 59999));
  EXPECT_EQ(wire(t.secret, kNow + 60000), "token expired");

  auto revoked = RevokeToken(path_, "short", kNow + 5);
  ASSERT_TRUE(revoked) << revoked.error().ToString();
  EXPECT_EQ(revoked->revoked_ms, kNow + 5);
  file = Load();
  EXPECT_EQ(wire(t.secret, kNow + 10), "token revoked");
  // A second revoke keeps the first time; an unknown name is not found and writes nothing.
  EXPECT_EQ(RevokeToken(path_, "short", kNow + 99)->revoked_ms, kNow + 5);
  std::string before = Read(path_);
  auto unknown = RevokeToken(path_, "nope", kNow);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(Read(path_), before);
}

TEST_F(TokensTest, BadSpecsAreRefusedAndWriteNothing) {
  Create({"acme", Role::kAgent, "taken", {}, 0});
  std::string before = Read(path_);
  struct Case {
    TokenSpec spec;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"", Role::kAgent, "x1", {}, 0}, "needs --tenant"},
      {{"", Role::kOperator, "x2", {}, 0}, "needs --tenant"},
      {{"Acme", Role::kAgent, "x3", {}, 0}, "Acme"},
      {{"acme/../x", Role::kAgent, "x4", {}, 0}, "acme/../x"},
      {{std::string(33, 'a'), Role::kAgent, "x5", {}, 0}, "aaaa"},
      {{"acme", Role::kAgent, "Bad Name", {}, 0}, "invalid token name"},
      {{"acme", Role::kAgent, std::string(65, 'n'), {}, 0}, "invalid token name"},
      {{"acme", Role::kAgent, "x6", {"ma in"}, 0}, "invalid agent glob"},
      {{"acme", Role::kAgent, "x7", {"../x"}, 0}, "invalid agent glob"},
      {{"acme", Role::kAgent, "x8", {""}, 0}, "invalid agent glob"},
      {{"acme", Role::kAgent, "x9", {}, -1}, "negative"},
      {{"acme", Role::kAgent, "taken", {}, 0}, "exists already"},
  };
  for (const Case& c : cases) {
    auto r = CreateToken(path_, c.spec, kNow);
    ASSERT_FALSE(r) << c.spec.name;
    EXPECT_THAT(r.error().message, HasSubstr(c.message)) << c.spec.name;
  }
  EXPECT_EQ(Read(path_), before);
  // An admin token may be of the local tenant "".
  NewToken admin = Create({"", Role::kAdmin, "root", {}, 0});
  EXPECT_EQ(admin.token.tenant, "");
}

TEST_F(TokensTest, DefaultNamesAreRandomAndDistinct) {
  NewToken a = Create({"acme", Role::kAgent, "", {}, 0});
  NewToken b = Create({"acme", Role::kAgent, "", {}, 0});
  EXPECT_THAT(a.token.name, MatchesRegex("tok-[0-9a-f]{8}"));
  EXPECT_NE(a.token.name, b.token.name);
}

TEST_F(TokensTest, ParsingIsStrict) {
  const std::string digest(64, 'a');
  auto token = [&](const std::string& extra) {
    return R"({"version": 1, "tokens": [{"name": "n", "tenant": "acme", "role": "agent", )"
           R"("agents": ["*"], "sha256": ")" +
           digest + "\"" + extra + "}]}";
  };
  EXPECT_TRUE(ParseTokens(token(""), "t.json", nullptr));
  struct Case {
    std::string text;
    std::string message;
  };
  std::vector<Case> cases = {
      {R"({"tokens": []})", "version"},
      {R"({"version": 2, "tokens": []})", "version"},
      {R"({"version": 1, "tokens": {}})", "expected an array"},
      {R"({"version": 1, "tokens": [], "extra": 1})", "unknown key"},
      {token(R"(, "scopes": ["all"])"), "unknown key"},
      {token(R"(, "expiresAt": -5)"), "non-negative"},
      {token(R"(, "expiresAt": "soon")"), "non-negative"},
      {R"({"version": 1, "tokens": [{"name": "n", "tenant": "acme", "role": "root", )"
       R"("agents": ["*"], "sha256": ")" +
           digest + "\"}]}",
       "agent, operator or admin"},
      {R"({"version": 1, "tokens": [{"name": "n", "tenant": "acme", "role": "agent", )"
       R"("agents": ["*"], "sha256": "ABC"}]})",
       "64 lowercase hex"},
      {R"({"version": 1, "tokens": [{"name": "n", "tenant": "acme", "role": "agent", )"
       R"("sha256": ")" +
           digest + "\"}]}",
       "needs name, role, agents and sha256"},
      {R"({"version": 1, "tokens": [{"name": "n", "tenant": "", "role": "agent", )"
       R"("agents": ["*"], "sha256": ")" +
           digest + "\"}]}",
       "needs --tenant"},
      {R"({"version": 1, "tokens": [{"name": "n", "tenant": "acme", "role": "agent", )"
       R"("agents": [], "sha256": ")" +
           digest + "\"}]}",
       "1 to 64"},
      {R"({"version": 1, "tokens": [{"name": "n", "tenant": "acme", "role": "agent", "agents": )"
       R"(["*"], "sha256": ")" +
           digest +
           R"("}, {"name": "n", "tenant": "acme", "role": "agent", "agents": ["*"], )"
           R"("sha256": ")" +
           std::string(64, 'b') + "\"}]}",
       "duplicate name"},
      {R"({"version": 1, "tokens": [{"name": "n", "tenant": "acme", "role": "agent", "agents": )"
       R"(["*"], "sha256": ")" +
           digest +
           R"("}, {"name": "m", "tenant": "acme", "role": "agent", "agents": ["*"], )"
           R"("sha256": ")" +
           digest + "\"}]}",
       "duplicate sha256"},
  };
  for (const Case& c : cases) {
    auto r = ParseTokens(c.text, "t.json", nullptr);
    ASSERT_FALSE(r) << c.text;
    EXPECT_THAT(r.error().message, HasSubstr(c.message)) << c.text;
    EXPECT_THAT(r.error().message, HasSubstr("t.json:")) << "positions: " << c.text;
  }
}

TEST_F(TokensTest, ACorruptFileIsMovedAsideAndAuthenticatesNobody) {
  Write("{\"version\": 1, \"tokens\": [");
  auto r = LoadTokens(path_);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr(".corrupt-"));
  bool aside = false;
  for (const auto& e : std::filesystem::directory_iterator(root_)) {
    aside = aside || e.path().filename().string().starts_with("tokens.json.corrupt-");
  }
  EXPECT_TRUE(aside);
}

TEST_F(TokensTest, SymlinkedAndForeignWritableFilesAreRefused) {
  NewToken t = Create({"acme", Role::kAgent, "a", {}, 0});
  std::string real = root_ + "/real.json";
  std::filesystem::rename(path_, real);
  std::filesystem::create_symlink(real, path_);
  auto linked = LoadTokens(path_);
  ASSERT_FALSE(linked);
  EXPECT_THAT(linked.error().message, HasSubstr("symlink"));
  auto create = CreateToken(path_, {"acme", Role::kAgent, "b", {}, 0}, kNow);
  ASSERT_FALSE(create);
  std::filesystem::remove(path_);
  std::filesystem::rename(real, path_);
  ::chmod(path_.c_str(), 0666);
  auto writable = LoadTokens(path_);
  ASSERT_FALSE(writable) << "a tokens file others can write grants whatever they write";
}

TEST(AgentGlob, Matches) {
  EXPECT_TRUE(AgentGlobMatch("*", "anything"));
  EXPECT_TRUE(AgentGlobMatch("main", "main"));
  EXPECT_FALSE(AgentGlobMatch("main", "Main"));
  EXPECT_TRUE(AgentGlobMatch("build-*", "build-"));
  EXPECT_TRUE(AgentGlobMatch("build-*", "build-12"));
  EXPECT_FALSE(AgentGlobMatch("build-*", "xbuild-12"));
  EXPECT_TRUE(AgentGlobMatch("a?c", "abc"));
  EXPECT_FALSE(AgentGlobMatch("a?c", "ac"));
  EXPECT_TRUE(AgentGlobMatch("*-ci-*", "acme-ci-7"));
  EXPECT_FALSE(AgentGlobMatch("*-ci-*", "acme-ci"));
  EXPECT_TRUE(AgentGlobMatch("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(AgentGlobMatch("a*b*c", "aXXbYY"));
}

}  // namespace
}  // namespace sandrun::auth

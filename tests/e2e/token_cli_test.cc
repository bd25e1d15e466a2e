// `sandrun token create | list | revoke` through the binary: the secret is printed once, alone on
// stdout, and is nowhere on disk or in a listing; bad input is refused (exit 2) and changes
// nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

class TokenCli : public SandrunHome {
 protected:
  std::string TokensFile() const { return ReadFileOr(home_ + "/tokens.json"); }
  static std::string ReadFileOr(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

TEST_F(TokenCli, CreatePrintsTheSecretOnceAndNowhereElse) {
  auto r = Sandrun({"token", "create", "--tenant", "acme", "--role", "agent", "--name", "ci",
                    "--agents", "main,build-*", "--expires", "7d"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, MatchesRegex("sandrun_[0-9a-f]{64}\n")) << "the secret alone on one line";
  const std::string secret = r.out.substr(0, r.out.size() - 1);
  EXPECT_THAT(r.err, HasSubstr("created token ci (tenant \"acme\", role agent"));
  EXPECT_THAT(r.err, Not(HasSubstr(secret)));

  std::string file = TokensFile();
  EXPECT_THAT(file, HasSubstr("\"name\": \"ci\""));
  EXPECT_THAT(file, Not(HasSubstr(secret.substr(8))));
  struct stat st {};
  ASSERT_EQ(::stat((home_ + "/tokens.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto list = Sandrun({"token", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("ci"));
  EXPECT_THAT(list.out, HasSubstr("active"));
  EXPECT_THAT(list.out, HasSubstr("main,build-*"));
  auto json = Sandrun({"token", "list", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  for (const std::string& out : {list.out, json.out}) {
    EXPECT_THAT(out, Not(HasSubstr(secret.substr(8, 16))));
    EXPECT_THAT(out, Not(HasSubstr("sha256"))) << "not even the digest";
  }
  auto doc = ParseJson(json.out);
  ASSERT_TRUE(doc) << json.out;
  EXPECT_EQ(JsonString((*doc)["tokens"][0], "status"), "active");
}

TEST_F(TokenCli, RevokeKeepsTheNameTaken) {
  ASSERT_EQ(Sandrun({"token", "create", "--tenant", "acme", "--role", "operator", "--name", "op"})
                .exit_code,
            0);
  auto revoked = Sandrun({"token", "revoke", "op"});
  ASSERT_EQ(revoked.exit_code, 0) << revoked.err;
  auto json = Sandrun({"token", "list", "--json"});
  auto doc = ParseJson(json.out);
  ASSERT_TRUE(doc) << json.out;
  EXPECT_EQ(JsonString((*doc)["tokens"][0], "status"), "revoked");
  auto again = Sandrun({"token", "create", "--tenant", "acme", "--role", "agent", "--name", "op"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.err, HasSubstr("exists already"));
  EXPECT_EQ(again.out, "") << "no secret for a refused create";
}

TEST_F(TokenCli, BadInputIsRefusedAndChangesNothing) {
  ASSERT_EQ(
      Sandrun({"token", "create", "--tenant", "acme", "--role", "agent", "--name", "a"}).exit_code,
      0);
  const std::string before = TokensFile();
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"token", "create", "--role", "agent"}, "needs --tenant"},
      {{"token", "create", "--tenant", "acme", "--role", "root"}, "expected agent, operator"},
      {{"token", "create", "--tenant", "ACME", "--role", "agent"}, "ACME"},
      {{"token", "create", "--tenant", "acme", "--role", "agent", "--agents", "a b"},
       "invalid agent glob"},
      {{"token", "create", "--tenant", "acme", "--role", "agent", "--expires", "soon"},
       "invalid duration"},
      {{"token", "create", "--tenant", "acme", "--role", "agent", "--name", "../x"},
       "invalid token name"},
      {{"token", "create", "--tenant", "acme"}, "--role is required"},
      {{"token", "revoke", "nobody"}, "no token named nobody"},
  };
  for (const Case& c : cases) {
    auto r = Sandrun(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args.back() << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.args.back();
    EXPECT_EQ(r.out, "") << c.args.back();
  }
  EXPECT_EQ(TokensFile(), before);
}

}  // namespace
}  // namespace sandrun::testing

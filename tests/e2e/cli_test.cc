// The sandrun binary as a user runs it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "sandbox/base/json.h"
#include "tests/support/docker_env.h"
#include "tests/support/process.h"

namespace sandrun::testing {
namespace {

TEST(CliTest, VersionPrintsTheVersion) {
  auto r = RunSandrun({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string("sandrun ") + SANDRUN_VERSION + "\n");
}

TEST(CliTest, HelpListsTheSubcommands) {
  auto r = RunSandrun({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("doctor"), std::string::npos);
  EXPECT_NE(r.out.find("image"), std::string::npos);
  EXPECT_NE(r.out.find("--workspace"), std::string::npos);
}

TEST(CliTest, UnknownSubcommandOrNoneIsAUsageError) {
  auto unknown = RunSandrun({"frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_FALSE(unknown.err.empty());
  auto none = RunSandrun({});
  EXPECT_EQ(none.exit_code, 2);
  auto bad_flag = RunSandrun({"doctor", "--no-such-flag"});
  EXPECT_EQ(bad_flag.exit_code, 2);
}

TEST(CliTest, ImageBuildRefusesUnknownRecipes) {
  auto r = RunSandrun({"image", "build", "../../etc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("invalid image recipe name"), std::string::npos) << r.err;
  auto missing = RunSandrun({"image", "build", "nonesuch"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no image recipe"), std::string::npos) << missing.err;
  EXPECT_TRUE(missing.out.empty());
}

TEST(CliDoctorTest, PassesWithTheEngineUpAndImagesBuilt) {
  SANDRUN_REQUIRE_DOCKER(client);
  auto r = RunSandrun({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("all required checks passed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sandrun-sandbox:minimal"), std::string::npos);
  EXPECT_NE(r.out.find("sandrun-sandbox:bookworm"), std::string::npos);
  EXPECT_NE(r.out.find("using 1."), std::string::npos) << "names the API version";
}

TEST(CliDoctorTest, JsonReportIsOneObject) {
  SANDRUN_REQUIRE_DOCKER(client);
  auto r = RunSandrun({"doctor", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  auto doc = ParseJson(r.out);
  ASSERT_TRUE(doc) << doc.error().ToString();
  EXPECT_TRUE(JsonBool(*doc, "ok"));
  const auto* checks = JsonMember(*doc, "checks");
  ASSERT_TRUE(checks && checks->IsArray());
  std::set<std::string> names;
  for (const auto& c : checks->GetArray()) names.insert(JsonString(c, "name"));
  EXPECT_EQ(names, (std::set<std::string>{"state-dir", "engine", "api-version", "exec-wrapper",
                                          "image", "seccomp", "confine", "mounts", "scratch",
                                          "process-tree", "profiles", "images", "profile"}));
  for (const auto& c : checks->GetArray()) {
    if (JsonString(c, "name") == "profiles") {  // a build-tree binary reads the source tree's
      EXPECT_EQ(JsonString(c, "detail"), std::string(SANDRUN_SOURCE_DIR) +
                                             "/profiles (the source tree " SANDRUN_SOURCE_DIR ")");
    }
    if (JsonString(c, "name") == "exec-wrapper") {
      EXPECT_EQ(JsonString(c, "status"), "ok")
          << "the build puts sandrun-exec next to sandrun: " << ToJson(c);
    }
  }
}

TEST(CliDoctorTest, ABinaryWithoutItsExecWrapperIsAWarning) {
  SANDRUN_REQUIRE_DOCKER(client);
  char templ[] = "/tmp/sandrun-nowrapper-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  const std::string copy = std::string(templ) + "/sandrun";
  std::filesystem::copy_file(SANDRUN_BINARY, copy);
  auto r = RunProcess({copy, "doctor", "--json"}, {{"PATH", "/usr/bin:/bin"}});
  std::filesystem::remove_all(templ);
  auto doc = ParseJson(r.out);
  ASSERT_TRUE(doc) << r.out << r.err;
  bool seen = false;
  for (const auto& c : (*doc)["checks"].GetArray()) {
    if (JsonString(c, "name") != "exec-wrapper") continue;
    seen = true;
    EXPECT_EQ(JsonString(c, "status"), "warn") << ToJson(c);
    EXPECT_NE(JsonString(c, "detail").find("128+N"), std::string::npos) << ToJson(c);
  }
  EXPECT_TRUE(seen) << r.out;
}

TEST(CliDoctorTest, UnreachableEngineFailsWithinFiveSeconds) {
  auto r = RunSandrun({"doctor"}, {{"DOCKER_HOST", "unix:///tmp/sandrun-nothing-listens.sock"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_LT(r.seconds, 5.0);
  EXPECT_NE(r.out.find("FAIL  engine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cannot reach the Docker engine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fix:"), std::string::npos);
}

TEST(CliDoctorTest, UnroutableTcpEngineAlsoFailsWithinFiveSeconds) {
  // A listening socket that never answers would hang a naive client; a refused port must not.
  auto r = RunSandrun({"doctor", "--json"}, {{"DOCKER_HOST", "tcp://127.0.0.1:1"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_LT(r.seconds, 5.0);
  auto doc = ParseJson(r.out);
  ASSERT_TRUE(doc);
  EXPECT_FALSE(JsonBool(*doc, "ok", true));
}

TEST(CliDoctorTest, BadDockerHostIsNamed) {
  auto r = RunSandrun({"doctor"}, {{"DOCKER_HOST", "ssh://someone@somewhere"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("DOCKER_HOST"), std::string::npos) << r.out;
}

TEST(CliDoctorTest, InsecureStateDirFails) {
  char templ[] = "/tmp/sandrun-e2e-home-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  ASSERT_EQ(chmod(templ, 0777), 0);
  auto r = RunSandrun({"doctor"}, {{"SANDRUN_HOME", templ}});
  rmdir(templ);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("FAIL  state-dir"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chmod 700"), std::string::npos) << r.out;
}

TEST(CliImageTest, RebuildIsSkippedWhenTheRecipeIsUnchanged) {
  SANDRUN_REQUIRE_DOCKER(client);
  auto r = RunSandrun({"image", "build", "minimal"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("up to date"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.rfind("sandrun-sandbox:minimal sha256:", 0), 0u) << r.out;
}

}  // namespace
}  // namespace sandrun::testing

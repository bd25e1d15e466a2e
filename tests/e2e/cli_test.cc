// The sandrun binary as a user runs it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "sandbox/base/json.h"
#include "tests/e2e/sandrun_home.h"
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
  // A path is a recipe directory (issue 19), and /etc is none: refused, nothing built.
  auto r = RunSandrun({"image", "build", "/etc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no /etc/rootfs.sh"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
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
  EXPECT_EQ(names, (std::set<std::string>{"state-dir", "config", "engine", "api-version",
                                          "exec-wrapper", "exec-path", "warm-pool", "image",
                                          "seccomp", "confine", "mounts", "scratch", "process-tree",
                                          "profiles", "images", "profile"}));
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

// Doctor on a SANDRUN_HOME of its own: its config.json and the images it names. With the engine
// up and the images built, the check under test is the only one that fails.
class DoctorConfig : public SandrunHome {
 protected:
  ProcessResult Doctor(std::map<std::string, std::string> env = {}) {
    return Sandrun({"doctor"}, std::move(env));
  }
  static void ExpectHas(const ProcessResult& r, const std::string& part) {
    EXPECT_NE(r.out.find(part), std::string::npos) << "\"" << part << "\" not in:\n" << r.out;
  }
};

TEST_F(DoctorConfig, GoodConfigPasses) {
  SANDRUN_REQUIRE_DOCKER(client);
  MinimalSandboxConfig();
  auto r = Doctor();
  EXPECT_EQ(r.exit_code, 0) << r.out;
  ExpectHas(r, "  ok    config       " + home_ + "/config.json: 0 agents, 0 tenants\n");
  ExpectHas(r, "  ok    image        sandrun-sandbox:minimal (sandbox.docker.image) sha256:");
  ExpectHas(r, "all required checks passed\n");
}

TEST_F(DoctorConfig, UnknownKeysAreAWarningOnly) {
  SANDRUN_REQUIRE_DOCKER(client);
  MinimalSandboxConfig("", R"("tools": {"nonsense": 1})");
  auto r = Doctor();
  EXPECT_EQ(r.exit_code, 0) << r.out;
  ExpectHas(r, "  warn  config       ");
  ExpectHas(r, "tools.nonsense");
}

TEST_F(DoctorConfig, InvalidJsonFails) {
  SANDRUN_REQUIRE_DOCKER(client);
  Config("{\n  \"sandbox\": {\"mode\": \"all\",\n");
  auto r = Doctor();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  ExpectHas(r, "  FAIL  config       " + home_ + "/config.json:");
  ExpectHas(r, "fix: fix the file at the line and column named");
  ExpectHas(r, "1 check failed: config\n");
  auto json = Sandrun({"doctor", "--json"});
  EXPECT_EQ(json.exit_code, 1);
  auto doc = ParseJson(json.out);
  ASSERT_TRUE(doc) << json.out;
  EXPECT_FALSE(JsonBool(*doc, "ok", true));
}

TEST_F(DoctorConfig, InvalidSettingFails) {
  SANDRUN_REQUIRE_DOCKER(client);
  Config(R"({"tools": {"exec": {"host": "spark"}}})");
  auto r = Doctor();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  ExpectHas(r, "  FAIL  config       " + home_ + "/config.json:1:");
  ExpectHas(r, "tools.exec.host");
  ExpectHas(r, "1 check failed: config\n");
}

TEST_F(DoctorConfig, ContainerSettingEverySandboxCallRefusesFails) {
  SANDRUN_REQUIRE_DOCKER(client);
  MinimalSandboxConfig("", R"("agents": {"ops": {"sandbox": {"docker": {"network": "host"}}}})");
  auto r = Doctor();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  ExpectHas(r, "FAIL  config       " + home_ +
                   "/config.json: agents.ops: sandbox.docker.network \"host\" is not allowed");
  ExpectHas(r, "fix: fix agents.ops.sandbox.docker in the config");
  ExpectHas(r, "1 check failed: config\n");
}

TEST_F(DoctorConfig, MissingConfiguredImageFailsNamingTheRecipes) {
  SANDRUN_REQUIRE_DOCKER(client);
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:nonexistent"}}})");
  auto r = Doctor();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  ExpectHas(r,
            "  FAIL  image        sandrun-sandbox:nonexistent (sandbox.docker.image) is missing: "
            "every sandbox command that uses it fails\n");
  ExpectHas(r, "fix: no recipe builds sandrun-sandbox:nonexistent");
  ExpectHas(r, "(sandrun image build bookworm|minimal)");
  EXPECT_EQ(r.out.find("sandrun image build nonexistent"), std::string::npos) << r.out;
  ExpectHas(r, "1 check failed: image\n");
}

TEST_F(DoctorConfig, MissingImageHintNamesTheRecipeThatBuildsIt) {
  SANDRUN_REQUIRE_DOCKER(client);
  const std::string recipes = home_ + "/recipes";
  std::filesystem::create_directories(recipes + "/e2e-probe");
  std::ofstream(recipes + "/e2e-probe/rootfs.sh") << "#!/bin/sh\nexit 1\n";
  ::chmod((recipes + "/e2e-probe/rootfs.sh").c_str(), 0755);
  MinimalSandboxConfig("", R"("agents": {
      "ops": {"sandbox": {"docker": {"image": "sandrun-sandbox:e2e-probe"}}},
      "qa": {"sandbox": {"docker": {"image": "busybox:latest"}}},
      "off": {"sandbox": {"mode": "off", "docker": {"image": "not-used:1"}}}})");
  auto r = Doctor({{"SANDRUN_IMAGES_DIR", recipes}});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  ExpectHas(r,
            "FAIL  image        sandrun-sandbox:e2e-probe (agents.ops.sandbox.docker.image) is "
            "missing");
  ExpectHas(r, "fix: build it: sandrun image build e2e-probe\n");
  ExpectHas(r, "FAIL  image        busybox:latest (agents.qa.sandbox.docker.image) is missing");
  ExpectHas(r, "fix: no recipe builds busybox:latest (a recipe NAME in " + recipes +
                   " builds sandrun-sandbox:NAME); set sandbox.docker.image to one that is built "
                   "(sandrun image build e2e-probe) or load busybox:latest into the engine");
  EXPECT_EQ(r.out.find("not-used:1"), std::string::npos) << "sandbox.mode off uses no image";
  ExpectHas(r, "2 checks failed: image\n");
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

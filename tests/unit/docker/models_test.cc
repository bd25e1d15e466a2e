#include "sandbox/docker/models.h"

#include <gtest/gtest.h>

#include "sandbox/base/json.h"

namespace sandrun::docker {
namespace {

TEST(ModelsTest, ContainerCreateBodyCarriesSecurityOptions) {
  ContainerSpec spec;
  spec.image = "sandrun-sandbox:minimal";
  spec.cmd = {"sleep", "infinity"};
  spec.env = {"LANG=C.UTF-8"};
  spec.labels = {{"sandrun.sandbox", "1"}};
  spec.working_dir = "/workspace";
  spec.host.network_mode = "none";
  spec.host.readonly_rootfs = true;
  spec.host.cap_drop = {"ALL"};
  spec.host.security_opt = {"no-new-privileges:true", "seccomp={\"defaultAction\":\"x\"}"};
  spec.host.tmpfs = {{"/tmp", "rw,size=64m"}};
  spec.host.pids_limit = 512;
  spec.host.memory = 1 << 30;
  spec.host.nano_cpus = 1000000000;
  spec.host.init = true;
  auto doc = ParseJson(BuildContainerCreateBody(spec));
  ASSERT_TRUE(doc);
  EXPECT_EQ(JsonString(*doc, "Image"), "sandrun-sandbox:minimal");
  EXPECT_EQ(JsonStringArray(*doc, "Cmd"), (std::vector<std::string>{"sleep", "infinity"}));
  EXPECT_TRUE(JsonBool(*doc, "NetworkDisabled"));
  EXPECT_EQ(JsonStringMap(*doc, "Labels").at("sandrun.sandbox"), "1");
  const auto* h = JsonMember(*doc, "HostConfig");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(JsonString(*h, "NetworkMode"), "none");
  EXPECT_TRUE(JsonBool(*h, "ReadonlyRootfs"));
  EXPECT_EQ(JsonStringArray(*h, "CapDrop"), (std::vector<std::string>{"ALL"}));
  EXPECT_EQ(JsonStringArray(*h, "SecurityOpt")[1], "seccomp={\"defaultAction\":\"x\"}");
  EXPECT_EQ(JsonInt(*h, "PidsLimit"), 512);
  EXPECT_EQ(JsonInt(*h, "Memory"), 1 << 30);
  EXPECT_EQ(JsonInt(*h, "NanoCpus"), 1000000000);
  EXPECT_TRUE(JsonBool(*h, "Init"));
  EXPECT_EQ(JsonMember(*h, "MemorySwap"), nullptr) << "unset optionals are left out";
}

TEST(ModelsTest, ExecBodiesEscapeArbitraryCommandText) {
  ExecSpec spec;
  spec.cmd = {"/bin/sh", "-lc", "echo \"$(whoami)\" \\ \n\t\x01"};
  spec.env = {"SANDRUN_SHELL=exec"};
  spec.tty = true;
  spec.console_size = std::make_pair(30u, 120u);
  auto doc = ParseJson(BuildExecCreateBody(spec));
  ASSERT_TRUE(doc);
  EXPECT_EQ(JsonStringArray(*doc, "Cmd")[2], spec.cmd[2]);
  EXPECT_TRUE(JsonBool(*doc, "Tty"));
  EXPECT_FALSE(JsonBool(*doc, "AttachStdin", true));
  const auto* size = JsonMember(*doc, "ConsoleSize");
  ASSERT_TRUE(size && size->IsArray() && size->Size() == 2);
  EXPECT_EQ((*size)[0].GetUint(), 30u);
  EXPECT_EQ(BuildExecStartBody(false, std::nullopt), R"({"Detach":false,"Tty":false})");
}

TEST(ModelsTest, ParsesContainerInspect) {
  const char* body = R"({"Id":"abc123","Name":"/sandrun-sbx-x","Image":"sha256:ff",
    "State":{"Status":"running","Running":true,"Pid":42,"ExitCode":0,"OOMKilled":false},
    "Config":{"Labels":{"sandrun.sandbox":"1"},"Cmd":["sleep","infinity"]},
    "HostConfig":{"NetworkMode":"none","ReadonlyRootfs":true,"CapDrop":["ALL"],
      "SecurityOpt":["no-new-privileges:true"],"PidsLimit":512,"Memory":1073741824,
      "NanoCpus":1000000000,"Init":true,"Tmpfs":{"/tmp":"rw"}}})";
  auto info = ParseContainerInspect(body);
  ASSERT_TRUE(info) << info.error().ToString();
  EXPECT_EQ(info->id, "abc123");
  EXPECT_EQ(info->name, "sandrun-sbx-x");
  EXPECT_TRUE(info->state.running);
  EXPECT_EQ(info->state.pid, 42);
  EXPECT_EQ(info->labels.at("sandrun.sandbox"), "1");
  EXPECT_EQ(info->host.network_mode, "none");
  EXPECT_EQ(info->host.pids_limit, 512);
  EXPECT_EQ(info->host.init, true);
  EXPECT_EQ(info->host.tmpfs.at("/tmp"), "rw");
}

TEST(ModelsTest, ExecInspectExitCodeIsNullWhileRunning) {
  auto running = ParseExecInspect(R"({"ID":"e","Running":true,"ExitCode":null,"Pid":7})");
  ASSERT_TRUE(running);
  EXPECT_TRUE(running->running);
  EXPECT_FALSE(running->exit_code.has_value());
  auto done = ParseExecInspect(R"({"ID":"e","Running":false,"ExitCode":127,"Pid":7})");
  ASSERT_TRUE(done);
  EXPECT_EQ(done->exit_code, 127);
}

TEST(ModelsTest, MalformedResponsesAreProtocolErrors) {
  EXPECT_EQ(ParseContainerInspect("not json").error().code, ErrorCode::kProtocol);
  EXPECT_EQ(ParseContainerInspect("[]").error().code, ErrorCode::kProtocol);
  EXPECT_EQ(ParseIdResponse("{}").error().code, ErrorCode::kProtocol);
  EXPECT_FALSE(ParseVersion(R"({"Version":"x"})"));
  EXPECT_FALSE(ParseContainerList("{}"));
  EXPECT_FALSE(ParseWaitResponse(R"({"StatusCode":"zero"})"));
}

TEST(ModelsTest, ErrorMessageFromEngineBody) {
  EXPECT_EQ(ParseErrorMessage(R"({"message":"No such container: x"})"), "No such container: x");
  EXPECT_EQ(ParseErrorMessage("page not found\n"), "page not found");
}

TEST(ModelsTest, ProgressMessagesCarryErrors) {
  auto m = ParseProgressMessage(R"({"errorDetail":{"message":"bad tar"},"error":"bad tar"})");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->error, "bad tar");
  auto s = ParseProgressMessage(R"({"status":"sha256:abc"})");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, "sha256:abc");
}

TEST(ModelsTest, UrlEncodingAndLabelFilters) {
  EXPECT_EQ(UrlEncode("a b/c=d&e"), "a%20b%2Fc%3Dd%26e");
  EXPECT_EQ(UrlEncode("Az09-_.~"), "Az09-_.~");
  EXPECT_EQ(LabelFilterQuery({"sandrun.sandbox=1"}),
            "filters=%7B%22label%22%3A%5B%22sandrun.sandbox%3D1%22%5D%7D");
}

TEST(ModelsTest, ApiVersionsCompareNumerically) {
  EXPECT_LT(CompareApiVersions("1.9", "1.41"), 0);
  EXPECT_GT(CompareApiVersions("1.44", "1.41"), 0);
  EXPECT_EQ(CompareApiVersions("1.41", "1.41"), 0);
  EXPECT_LT(CompareApiVersions("1", "1.1"), 0);
}

struct NegotiationCase {
  const char* engine_max;
  const char* engine_min;
  const char* expected;  // nullptr = incompatible
};

class NegotiationTest : public ::testing::TestWithParam<NegotiationCase> {};

TEST_P(NegotiationTest, PicksTheHighestCommonVersion) {
  VersionInfo engine;
  engine.api_version = GetParam().engine_max;
  engine.min_api_version = GetParam().engine_min;
  auto chosen = NegotiateApiVersion("1.41", "1.45", engine);
  if (GetParam().expected == nullptr) {
    EXPECT_FALSE(chosen);
  } else {
    ASSERT_TRUE(chosen) << chosen.error().ToString();
    EXPECT_EQ(*chosen, GetParam().expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, NegotiationTest,
                         ::testing::Values(NegotiationCase{"1.41", "1.12", "1.41"},  // Debian 12
                                           NegotiationCase{"1.43", "1.12", "1.43"},
                                           NegotiationCase{"1.51", "1.44", "1.45"},  // Docker 29
                                           NegotiationCase{"1.45", "", "1.45"},
                                           NegotiationCase{"1.40", "1.12", nullptr},    // too old
                                           NegotiationCase{"1.60", "1.50", nullptr}));  // too new

}  // namespace
}  // namespace sandrun::docker

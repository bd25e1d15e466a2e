// `sandrun call`: one JSON object in, one out; malformed calls are refused before anything runs.
#include <gtest/gtest.h>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

struct BadCall {
  const char* name;
  std::string json;
  const char* code;
  const char* message_part;
};

class MalformedCall : public SandrunHome, public ::testing::WithParamInterface<BadCall> {};

TEST_P(MalformedCall, IsRefusedWithAClearErrorAndSpawnsNothing) {
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}}})");
  auto r = Call(GetParam().json);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  auto doc = Parsed(r.out);
  const auto* error = JsonMember(doc, "error");
  ASSERT_NE(error, nullptr) << r.out;
  EXPECT_EQ(JsonString(*error, "code"), GetParam().code);
  EXPECT_NE(JsonString(*error, "message").find(GetParam().message_part), std::string::npos)
      << JsonString(*error, "message");
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "exactly one line of JSON";
  EXPECT_EQ(ContainerCount(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedCall,
    ::testing::Values(
        BadCall{"BadJson", "{\"tool\":\"exec\",", "invalid-json", "tool call:1:"},
        BadCall{"NotAnObject", "[1,2]", "invalid-request", "JSON object"},
        BadCall{"NoTool", R"({"command":"ls"})", "invalid-request", "\"tool\""},
        BadCall{"UnknownTool", R"({"tool":"rm_rf","command":"ls"})", "unknown-tool", "rm_rf"},
        BadCall{"NoCommand", R"({"tool":"exec"})", "invalid-request", "Provide a command"},
        BadCall{"EmptyCommand", R"({"tool":"exec","command":"  "})", "invalid-request",
                "Provide a command"},
        BadCall{"CommandNotString", R"({"tool":"exec","command":5})", "invalid-request",
                "must be a string"},
        BadCall{"NulInCommand", R"({"tool":"exec","command":"echo a\u0000b"})", "invalid-request",
                "NUL"},
        BadCall{"HugeCommand",
                "{\"tool\":\"exec\",\"command\":\"echo " + std::string(2u << 20, 'x') + "\"}",
                "invalid-request", "limit"},
        BadCall{"TimeoutNotNumber", R"({"tool":"exec","command":"ls","timeout":"soon"})",
                "invalid-request", "timeout"},
        BadCall{"EnvNotStrings", R"({"tool":"exec","command":"ls","env":{"A":1}})",
                "invalid-request", "env value"},
        BadCall{"HostNotString", R"({"tool":"exec","command":"ls","host":7})", "invalid-request",
                "Invalid exec host value type number"},
        BadCall{"UnknownHost", R"({"tool":"exec","command":"ls","host":"spark-ff13"})",
                "invalid-host",
                "Invalid exec host \"spark-ff13\". Allowed values: auto, sandbox, "
                "gateway, node."},
        BadCall{"NodeHost", R"({"tool":"exec","command":"ls","host":"node"})", "host-not-allowed",
                "exec host not allowed"},
        BadCall{"NulInEnvValue", R"({"tool":"exec","command":"ls","env":{"A":"x\u0000y"}})",
                "security-violation", "NUL"}),
    [](const auto& test_case) { return std::string(test_case.param.name); });

class CallRuns : public SandrunHome {};

TEST_F(CallRuns, HandledCallExitsZeroEvenWhenTheCommandFails) {
  SANDRUN_REQUIRE_DOCKER(client);
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}}})");
  auto r = Call(R"({"tool":"exec","command":"echo from-call; exit 9","timeoutSeconds":30})");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto doc = Parsed(r.out);
  EXPECT_EQ(Details(doc, "status"), "completed");
  EXPECT_EQ(JsonInt(*JsonMember(doc, "details"), "exitCode"), 9);
  EXPECT_EQ(Details(doc, "host"), "sandbox");
  EXPECT_EQ(JsonString(*JsonMember(doc, "content")->Begin(), "text"),
            "from-call\n\n(Command exited with code 9)");
}

TEST_F(CallRuns, JsonArgumentWorksLikeStdin) {
  SANDRUN_REQUIRE_DOCKER(client);
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}}})");
  auto r = Sandrun({"call", R"({"tool":"exec","command":"echo arg"})"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Details(Parsed(r.out), "aggregated"), "arg");
}

TEST_F(CallRuns, BackgroundWithoutAServerRunsSynchronouslyWithAWarning) {
  SANDRUN_REQUIRE_DOCKER(client);
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}}})");
  auto r = Call(R"({"tool":"exec","command":"echo bg","background":true})");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto doc = Parsed(r.out);
  EXPECT_EQ(Details(doc, "status"), "completed");
  EXPECT_EQ(JsonString(*JsonMember(doc, "content")->Begin(), "text"),
            "Warning: background execution is disabled; running synchronously.\n\nbg");
}

TEST_F(CallRuns, CorruptConfigIsRefusedNamingTheFileAndLine) {
  Config("{\n  \"sandbox\": {\n    \"mode\": 5\n  }\n}\n");
  auto r = Call(R"({"tool":"exec","command":"echo no"})");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  auto doc = Parsed(r.out);
  const auto* error = JsonMember(doc, "error");
  ASSERT_NE(error, nullptr);
  std::string message = JsonString(*error, "message");
  EXPECT_NE(message.find("config.json:3:"), std::string::npos) << message;
  EXPECT_NE(message.find("sandbox.mode"), std::string::npos) << message;
}

}  // namespace
}  // namespace sandrun::testing

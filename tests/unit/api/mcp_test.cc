// The MCP front end without Docker (issue 16): the mcp.* config keys, message parsing, Origin
// checks, and McpServer's answers to everything but a run (initialize, ping, server/discover,
// tools/list, the errors of both eras, refusals as tool results). Runs (exec in a sandbox,
// progress, cancel, the transports) are tested end to end with the official SDK in tests/mcp/.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <variant>

#include "runner/api/mcp_route.h"
#include "runner/api/mcp_server.h"
#include "runner/api/runtime.h"
#include "runner/config/config.h"
#include "runner/wire/tool_schemas.h"
#include "sandbox/base/json.h"

namespace sandrun::api {
namespace {

using ::testing::HasSubstr;

class McpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sandrun-mcp-unit-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    home_ = templ;
    ::setenv("SANDRUN_HOME", home_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("SANDRUN_HOME");
    std::filesystem::remove_all(home_);
  }
  void Config(const std::string& json) { std::ofstream(home_ + "/config.json") << json; }
  Result<config::Config> LoadConfigText(const std::string& json) {
    Config(json);
    return config::LoadConfig(home_ + "/config.json", true);
  }

  // One message through a one-shot runtime's McpServer: the parsed response.
  rapidjson::Document Ask(const std::string& message) {
    if (!runtime_) {
      runtime_ = Runtime::StartOneShot(GlobalOptions{});
      mcp_ = std::make_unique<McpServer>(*runtime_, "stdio");
    }
    auto parsed = ParseMcpMessage(message);
    std::string json;
    if (auto* refusal = std::get_if<McpReply>(&parsed)) {
      json = refusal->json;
    } else {
      McpReply reply = mcp_->Handle(std::get<McpMessage>(parsed), Principal{}, nullptr, nullptr);
      last_status_ = reply.http_status;
      json = reply.json;
    }
    auto doc = ParseJson(json);
    EXPECT_TRUE(doc) << json;
    return doc ? std::move(*doc) : rapidjson::Document();
  }
  int ErrorCode(const rapidjson::Value& response) {
    const auto* error = JsonMember(response, "error");
    return error == nullptr ? 0 : static_cast<int>(JsonInt(*error, "code"));
  }

  std::string home_;
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<McpServer> mcp_;
  int last_status_ = 0;
};

TEST_F(McpTest, ConfigDefaultsAndKeys) {
  auto defaults = LoadConfigText("{}");
  ASSERT_TRUE(defaults) << defaults.error().message;
  EXPECT_EQ(defaults->mcp.max_block_ms, 50000);
  EXPECT_EQ(defaults->mcp.max_output_chars, 40000);
  EXPECT_FALSE(defaults->mcp.wait_for_approval);
  EXPECT_TRUE(defaults->mcp.allowed_origins.empty());
  auto set = LoadConfigText(
      R"({"mcp": {"maxBlockMs": 1500, "maxOutputChars": 2000, "waitForApproval": true,
                  "allowedOrigins": ["https://app.example.com", "http://10.0.0.5:8080"]}})");
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_EQ(set->mcp.max_block_ms, 1500);
  EXPECT_EQ(set->mcp.max_output_chars, 2000);
  EXPECT_TRUE(set->mcp.wait_for_approval);
  EXPECT_EQ(set->mcp.allowed_origins.size(), 2u);
}

TEST_F(McpTest, ConfigRefusesBadValues) {
  for (const char* bad : {
           R"({"mcp": {"maxBlockMs": 0}})",
           R"({"mcp": {"maxBlockMs": "50s"}})",
           R"({"mcp": {"maxOutputChars": 10}})",
           R"({"mcp": {"waitForApproval": "yes"}})",
           R"({"mcp": {"allowedOrigins": ["*"]}})",
           R"({"mcp": {"allowedOrigins": ["https://app.example.com/path"]}})",
           R"({"mcp": {"allowedOrigins": ["app.example.com"]}})",
           R"({"mcp": []})",
       }) {
    auto loaded = LoadConfigText(bad);
    EXPECT_FALSE(loaded) << bad;
    if (!loaded) {
      EXPECT_THAT(loaded.error().message, HasSubstr("mcp")) << bad;
    }
  }
}

TEST(McpOrigin, LoopbackAndConfiguredOnly) {
  const std::vector<std::string> allowed = {"https://app.example.com"};
  for (const char* ok : {"http://localhost", "http://localhost:3000", "https://127.0.0.1:8443",
                         "http://[::1]:1", "https://app.example.com"}) {
    EXPECT_TRUE(McpOriginAllowed(ok, allowed)) << ok;
  }
  for (const char* bad :
       {"http://evil.example.com", "http://localhost.evil.com", "http://localhost:80@evil.com",
        "http://127.0.0.1.nip.io", "null", "", "file://", "http://localhost:", "http://[::1]x",
        "https://app.example.com:444", "ftp://localhost", "http://localhost:3000/x"}) {
    EXPECT_FALSE(McpOriginAllowed(bad, allowed)) << bad;
  }
}

TEST(McpParse, MalformedMessagesAreJsonRpcErrors) {
  struct Row {
    const char* text;
    int code;
  };
  for (const Row& row : {
           Row{"{bad json", kJsonRpcParseError},
           Row{"[]", kJsonRpcInvalidRequest},
           Row{R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", kJsonRpcInvalidRequest},
           Row{"7", kJsonRpcInvalidRequest},
           Row{R"({"jsonrpc":"1.0","id":1,"method":"ping"})", kJsonRpcInvalidRequest},
           Row{R"({"id":1,"method":"ping"})", kJsonRpcInvalidRequest},
           Row{R"({"jsonrpc":"2.0","id":null,"method":"ping"})", kJsonRpcInvalidRequest},
           Row{R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", kJsonRpcInvalidRequest},
           Row{R"({"jsonrpc":"2.0","id":{},"method":"ping"})", kJsonRpcInvalidRequest},
           Row{R"({"jsonrpc":"2.0","id":1,"method":7})", kJsonRpcInvalidRequest},
           Row{R"({"jsonrpc":"2.0","id":1})", kJsonRpcInvalidRequest},
           Row{R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]})", kJsonRpcInvalidParams},
           // One reader's first member is another's last: refused, anywhere in the message.
           Row{R"({"jsonrpc":"2.0","id":5,"id":6,"method":"ping"})", kJsonRpcInvalidRequest},
           Row{R"({"jsonrpc":"2.0","id":1,"method":"tools/call",
                   "params":{"name":"exec","name":"process"}})",
               kJsonRpcInvalidRequest},
           Row{R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec",
                   "arguments":{"command":"ls","command":"rm -rf /"}}})",
               kJsonRpcInvalidRequest},
           // Not UTF-8: never echoed back into a response (raw bytes or an escaped surrogate).
           Row{R"({"jsonrpc":"2.0","id":"\udc00x","method":"ping"})", kJsonRpcParseError},
           Row{R"({"jsonrpc":"2.0","id":1,"method":"\ud800"})", kJsonRpcParseError},
           Row{"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}", kJsonRpcParseError},
       }) {
    auto parsed = ParseMcpMessage(row.text);
    ASSERT_TRUE(std::holds_alternative<McpReply>(parsed)) << row.text;
    const McpReply& reply = std::get<McpReply>(parsed);
    EXPECT_EQ(reply.http_status, 400) << row.text;
    auto doc = ParseJson(reply.json);
    ASSERT_TRUE(doc) << reply.json;
    EXPECT_EQ(JsonInt((*doc)["error"], "code"), row.code) << row.text << " -> " << reply.json;
    EXPECT_EQ(JsonString(*doc, "jsonrpc"), "2.0");
  }
  // An oversized message is refused before it is parsed.
  auto big = ParseMcpMessage(std::string(kMcpMaxMessageBytes + 1, ' '));
  ASSERT_TRUE(std::holds_alternative<McpReply>(big));
  EXPECT_THAT(std::get<McpReply>(big).json, HasSubstr("larger than"));
}

TEST(McpParse, ReadsIdMethodEraAndProgressToken) {
  auto parsed = ParseMcpMessage(
      R"({"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"exec",
          "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":9}}})");
  ASSERT_TRUE(std::holds_alternative<McpMessage>(parsed));
  const McpMessage& m = std::get<McpMessage>(parsed);
  EXPECT_TRUE(m.request);
  EXPECT_EQ(m.id_json, "\"a-1\"");
  EXPECT_EQ(m.method, "tools/call");
  EXPECT_EQ(m.name, "exec");
  EXPECT_EQ(m.protocol_version, "2026-07-28");
  EXPECT_EQ(m.progress_token_json, "9");
  auto note = ParseMcpMessage(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  ASSERT_TRUE(std::holds_alternative<McpMessage>(note));
  EXPECT_FALSE(std::get<McpMessage>(note).request);
  auto response = ParseMcpMessage(R"({"jsonrpc":"2.0","id":3,"result":{}})");
  ASSERT_TRUE(std::holds_alternative<McpMessage>(response));
  EXPECT_TRUE(std::get<McpMessage>(response).client_response);
}

TEST_F(McpTest, LegacyHandshake) {
  auto r = Ask(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                   "protocolVersion":"2025-06-18","capabilities":{},
                   "clientInfo":{"name":"t","version":"1"}}})");
  EXPECT_EQ(JsonString(r["result"], "protocolVersion"), "2025-06-18");
  EXPECT_EQ(JsonString(r["result"]["serverInfo"], "name"), "sandrun");
  EXPECT_TRUE(r["result"]["capabilities"].HasMember("tools"));
  EXPECT_FALSE(r["result"].HasMember("resultType"));  // a legacy result
  // An unknown version gets our newest legacy one (the client decides).
  auto newer = Ask(R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{
                       "protocolVersion":"2099-01-01","capabilities":{}}})");
  EXPECT_EQ(JsonString(newer["result"], "protocolVersion"), "2025-11-25");
  EXPECT_EQ(ErrorCode(Ask(R"({"jsonrpc":"2.0","id":3,"method":"initialize","params":{}})")),
            kJsonRpcInvalidParams);
  EXPECT_TRUE(Ask(R"({"jsonrpc":"2.0","id":4,"method":"ping"})")["result"].IsObject());
}

TEST_F(McpTest, ModernEraWithoutInitialize) {
  const std::string meta = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
      "io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},
      "io.modelcontextprotocol/clientCapabilities":{}})";
  auto discover =
      Ask(R"({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{)" + meta + "}}");
  const auto& result = discover["result"];
  EXPECT_EQ(JsonString(result, "resultType"), "complete");
  EXPECT_EQ(ToJson(result["supportedVersions"]),
            R"(["2026-07-28","2025-11-25","2025-06-18","2025-03-26"])");
  EXPECT_GE(JsonInt(result, "ttlMs"), 0);
  EXPECT_EQ(JsonString(result, "cacheScope"), "private");
  EXPECT_EQ(JsonString(result["_meta"]["io.modelcontextprotocol/serverInfo"], "name"), "sandrun");

  auto list = Ask(R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{)" + meta + "}}");
  EXPECT_EQ(JsonString(list["result"], "resultType"), "complete");
  EXPECT_TRUE(list["result"].HasMember("ttlMs"));
  EXPECT_EQ(list["result"]["tools"].Size(), wire::ToolSpecs().size());

  auto unsupported = Ask(R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{
      "io.modelcontextprotocol/protocolVersion":"1900-01-01"}}})");
  EXPECT_EQ(ErrorCode(unsupported), kMcpUnsupportedVersion);
  EXPECT_EQ(last_status_, 400);
  EXPECT_EQ(JsonString(unsupported["error"]["data"], "requested"), "1900-01-01");
  EXPECT_EQ(unsupported["error"]["data"]["supported"][0].GetString(), std::string("2026-07-28"));

  auto no_caps = Ask(R"({"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{
      "io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
  EXPECT_EQ(ErrorCode(no_caps), kJsonRpcInvalidParams);
  EXPECT_EQ(last_status_, 400);

  auto unknown =
      Ask(R"({"jsonrpc":"2.0","id":4,"method":"resources/list","params":{)" + meta + "}}");
  EXPECT_EQ(ErrorCode(unknown), kJsonRpcMethodNotFound);
  EXPECT_EQ(last_status_, 404);  // streamable-http.mdx: 404 with -32601 in the modern era
}

TEST_F(McpTest, ToolsAreTheWireSpecs) {
  auto list = Ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  const auto& tools = list["result"]["tools"];
  ASSERT_EQ(tools.Size(), 4u);
  for (const auto& tool : tools.GetArray()) {
    const std::string name = JsonString(tool, "name");
    const wire::ToolSpec* spec = wire::FindToolSpec(name);
    ASSERT_NE(spec, nullptr) << name;
    // The inputSchema is the spec's, byte for byte: no second copy of a schema.
    EXPECT_EQ(ToJson(tool["inputSchema"]), wire::InputSchemaJson(*spec)) << name;
    EXPECT_EQ(JsonString(tool["outputSchema"], "type"), "object") << name;
    EXPECT_EQ(JsonBool(tool["annotations"], "readOnlyHint"), spec->read_only) << name;
    EXPECT_EQ(JsonBool(tool["annotations"], "destructiveHint"), spec->destructive) << name;
  }
  EXPECT_TRUE(JsonBool(tools[3]["annotations"], "readOnlyHint"));  // policy_check
  EXPECT_EQ(ErrorCode(Ask(R"({"jsonrpc":"2.0","id":2,"method":"tools/list",
                              "params":{"cursor":"x"}})")),
            kJsonRpcInvalidParams);
}

TEST_F(McpTest, BadToolCallsAreProtocolErrorsRefusalsAreResults) {
  EXPECT_EQ(ErrorCode(Ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})")),
            kJsonRpcInvalidParams);
  EXPECT_EQ(ErrorCode(Ask(R"({"jsonrpc":"2.0","id":2,"method":"tools/call",
                              "params":{"name":"rm_rf"}})")),
            kJsonRpcInvalidParams);
  EXPECT_EQ(ErrorCode(Ask(R"({"jsonrpc":"2.0","id":3,"method":"tools/call",
                              "params":{"name":"exec","arguments":"ls"}})")),
            kJsonRpcInvalidParams);
  EXPECT_EQ(ErrorCode(Ask(R"({"jsonrpc":"2.0","id":4,"method":"nope"})")), kJsonRpcMethodNotFound);
  // Input the tool refuses is a tool result with isError (server/tools.mdx), the message
  // OpenClaw's.
  for (const char* call : {
           R"({"name":"exec","arguments":{}})",
           R"({"name":"exec","arguments":{"command":"ls","timeout":"soon"}})",
           R"({"name":"process","arguments":{"action":"list"}})",
           R"({"name":"apply_patch","arguments":{"input":"   "}})",
       }) {
    auto r =
        Ask(std::string(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":)") + call + "}");
    ASSERT_TRUE(r.HasMember("result")) << call << ": " << ToJson(r);
    EXPECT_TRUE(JsonBool(r["result"], "isError")) << call;
    const auto& s = r["result"]["structuredContent"];
    EXPECT_EQ(JsonString(s, "status"), "refused") << call;
    EXPECT_FALSE(JsonString(s, "code").empty()) << call;
    EXPECT_FALSE(JsonString(s, "message").empty()) << call;
    // Mirrored as text.
    EXPECT_EQ(JsonString(r["result"]["content"][0], "text"), ToJson(s)) << call;
  }
  auto missing = Ask(R"({"jsonrpc":"2.0","id":6,"method":"tools/call",
                         "params":{"name":"exec","arguments":{}}})");
  EXPECT_EQ(JsonString(missing["result"]["structuredContent"], "message"),
            "Provide a command to start.");
}

TEST_F(McpTest, PolicyCheckDecidesWithoutRunning) {
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}}})");
  auto r = Ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",
                   "params":{"name":"policy_check","arguments":{"command":"echo hi"}}})");
  ASSERT_TRUE(r.HasMember("result")) << ToJson(r);
  EXPECT_FALSE(JsonBool(r["result"], "isError")) << ToJson(r);
  EXPECT_EQ(JsonString(r["result"]["structuredContent"], "decision"), "allow") << ToJson(r);
}

TEST_F(McpTest, NotificationsGetNoAnswer) {
  runtime_ = Runtime::StartOneShot(GlobalOptions{});
  mcp_ = std::make_unique<McpServer>(*runtime_, "stdio");
  for (const char* note : {R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                           R"({"jsonrpc":"2.0","method":"notifications/cancelled",
                               "params":{"requestId":42}})",
                           R"({"jsonrpc":"2.0","id":9,"result":{}})"}) {
    auto parsed = ParseMcpMessage(note);
    ASSERT_TRUE(std::holds_alternative<McpMessage>(parsed)) << note;
    McpReply reply = mcp_->Handle(std::get<McpMessage>(parsed), Principal{}, nullptr, nullptr);
    EXPECT_EQ(reply.kind, McpReply::Kind::kNone) << note;
    EXPECT_TRUE(reply.json.empty()) << note;
  }
}

}  // namespace
}  // namespace sandrun::api

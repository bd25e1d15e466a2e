// The server.* keys of config.json (sandrun serve's limits), and the depth bound of the config
// files' position index.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runner/config/config.h"
#include "runner/config/json_lines.h"

namespace sandrun::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class ServerConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sandrun-server-config-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    root_ = templ;
    path_ = root_ + "/config.json";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  Result<Config> LoadText(const std::string& text) {
    std::ofstream(path_, std::ios::binary) << text;
    return LoadConfig(path_, true);
  }

  std::string root_, path_;
};

TEST_F(ServerConfigTest, DefaultsAreTheDocumentedOnes) {
  auto config = LoadText("{}");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->server.max_connections, 256);
  EXPECT_EQ(config->server.header_timeout_ms, 10000);
  EXPECT_EQ(config->server.idle_timeout_ms, 60000);
  EXPECT_EQ(config->server.max_body_bytes, 8 << 20);
  EXPECT_EQ(config->server.max_buffered_bytes, int64_t{256} << 20);
}

TEST_F(ServerConfigTest, EveryKeyIsRead) {
  auto config = LoadText(R"({"server": {"maxConnections": 8, "headerTimeoutMs": 500,
    "idleTimeoutMs": 2000, "maxBodyBytes": "64k", "maxBufferedBytes": 1048576}})");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_THAT(config->warnings, IsEmpty());
  EXPECT_EQ(config->server.max_connections, 8);
  EXPECT_EQ(config->server.header_timeout_ms, 500);
  EXPECT_EQ(config->server.idle_timeout_ms, 2000);
  EXPECT_EQ(config->server.max_body_bytes, 64 << 10);
  EXPECT_EQ(config->server.max_buffered_bytes, 1 << 20);
}

TEST_F(ServerConfigTest, WrongTypesAndRangesAreRefusedWithFileLineAndKey) {
  struct Row {
    const char* text;
    const char* message;
  };
  for (const Row& row : {
           Row{R"({"server": {"maxConnections": "8"}})",
               ":1:31: server.maxConnections: expected an integer from 1 to 65536, got \"8\""},
           Row{R"({"server": {"maxConnections": 70000}})",
               ":1:31: server.maxConnections: expected an integer from 1 to 65536, got 70000"},
           Row{R"({"server": {"headerTimeoutMs": 10}})",
               ":1:32: server.headerTimeoutMs: expected an integer from 100 to 3600000, got 10"},
           Row{R"({"server": {"idleTimeoutMs": null}})",
               ":1:30: server.idleTimeoutMs: expected an integer from 100 to 86400000, got null"},
           Row{R"({"server": {"maxBodyBytes": [1]}})",
               ":1:29: server.maxBodyBytes: expected a byte count (an integer or a string like "
               "\"512m\" or \"1.5g\"), got an array"},
           Row{R"({"server": {"maxBodyBytes": 100}})",
               ":1:29: server.maxBodyBytes: expected at least 1024 bytes, got 100"},
           Row{R"({"server": {"maxBufferedBytes": "1m"}})",
               ":1:33: server.maxBufferedBytes: server.maxBufferedBytes (1048576) must be at least "
               "server.maxBodyBytes (8388608)"},
           Row{R"({"server": {"maxBodyBytes": "1g"}})",
               ":1:29: server.maxBodyBytes: server.maxBufferedBytes (268435456) must be at least "
               "server.maxBodyBytes (1073741824)"},
           Row{R"({"server": true})", ":1:12: server: expected an object, got true"},
       }) {
    auto config = LoadText(row.text);
    ASSERT_FALSE(config) << row.text;
    EXPECT_EQ(config.error().message, path_ + row.message) << row.text;
  }
}

TEST_F(ServerConfigTest, UnknownKeysAreWarnedAboutAndServerIsTopLevelOnly) {
  auto config = LoadText(R"({"server": {"maxConection": 3},
    "agents": {"ops": {"server": {"maxConnections": 3}}}})");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->server.max_connections, 256);
  EXPECT_THAT(config->warnings,
              ElementsAre(path_ + ":1:13: unknown key server.maxConection (ignored)",
                          path_ + ":2:24: unknown key agents.ops.server (ignored)"));
}

TEST(JsonLinesDepth, DeepTextIsRefusedByTheIndexToo) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto lines = JsonLines::Build(deep, "f.json");
  ASSERT_FALSE(lines);
  EXPECT_EQ(lines.error().message, "f.json:1:65: objects and arrays nested deeper than 64 levels");
  auto file = ParseJsonFile("{\"a\":\n" + deep + "}", "g.json");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().message, "g.json:2:64: objects and arrays nested deeper than 64 levels");
}

TEST(JsonLinesDepth, PositionsStayRightWithTheIterativeParser) {
  auto lines = JsonLines::Build("{\n  \"a\": {\n    \"b\": [1, {\"c\": 2}]\n  }\n}", "f.json");
  ASSERT_TRUE(lines) << lines.error().message;
  EXPECT_EQ(lines->Where("a"), "f.json:2:8");
  EXPECT_EQ(lines->Where("a", true), "f.json:2:3");
  EXPECT_EQ(lines->Where("a.b"), "f.json:3:10");
  EXPECT_EQ(lines->Where("a.b[1]"), "f.json:3:14");
  EXPECT_EQ(lines->Where("a.b[1].c", true), "f.json:3:15");
}

}  // namespace
}  // namespace sandrun::config

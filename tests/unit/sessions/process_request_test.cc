// Parsing `process` tool calls: every parameter's type is checked with a clear error.
#include "runner/sessions/process_request.h"

#include <gtest/gtest.h>

#include <string>

namespace sandrun::sessions {
namespace {

ProcessRequest Ok(const std::string& json) {
  auto parsed = ParseProcessRequest(std::string_view(json));
  if (!parsed) {
    ADD_FAILURE() << json << ": " << parsed.error().ToString();
    return {};
  }
  return *parsed;
}

// The refusal's wire code and text (what {"error":{"code","message"}} carries).
struct Refusal {
  std::string code;
  std::string message;
};

Refusal Err(const std::string& json) {
  auto parsed = ParseProcessRequest(std::string_view(json));
  if (!parsed) {
    EXPECT_EQ(parsed.error().code, ErrorCode::kRefused) << json << ": nothing happened";
    return {parsed.error().WireCode(), parsed.error().ToString()};
  }
  ADD_FAILURE() << json << " parsed";
  return {};
}

TEST(ProcessRequestTest, ReadsEveryParameter) {
  ProcessRequest r =
      Ok(R"({"tool":"process","action":"send-keys","sessionId":"calm-reef","data":"x","eof":true,)"
         R"("keys":["C-c","Enter"],"hex":["1b"],"literal":"ls","text":"t","bracketed":false,)"
         R"("offset":3,"limit":4.9,"timeout":1500,"unknown":{"ignored":1}})");
  EXPECT_EQ(r.action, "send-keys");
  EXPECT_EQ(r.session_id, "calm-reef");
  EXPECT_EQ(r.data, "x");
  EXPECT_TRUE(r.eof);
  EXPECT_EQ(r.keys, (std::vector<std::string>{"C-c", "Enter"}));
  EXPECT_EQ(r.hex, (std::vector<std::string>{"1b"}));
  EXPECT_EQ(r.literal, "ls");
  EXPECT_EQ(r.text, "t");
  EXPECT_EQ(r.bracketed, false);
  EXPECT_EQ(r.offset, 3);
  EXPECT_EQ(r.limit, 4);  // floored
  EXPECT_EQ(r.timeout_ms, 1500);
}

TEST(ProcessRequestTest, NullMeansNotGiven) {
  ProcessRequest r = Ok(R"({"action":"list","sessionId":null,"keys":null,"offset":null})");
  EXPECT_FALSE(r.session_id);
  EXPECT_TRUE(r.keys.empty());
  EXPECT_FALSE(r.offset);
  EXPECT_FALSE(r.bracketed);
}

TEST(ProcessRequestTest, WrongTypesAreNamed) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"({"sessionId":"x"})",
       "process parameter \"action\" is required (list, poll, log, write, send-keys, submit, "
       "paste, kill, clear, remove)"},
      {R"({"action":7})", "process parameter \"action\" must be a string, got number"},
      {R"({"action":"poll","sessionId":5})",
       "process parameter \"sessionId\" must be a string, got number"},
      {R"({"action":"write","data":true})",
       "process parameter \"data\" must be a string, got boolean"},
      {R"({"action":"write","eof":"yes"})",
       "process parameter \"eof\" must be a boolean, got string"},
      {R"({"action":"send-keys","keys":"Enter"})",
       "process parameter \"keys\" must be an array of strings, got string"},
      {R"({"action":"send-keys","keys":["a",1]})",
       "process parameter \"keys\" must be an array of strings, got an array with a number"},
      {R"({"action":"send-keys","hex":[null]})",
       "process parameter \"hex\" must be an array of strings, got an array with a null"},
      {R"({"action":"send-keys","literal":{}})",
       "process parameter \"literal\" must be a string, got object"},
      {R"({"action":"paste","text":[]})", "process parameter \"text\" must be a string, got array"},
      {R"({"action":"paste","bracketed":1})",
       "process parameter \"bracketed\" must be a boolean, got number"},
      {R"({"action":"log","offset":"1"})",
       "process parameter \"offset\" must be a number, got string"},
      {R"({"action":"log","limit":-1})", "process parameter \"limit\" must be >= 0"},
      {R"({"action":"poll","timeout":-5})", "process parameter \"timeout\" must be >= 0"},
  };
  for (const auto& c : cases) {
    Refusal e = Err(c.json);
    EXPECT_EQ(e.code, "invalid-request") << c.json;
    EXPECT_EQ(e.message, c.message) << c.json;
  }
}

TEST(ProcessRequestTest, NotJsonOrNotAnObject) {
  EXPECT_EQ(Err("{nope").code, "invalid-json");
  Refusal e = Err("[1]");
  EXPECT_EQ(e.code, "invalid-request");
  EXPECT_EQ(e.message, "a tool call is a JSON object");
}

TEST(ProcessRequestTest, HugeNumbersSaturate) {
  ProcessRequest r = Ok(R"({"action":"poll","timeout":1e300,"offset":18446744073709551615})");
  EXPECT_EQ(r.timeout_ms, INT64_MAX);
  EXPECT_EQ(r.offset, INT64_MAX);
}

}  // namespace
}  // namespace sandrun::sessions

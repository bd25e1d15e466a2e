#include "sandbox/base/json.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sandbox/base/strings.h"

namespace sandrun {
namespace {

TEST(JsonTest, ParsesAndSerialisesCompactly) {
  auto doc = ParseJson("{ \"a\" : [1, 2], \"b\": {\"c\": \"d\"} }");
  ASSERT_TRUE(doc) << doc.error().ToString();
  EXPECT_EQ(ToJson(*doc), R"({"a":[1,2],"b":{"c":"d"}})");
}

TEST(JsonTest, SyntaxErrorsNameSourceLineAndColumn) {
  JsonParseOptions options;
  options.source_name = "config.json";
  auto doc = ParseJson("{\n  \"a\": 1,\n  \"b\": ]\n}", options);
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(doc.error().message.rfind("config.json:3:", 0), 0u) << doc.error().message;
}

TEST(JsonTest, CommentsAndTrailingCommasOnlyWhenAllowed) {
  const char* text = "{\n  // a comment\n  \"a\": 1,\n}";
  EXPECT_FALSE(ParseJson(text));
  JsonParseOptions relaxed;
  relaxed.allow_comments_and_trailing_commas = true;
  auto doc = ParseJson(text, relaxed);
  ASSERT_TRUE(doc) << doc.error().ToString();
  EXPECT_EQ(JsonInt(*doc, "a"), 1);
}

TEST(JsonTest, RejectsTrailingGarbageAndEmptyInput) {
  EXPECT_FALSE(ParseJson("{} {}"));
  EXPECT_FALSE(ParseJson(""));
  EXPECT_FALSE(ParseJson("{\"a\": 1"));
}

TEST(JsonTest, AccessorsFallBackOnMissingOrMistypedMembers) {
  auto doc = ParseJson(R"({"s":"x","n":5,"b":true,"arr":["p",1,"q"],"m":{"k":"v","n":2}})");
  ASSERT_TRUE(doc);
  EXPECT_EQ(JsonString(*doc, "s"), "x");
  EXPECT_EQ(JsonString(*doc, "n", "fb"), "fb");
  EXPECT_EQ(JsonInt(*doc, "n"), 5);
  EXPECT_EQ(JsonInt(*doc, "s", 7), 7);
  EXPECT_TRUE(JsonBool(*doc, "b"));
  EXPECT_FALSE(JsonBool(*doc, "missing"));
  EXPECT_EQ(JsonStringArray(*doc, "arr"), (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(JsonStringMap(*doc, "m"), (std::map<std::string, std::string>{{"k", "v"}}));
  rapidjson::Value not_object(5);
  EXPECT_EQ(JsonMember(not_object, "a"), nullptr);
}

TEST(JsonTest, TypeNamesAreJsonsOwn) {
  auto doc = ParseJson(R"([null,true,false,0,-1.5,18446744073709551615,"s",[],{}])");
  ASSERT_TRUE(doc);
  std::vector<std::string> names;
  for (const auto& v : doc->GetArray()) names.emplace_back(JsonTypeName(v));
  EXPECT_EQ(names, (std::vector<std::string>{"null", "boolean", "boolean", "number", "number",
                                             "number", "string", "array", "object"}));
}

TEST(JsonTest, KeepsEmbeddedNulBytesInStrings) {
  auto doc = ParseJson(R"({"s":"a\u0000b"})");
  ASSERT_TRUE(doc);
  EXPECT_EQ(JsonString(*doc, "s"), std::string("a\0b", 3));
}

// 200,000 nested arrays (400 KB) crashed the recursive parser with a stack overflow.
TEST(JsonTest, DeepNestingIsRefusedWithItsPositionNotCrashed) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto doc = ParseJson(deep);
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().message, "JSON:1:65: objects and arrays nested deeper than 64 levels");

  JsonParseOptions relaxed;
  relaxed.allow_comments_and_trailing_commas = true;
  relaxed.source_name = "f.json";
  std::string objects = "{\n";
  for (int i = 0; i < 100000; ++i) objects += "\"a\": {";
  auto deep_objects = ParseJson(objects, relaxed);
  ASSERT_FALSE(deep_objects);
  EXPECT_EQ(deep_objects.error().message.rfind("f.json:2:", 0), 0u) << deep_objects.error().message;
  EXPECT_NE(deep_objects.error().message.find("nested deeper than 64 levels"), std::string::npos);
}

TEST(JsonTest, NestingUpToTheLimitParsesAndSerialises) {
  const std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  auto doc = ParseJson(at_limit);
  ASSERT_TRUE(doc) << doc.error().ToString();
  EXPECT_EQ(ToJson(*doc), at_limit);
  EXPECT_FALSE(ParseJson("[" + at_limit + "]"));

  JsonParseOptions shallow;
  shallow.max_depth = 2;
  EXPECT_FALSE(ParseJson(R"({"a":[1,{}]})", shallow));
  EXPECT_TRUE(ParseJson(R"({"a":[1,2]})", shallow));
  // Brackets inside strings are not nesting.
  EXPECT_TRUE(ParseJson("[\"" + std::string(1000, '[') + "\"]", shallow));
}

TEST(JsonTest, DeepButUnterminatedInputIsASyntaxOrDepthErrorNeverACrash) {
  EXPECT_FALSE(ParseJson(std::string(1u << 20, '[')));
  EXPECT_FALSE(ParseJson(std::string(1u << 20, '{')));
  EXPECT_FALSE(ParseJson(std::string(1u << 20, ']')));
}

TEST(JsonTest, Utf8IsValidatedOnlyWhenAsked) {
  JsonParseOptions strict;
  strict.validate_utf8 = true;
  EXPECT_TRUE(ParseJson(R"({"a":"caf\u00e9 \ud83d\ude00 â"})", strict));
  const std::vector<std::string> bad = {
      std::string("{\"a\":\"\xff\"}"),          // not UTF-8 at all
      std::string("{\"a\":\"\xc0\xaf\"}"),      // an overlong '/'
      std::string("{\"a\":\"\xed\xa0\x80\"}"),  // a raw surrogate
      std::string(R"({"a":"\udc00"})"),         // an escaped lone one
      std::string(R"({"\udfff":1})"),           // in a member name
  };
  for (const std::string& text : bad) {
    EXPECT_FALSE(ParseJson(text, strict)) << text;
    EXPECT_TRUE(ParseJson(text)) << text;  // the other readers take bytes as they come
  }
}

TEST(StringsTest, IsValidUtf8) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(
      IsValidUtf8("\xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf"));  // up to U+10FFFF
  for (const char* bad : {"\x80", "\xc3", "\xe2\x9c", "\xf0\x9f\x98", "\xc0\x80", "\xe0\x80\x80",
                          "\xed\xb0\x80", "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80", "\xff"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << bad;
  }
}

}  // namespace
}  // namespace sandrun

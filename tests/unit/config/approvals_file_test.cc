// Tests of the approvals file format: parsing and normalisation (table), refusals (table),
// resolution per field (table), serialisation. The file on disk: approvals_io_test.cc.
#include "runner/config/approvals_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sandbox/base/json.h"

namespace sandrun::config {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const char kPath[] = "/s/exec-approvals.json";

// The file as compact JSON, with every id that the input did not contain replaced by "NEW".
std::string Canonical(ApprovalsFile file, const std::string& input) {
  for (auto& [agent, policy] : file.agents) {
    for (AllowlistEntry& e : policy.allowlist) {
      if (input.find("\"" + e.id + "\"") == std::string::npos) e.id = "NEW";
    }
  }
  auto doc = ParseJson(SerializeApprovals(file));
  return doc ? ToJson(*doc) : "unparsable: " + doc.error().message;
}

// ---------------------------------------------------------------------------------------------
// Parsing and normalisation.

struct NormaliseCase {
  const char* name;
  std::string input;
  std::string expected;  // Canonical() of the parsed file
  size_t warnings;
  std::string warning;  // a substring of the first warning, if any
};

class NormaliseTest : public ::testing::TestWithParam<NormaliseCase> {};

TEST_P(NormaliseTest, Parses) {
  const NormaliseCase& c = GetParam();
  std::vector<std::string> warnings;
  auto file = ParseApprovals(c.input, kPath, &warnings);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(Canonical(*file, c.input), c.expected);
  EXPECT_EQ(warnings.size(), c.warnings) << ::testing::PrintToString(warnings);
  if (!c.warning.empty() && !warnings.empty()) {
    EXPECT_THAT(warnings[0], HasSubstr(c.warning));
  }
  // A normalised file survives a write and a read unchanged.
  auto again = ParseApprovals(SerializeApprovals(*file), kPath);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *file);
}

#define E "{\"version\":1,\"defaults\":{},\"agents\":{}}"
#define AGENTS(x) "{\"version\":1,\"defaults\":{},\"agents\":{" x "}}"
#define DEFAULTS(x) "{\"version\":1,\"defaults\":{" x "},\"agents\":{}}"
#define MAIN_LIST(x) AGENTS("\"main\":{\"allowlist\":[" x "]}")

const NormaliseCase kNormaliseCases[] = {
    {"Minimal", R"({"version": 1})", E, 0, ""},
    {"VersionAsDouble", R"({"version": 1.0})", E, 0, ""},
    {"EmptyText", "", E, 0, ""},
    {"OnlyWhitespaceAndComments", " \n// nothing yet\n", E, 0, ""},
    {"ByteOrderMark", "\xEF\xBB\xBF{\"version\":1}", E, 0, ""},
    {"CommentsAndTrailingCommas", "{\n  // hand edited\n  \"version\": 1,\n}", E, 0, ""},
    {"AllDefaults",
     R"({"version":1,"defaults":{"security":"allowlist","ask":"on-miss","askFallback":"deny",
        "autoAllowSkills":true}})",
     DEFAULTS(
         R"("security":"allowlist","ask":"on-miss","askFallback":"deny","autoAllowSkills":true)"),
     0, ""},
    {"NullMeansUnset",
     R"({"version":1,"defaults":{"security":null,"ask":null,"askFallback":null,
        "autoAllowSkills":null},"agents":{"main":{"allowlist":null}}})",
     AGENTS("\"main\":{}"), 0, ""},
    {"NullSections", R"({"version":1,"socket":null,"defaults":null,"agents":null})", E, 0, ""},
    {"NullAgentSkipped", R"({"version":1,"agents":{"main":null}})", E, 0, ""},
    {"CapitalisedEnumDropped", R"({"version":1,"defaults":{"ask":"Always"}})",
     DEFAULTS("\"ask\":\"Always\""), 1, "/s/exec-approvals.json:1:32: defaults.ask: expected one"},
    {"PaddedEnumDropped", R"({"version":1,"agents":{"main":{"security":" full"}}})",
     AGENTS(R"("main":{"security":" full"})"), 1, "defaults apply, not the wildcard"},
    {"NumberEnumDropped", R"({"version":1,"agents":{"*":{"askFallback":2}}})",
     AGENTS(R"("*":{"askFallback":2})"), 1, "agents[\"*\"].askFallback: expected one of deny"},
    {"ObjectEnumDropped", R"({"version":1,"defaults":{"security":{"a":[1]}}})",
     DEFAULTS(R"("security":{"a":[1]})"), 1, "got an object (ignored)"},
    {"BoolAsStringDropped", R"({"version":1,"defaults":{"autoAllowSkills":"yes"}})",
     DEFAULTS(R"("autoAllowSkills":"yes")"), 1, "expected true or false"},
    {"StringItem", R"({"version":1,"agents":{"main":{"allowlist":["/usr/bin/rg"]}}})",
     MAIN_LIST(R"({"id":"NEW","pattern":"/usr/bin/rg"})"), 0, ""},
    {"StringItemTrimmed", R"({"version":1,"agents":{"main":{"allowlist":["  ~/bin/x \n"]}}})",
     MAIN_LIST(R"({"id":"NEW","pattern":"~/bin/x"})"), 0, ""},
    {"EmptyStringItemDropped", R"({"version":1,"agents":{"main":{"allowlist":["  ", "/a"]}}})",
     MAIN_LIST(R"({"id":"NEW","pattern":"/a"})"), 1, "agents.main.allowlist[0]: expected"},
    {"NumberItemDropped", R"({"version":1,"agents":{"main":{"allowlist":[42]}}})",
     AGENTS("\"main\":{}"), 1, "got 42 (dropped)"},
    {"NullItemDropped", R"({"version":1,"agents":{"main":{"allowlist":[null]}}})",
     AGENTS("\"main\":{}"), 1, "got null (dropped)"},
    {"ArrayItemDropped", R"({"version":1,"agents":{"main":{"allowlist":[["/a"]]}}})",
     AGENTS("\"main\":{}"), 1, "got an array (dropped)"},
    {"ItemWithoutPatternDropped",
     R"({"version":1,"agents":{"main":{"allowlist":[{"id":"x","source":"allow-always"}]}}})",
     AGENTS("\"main\":{}"), 1, "got an object (dropped)"},
    {"ItemWithEmptyPatternDropped",
     R"({"version":1,"agents":{"main":{"allowlist":[{"pattern":" "}]}}})", AGENTS("\"main\":{}"), 1,
     "got pattern \" \" (dropped)"},
    {"ItemWithNumberPatternDropped",
     R"({"version":1,"agents":{"main":{"allowlist":[{"pattern":7}]}}})", AGENTS("\"main\":{}"), 1,
     "got pattern 7"},
    {"FullItemKept",
     R"({"version":1,"agents":{"main":{"allowlist":[{"id":"i1","pattern":"~/bin/rg",
        "source":"allow-always","argPattern":"^-n","lastUsedAt":1737150000000,
        "lastUsedCommand":"rg -n TODO","lastResolvedPath":"/home/u/bin/rg"}]}}})",
     MAIN_LIST(R"({"id":"i1","pattern":"~/bin/rg","source":"allow-always","argPattern":"^-n",)"
               R"("lastUsedAt":1737150000000,"lastUsedCommand":"rg -n TODO",)"
               R"("lastResolvedPath":"/home/u/bin/rg"})"),
     0, ""},
    {"ItemPatternTrimmed", R"({"version":1,"agents":{"main":{"allowlist":[{"id":"a",
        "pattern":" /bin/ls "}]}}})",
     MAIN_LIST(R"({"id":"a","pattern":"/bin/ls"})"), 0, ""},
    {"CommandTextStripped",
     R"({"version":1,"agents":{"main":{"allowlist":[{"id":"a","pattern":"/bin/ls",
        "commandText":"ls -la"}]}}})",
     MAIN_LIST(R"({"id":"a","pattern":"/bin/ls"})"), 0, ""},
    {"MissingIdGenerated", R"({"version":1,"agents":{"main":{"allowlist":[{"pattern":"/a"}]}}})",
     MAIN_LIST(R"({"id":"NEW","pattern":"/a"})"), 0, ""},
    {"EmptyIdGenerated",
     R"({"version":1,"agents":{"main":{"allowlist":[{"id":"","pattern":"/a"}]}}})",
     MAIN_LIST(R"({"id":"NEW","pattern":"/a"})"), 0, ""},
    {"NumberIdReplaced",
     R"({"version":1,"agents":{"main":{"allowlist":[{"id":5,"pattern":"/a"}]}}})",
     MAIN_LIST(R"({"id":"NEW","pattern":"/a"})"), 1, "agents.main.allowlist[0].id: expected a"},
    {"RepeatedIdReplaced",
     R"({"version":1,"agents":{"*":{"allowlist":[{"id":"d","pattern":"/a"}]},
        "main":{"allowlist":[{"id":"d","pattern":"/b"}]}}})",
     AGENTS(R"("*":{"allowlist":[{"id":"d","pattern":"/a"}]},)"
            R"("main":{"allowlist":[{"id":"NEW","pattern":"/b"}]})"),
     1, "is used by an earlier entry"},
    {"BadLastUsedAtDropped",
     R"({"version":1,"agents":{"main":{"allowlist":[{"id":"a","pattern":"/a",
        "lastUsedAt":"yesterday"}]}}})",
     MAIN_LIST(R"({"id":"a","pattern":"/a"})"), 1, "expected a time in unix milliseconds"},
    {"FractionalLastUsedAtDropped",
     R"({"version":1,"agents":{"main":{"allowlist":[{"id":"a","pattern":"/a",
        "lastUsedAt":1.5}]}}})",
     MAIN_LIST(R"({"id":"a","pattern":"/a"})"), 1, "got 1.5"},
    {"HugeLastUsedAtDropped",
     R"({"version":1,"agents":{"main":{"allowlist":[{"id":"a","pattern":"/a",
        "lastUsedAt":18446744073709551615}]}}})",
     MAIN_LIST(R"({"id":"a","pattern":"/a"})"), 1, "lastUsedAt"},
    {"IntegralDoubleLastUsedAtKept",
     R"({"version":1,"agents":{"main":{"allowlist":[{"id":"a","pattern":"/a",
        "lastUsedAt":1737150000000.0}]}}})",
     MAIN_LIST(R"({"id":"a","pattern":"/a","lastUsedAt":1737150000000})"), 0, ""},
    {"WrongTypeSourceDropped",
     R"({"version":1,"agents":{"main":{"allowlist":[{"id":"a","pattern":"/a","source":1,
        "argPattern":null}]}}})",
     MAIN_LIST(R"({"id":"a","pattern":"/a"})"), 1, "agents.main.allowlist[0].source: expected a"},
    {"UnknownItemKeyDropped",
     R"({"version":1,"agents":{"main":{"allowlist":[{"id":"a","pattern":"/a","x":1}]}}})",
     MAIN_LIST(R"({"id":"a","pattern":"/a"})"), 1, "allowlist[0].x: unknown key (dropped)"},
    {"UnknownTopLevelKeyDropped", "{\"version\":1,\n \"extra\":{\"a\":1}}", E, 1,
     "/s/exec-approvals.json:2:2: extra: unknown key (dropped)"},
    {"UnknownAgentKeyDropped", R"({"version":1,"agents":{"main":{"mode":"full"}}})",
     AGENTS("\"main\":{}"), 1, "agents.main.mode: unknown key"},
    {"UnknownDefaultsKeyDropped", R"({"version":1,"defaults":{"tools":{}}})", E, 1,
     "defaults.tools: unknown key"},
    {"DefaultsAllowlistDropped", R"({"version":1,"defaults":{"allowlist":["/a"]}})", E, 1,
     "allowlists belong to agent sections"},
    {"SocketKept", R"({"version":1,"socket":{"path":"~/.openclaw/x.sock","token":"tok"}})",
     R"({"version":1,"socket":{"path":"~/.openclaw/x.sock","token":"tok"},"defaults":{},)"
     R"("agents":{}})",
     0, ""},
    {"SocketPathOnly", R"({"version":1,"socket":{"path":"/p","token":null}})",
     R"({"version":1,"socket":{"path":"/p"},"defaults":{},"agents":{}})", 0, ""},
    {"SocketUnknownKeyDropped", R"({"version":1,"socket":{"mode":1}})", E, 1,
     "socket.mode: unknown key"},
    {"AgentsKeptSorted",
     R"({"version":1,"agents":{"zed":{"ask":"always"},"*":{"ask":"off"},"main":{}}})",
     AGENTS(R"("*":{"ask":"off"},"main":{},"zed":{"ask":"always"})"), 0, ""},
    {"LegacyDefaultMergedIntoMain",
     R"({"version":1,"agents":{
        "default":{"security":"full","ask":"always","autoAllowSkills":true,"allowlist":[
          {"id":"d1","pattern":"/USR/BIN/RG"},{"id":"d2","pattern":"/bin/ls","argPattern":"-l"},
          {"id":"d3","pattern":"/bin/cat"}]},
        "main":{"security":"allowlist","allowlist":[{"id":"m1","pattern":"/usr/bin/rg"},
          {"id":"m2","pattern":"/bin/ls"}]}}})",
     AGENTS(R"("main":{"security":"allowlist","ask":"always","autoAllowSkills":true,)"
            R"("allowlist":[{"id":"m1","pattern":"/usr/bin/rg"},{"id":"m2","pattern":"/bin/ls"},)"
            R"({"id":"d2","pattern":"/bin/ls","argPattern":"-l"},)"
            R"({"id":"d3","pattern":"/bin/cat"}]})"),
     0, ""},
    {"LegacyDefaultAloneBecomesMain",
     R"({"version":1,"agents":{"default":{"ask":"on-miss","allowlist":["/a"]}}})",
     AGENTS(R"("main":{"ask":"on-miss","allowlist":[{"id":"NEW","pattern":"/a"}]})"), 0, ""},
    {"LegacyDefaultInvalidFillsMain",
     R"({"version":1,"agents":{"default":{"security":"FULL"},"main":{"ask":"off"}}})",
     AGENTS(R"("main":{"security":"FULL","ask":"off"})"), 1, "agents.default.security"},
    {"MainInvalidBeatsLegacyDefault",
     R"({"version":1,"agents":{"default":{"security":"full"},"main":{"security":"Full"}}})",
     AGENTS(R"("main":{"security":"Full"})"), 1, "agents.main.security"},
    {"AgentIdsWithSpecialCharacters", R"({"version":1,"agents":{"a.b c":{"ask":"nope"}}})",
     AGENTS(R"("a.b c":{"ask":"nope"})"), 1, "agents[\"a.b c\"].ask"},
};

INSTANTIATE_TEST_SUITE_P(Approvals, NormaliseTest, ::testing::ValuesIn(kNormaliseCases),
                         [](const auto& row) { return std::string(row.param.name); });

struct ErrorCase {
  const char* name;
  std::string input;
  std::string error;  // the whole message starts with this
};

class ParseErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ParseErrorTest, Fails) {
  auto file = ParseApprovals(GetParam().input, kPath);
  ASSERT_FALSE(file) << SerializeApprovals(*file);
  EXPECT_EQ(file.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(file.error().message, StartsWith(GetParam().error));
}

const ErrorCase kErrorCases[] = {
    {"Truncated", "{\"version\": 1,\n  \"agents\": {", "/s/exec-approvals.json:2:14: "},
    {"MissingComma", "{\n  \"version\": 1\n  \"agents\": {}\n}",
     "/s/exec-approvals.json:3:3: Missing a comma or '}' after an object member."},
    {"TrailingGarbage", "{\"version\":1} x",
     "/s/exec-approvals.json:1:15: The document root must not be followed by other values."},
    {"NotJsonAtAll", "version=1", "/s/exec-approvals.json:1:1: Invalid value."},
    {"RootArray", "[]", "/s/exec-approvals.json:1:1: expected a JSON object"},
    {"RootNull", "null", "/s/exec-approvals.json:1:1: expected a JSON object"},
    {"RootString", "\"x\"", "/s/exec-approvals.json:1:1: expected a JSON object"},
    {"MissingVersion", "{\"agents\":{}}",
     "/s/exec-approvals.json:1:1: missing \"version\": 1 (not an approvals file"},
    {"Version2", "{\n  \"version\": 2}",
     "/s/exec-approvals.json:2:14: version: unsupported version 2 (only 1 is known)"},
    {"VersionString", "{\"version\":\"1\"}", "/s/exec-approvals.json:1:12: version: unsupported"},
    {"VersionNull", "{\"version\":null}", "/s/exec-approvals.json:1:12: version: unsupported"},
    {"Version1Point5", "{\"version\":1.5}", "/s/exec-approvals.json:1:12: version: unsupported"},
    {"SocketString", "{\"version\":1,\"socket\":\"/p\"}",
     "/s/exec-approvals.json:1:23: socket: expected an object, got \"/p\""},
    {"SocketPathNumber", "{\"version\":1,\"socket\":{\"path\":1}}",
     "/s/exec-approvals.json:1:31: socket.path: expected a string, got 1"},
    {"DefaultsArray", "{\"version\":1,\"defaults\":[]}",
     "/s/exec-approvals.json:1:25: defaults: expected an object, got an array"},
    {"AgentsArray", "{\"version\":1,\"agents\":[]}",
     "/s/exec-approvals.json:1:23: agents: expected an object, got an array"},
    {"AgentString", "{\"version\":1,\"agents\":{\"main\":\"full\"}}",
     "/s/exec-approvals.json:1:31: agents.main: expected an object, got \"full\""},
    {"WildcardNumber", "{\"version\":1,\"agents\":{\"*\":1}}",
     "/s/exec-approvals.json:1:28: agents[\"*\"]: expected an object, got 1"},
    {"AllowlistObject", "{\"version\":1,\"agents\":{\"main\":{\"allowlist\":{}}}}",
     "/s/exec-approvals.json:1:44: agents.main.allowlist: expected an array, got an object"},
    {"AllowlistString", "{\"version\":1,\"agents\":{\"main\":{\"allowlist\":\"/a\"}}}",
     "/s/exec-approvals.json:1:44: agents.main.allowlist: expected an array"},
    {"DuplicateKey", "{\"version\":1,\n\"agents\":{},\n\"agents\":{}}",
     "/s/exec-approvals.json:3:1: duplicate key agents (first at line 2)"},
    {"TooDeep", "{\"version\":1,\"x\":" + std::string(100, '[') + std::string(100, ']') + "}",
     "/s/exec-approvals.json:1:"},
};

INSTANTIATE_TEST_SUITE_P(Approvals, ParseErrorTest, ::testing::ValuesIn(kErrorCases),
                         [](const auto& row) { return std::string(row.param.name); });

// ---------------------------------------------------------------------------------------------
// Resolution.

struct ResolveCase {
  const char* name;
  std::string json;
  std::string agent;
  Security fallback_security;
  Ask fallback_ask;
  Security security;
  Ask ask;
  Security ask_fallback;
  bool auto_allow_skills;
  // sources of security, ask, askFallback, autoAllowSkills
  std::vector<std::string> sources;
};

class ResolveTest : public ::testing::TestWithParam<ResolveCase> {};

TEST_P(ResolveTest, Resolves) {
  const ResolveCase& c = GetParam();
  auto file = ParseApprovals(c.json, kPath);
  ASSERT_TRUE(file) << file.error().message;
  for (const ApprovalsFile& f : {*file, *ParseApprovals(SerializeApprovals(*file), kPath)}) {
    ResolvedApprovals r = ResolveApprovals(f, c.agent, c.fallback_security, c.fallback_ask);
    EXPECT_EQ(r.security, c.security);
    EXPECT_EQ(r.ask, c.ask);
    EXPECT_EQ(r.ask_fallback, c.ask_fallback);
    EXPECT_EQ(r.auto_allow_skills, c.auto_allow_skills);
    std::vector<std::string> sources = {r.sources["security"], r.sources["ask"],
                                        r.sources["askFallback"], r.sources["autoAllowSkills"]};
    EXPECT_EQ(sources, c.sources);
  }
}

using S = Security;
using A = Ask;
const std::vector<std::string> kAllFallback = {"tools.exec", "tools.exec", "built-in", "built-in"};

const ResolveCase kResolveCases[] = {
    {"EmptyFileUsesFallbacks", R"({"version":1})", "main", S::kAllowlist, A::kOnMiss, S::kAllowlist,
     A::kOnMiss, S::kFull, false, kAllFallback},
    {"CallerFallbacksPassThrough", "", "main", S::kDeny, A::kAlways, S::kDeny, A::kAlways, S::kFull,
     false, kAllFallback},
    {"DefaultsOverFallbacks",
     R"({"version":1,"defaults":{"security":"deny","ask":"always","askFallback":"allowlist",
        "autoAllowSkills":true}})",
     "main",
     S::kFull,
     A::kOff,
     S::kDeny,
     A::kAlways,
     S::kAllowlist,
     true,
     {"defaults.security", "defaults.ask", "defaults.askFallback", "defaults.autoAllowSkills"}},
    {"WildcardOverDefaults",
     R"({"version":1,"defaults":{"security":"deny","ask":"always"},
        "agents":{"*":{"security":"allowlist","autoAllowSkills":true}}})",
     "main",
     S::kFull,
     A::kOff,
     S::kAllowlist,
     A::kAlways,
     S::kFull,
     true,
     {"agents.*.security", "defaults.ask", "built-in", "agents.*.autoAllowSkills"}},
    {"AgentOverWildcard",
     R"({"version":1,"agents":{"*":{"security":"allowlist","ask":"on-miss"},
        "main":{"security":"full","askFallback":"deny"}}})",
     "main",
     S::kDeny,
     A::kOff,
     S::kFull,
     A::kOnMiss,
     S::kDeny,
     false,
     {"agents.main.security", "agents.*.ask", "agents.main.askFallback", "built-in"}},
    {"InvalidAgentValueSkipsWildcard",
     R"({"version":1,"defaults":{"security":"deny"},
        "agents":{"*":{"security":"full"},"main":{"security":"Full"}}})",
     "main",
     S::kAllowlist,
     A::kOff,
     S::kDeny,
     A::kOff,
     S::kFull,
     false,
     {"defaults.security", "tools.exec", "built-in", "built-in"}},
    {"InvalidAgentValueWithoutDefaultsFallsBack",
     R"({"version":1,"agents":{"*":{"ask":"always"},"main":{"ask":"sometimes"}}})", "main",
     S::kFull, A::kOnMiss, S::kFull, A::kOnMiss, S::kFull, false, kAllFallback},
    {"InvalidAgentBoolSkipsWildcard",
     R"({"version":1,"agents":{"*":{"autoAllowSkills":true},"main":{"autoAllowSkills":1}}})",
     "main", S::kFull, A::kOff, S::kFull, A::kOff, S::kFull, false, kAllFallback},
    {"InvalidWildcardFallsToDefaults",
     R"({"version":1,"defaults":{"ask":"on-miss"},"agents":{"*":{"ask":"ALWAYS"}}})",
     "main",
     S::kFull,
     A::kOff,
     S::kFull,
     A::kOnMiss,
     S::kFull,
     false,
     {"tools.exec", "defaults.ask", "built-in", "built-in"}},
    {"NullAgentValueUsesWildcard",
     R"({"version":1,"agents":{"*":{"security":"deny"},"main":{"security":null}}})",
     "main",
     S::kFull,
     A::kOff,
     S::kDeny,
     A::kOff,
     S::kFull,
     false,
     {"agents.*.security", "tools.exec", "built-in", "built-in"}},
    {"AgentWithoutSectionUsesWildcard",
     R"({"version":1,"agents":{"*":{"ask":"always"},"main":{"ask":"off"}}})",
     "ops",
     S::kFull,
     A::kOff,
     S::kFull,
     A::kAlways,
     S::kFull,
     false,
     {"tools.exec", "agents.*.ask", "built-in", "built-in"}},
    {"OtherAgentIgnored", R"({"version":1,"agents":{"ops":{"security":"deny"}}})", "main",
     S::kAllowlist, A::kOff, S::kAllowlist, A::kOff, S::kFull, false, kAllFallback},
    {"EmptyAgentIdIsMain",
     R"({"version":1,"agents":{"main":{"security":"deny"}}})",
     "",
     S::kFull,
     A::kOff,
     S::kDeny,
     A::kOff,
     S::kFull,
     false,
     {"agents.main.security", "tools.exec", "built-in", "built-in"}},
    {"NamedAgent",
     R"({"version":1,"agents":{"ops":{"security":"allowlist","ask":"always",
        "askFallback":"allowlist","autoAllowSkills":false}}})",
     "ops",
     S::kFull,
     A::kOff,
     S::kAllowlist,
     A::kAlways,
     S::kAllowlist,
     false,
     {"agents.ops.security", "agents.ops.ask", "agents.ops.askFallback",
      "agents.ops.autoAllowSkills"}},
    {"WildcardAgentItself",
     R"({"version":1,"agents":{"*":{"ask":"always"}}})",
     "*",
     S::kFull,
     A::kOff,
     S::kFull,
     A::kAlways,
     S::kFull,
     false,
     {"tools.exec", "agents.*.ask", "built-in", "built-in"}},
    {"LegacyDefaultResolvesAsMain",
     R"({"version":1,"agents":{"*":{"security":"full"},"default":{"security":"deny"}}})",
     "main",
     S::kAllowlist,
     A::kOff,
     S::kDeny,
     A::kOff,
     S::kFull,
     false,
     {"agents.main.security", "tools.exec", "built-in", "built-in"}},
    {"InvalidDefaultsFallsBack", R"({"version":1,"defaults":{"askFallback":"never"}})", "main",
     S::kFull, A::kOff, S::kFull, A::kOff, S::kFull, false, kAllFallback},
    {"MixedPerField",
     R"({"version":1,"defaults":{"askFallback":"deny","ask":"off"},
        "agents":{"*":{"ask":"on-miss","security":"full"},"main":{"security":"allowlist",
        "ask":"bad"}}})",
     "main",
     S::kDeny,
     A::kAlways,
     S::kAllowlist,
     A::kOff,
     S::kDeny,
     false,
     {"agents.main.security", "defaults.ask", "defaults.askFallback", "built-in"}},
};

INSTANTIATE_TEST_SUITE_P(Approvals, ResolveTest, ::testing::ValuesIn(kResolveCases),
                         [](const auto& row) { return std::string(row.param.name); });

TEST(ResolveAllowlistTest, WildcardEntriesComeFirst) {
  auto file = ParseApprovals(R"({"version":1,"agents":{
      "main":{"allowlist":[{"id":"m","pattern":"/m"}]},
      "*":{"allowlist":[{"id":"w","pattern":"/w"}]},
      "ops":{"allowlist":[{"id":"o","pattern":"/o"}]}}})",
                             kPath);
  ASSERT_TRUE(file);
  auto ids = [&](const std::string& agent) {
    std::vector<std::string> out;
    for (const auto& e : ResolveApprovals(*file, agent, S::kFull, A::kOff).allowlist) {
      out.push_back(e.id);
    }
    return out;
  };
  EXPECT_EQ(ids("main"), (std::vector<std::string>{"w", "m"}));
  EXPECT_EQ(ids(""), (std::vector<std::string>{"w", "m"}));
  EXPECT_EQ(ids("ops"), (std::vector<std::string>{"w", "o"}));
  EXPECT_EQ(ids("nobody"), (std::vector<std::string>{"w"}));
  EXPECT_EQ(ids("*"), (std::vector<std::string>{"w"}));
}

// ---------------------------------------------------------------------------------------------
// Serialisation.

TEST(SerializeTest, IndentedStableText) {
  ApprovalsFile f;
  f.defaults.ask = Ask::kOnMiss;
  f.agents["main"].security = Security::kAllowlist;
  f.agents["main"].allowlist.push_back({"id1", "/bin/ls", "allow-always", "", 5, "ls", "/bin/ls"});
  f.agents["*"];
  EXPECT_EQ(SerializeApprovals(f),
            "{\n"
            "  \"version\": 1,\n"
            "  \"defaults\": {\n"
            "    \"ask\": \"on-miss\"\n"
            "  },\n"
            "  \"agents\": {\n"
            "    \"*\": {},\n"
            "    \"main\": {\n"
            "      \"security\": \"allowlist\",\n"
            "      \"allowlist\": [\n"
            "        {\n"
            "          \"id\": \"id1\",\n"
            "          \"pattern\": \"/bin/ls\",\n"
            "          \"source\": \"allow-always\",\n"
            "          \"lastUsedAt\": 5,\n"
            "          \"lastUsedCommand\": \"ls\",\n"
            "          \"lastResolvedPath\": \"/bin/ls\"\n"
            "        }\n"
            "      ]\n"
            "    }\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(SerializeApprovals(ApprovalsFile{}),
            "{\n  \"version\": 1,\n  \"defaults\": {},\n  \"agents\": {}\n}\n");
}

TEST(SerializeTest, RoundTripOfEverything) {
  ApprovalsFile f;
  f.socket_path = "/run/x.sock";
  f.socket_token = "t0k";
  f.defaults = {Security::kDeny, Ask::kAlways, Security::kAllowlist, true, {}, {}};
  ApprovalsPolicy& star = f.agents["*"];
  star.ask = Ask::kOff;
  star.invalid["security"] = "\"FULL\"";
  star.allowlist.push_back({NewEntryId(), "/usr/bin/*", "", "", std::nullopt, "", ""});
  ApprovalsPolicy& main = f.agents["main"];
  main.invalid["autoAllowSkills"] = "{\"x\":[1,null]}";
  main.allowlist.push_back({"a", "~/bin/rg", "allow-always", "^-n$", int64_t{1737150000000},
                            "rg -n \"TODO\"\n\ttab", "/home/u/bin/rg"});
  main.allowlist.push_back({"b", ExactCommandPattern("make all"), "operator", "", 0, "", ""});
  f.agents["ünïcödé agent"].security = Security::kFull;
  std::string text = SerializeApprovals(f);
  std::vector<std::string> warnings;
  auto back = ParseApprovals(text, kPath, &warnings);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, f);
  EXPECT_EQ(SerializeApprovals(*back), text);
  EXPECT_EQ(warnings.size(), 2u);  // the two invalid values, reported again
}

}  // namespace
}  // namespace sandrun::config

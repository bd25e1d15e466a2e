// The one definition of each tool's parameters and result: the schemas it publishes, the type
// checks it makes, and that the parsers (ParseToolCall, ParseProcessRequest) read exactly the
// parameters it declares.
#include "runner/wire/tool_schemas.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "runner/api/exec_approvals.h"
#include "runner/api/policy_cmd.h"
#include "runner/api/tool_call.h"
#include "runner/sessions/process_request.h"
#include "sandbox/base/json.h"

namespace sandrun::wire {
namespace {

const ToolSpec& Spec(std::string_view name) {
  const ToolSpec* spec = FindToolSpec(name);
  EXPECT_NE(spec, nullptr) << name;
  return *spec;
}

std::vector<std::string> ParamNames(const ToolSpec& spec) {
  std::vector<std::string> names;
  for (const ParamSpec& p : spec.params) names.emplace_back(p.name);
  return names;
}

rapidjson::Document Parse(std::string_view json) {
  auto doc = ParseJson(json);
  EXPECT_TRUE(doc) << json << ": " << doc.error().ToString();
  return doc ? std::move(doc).value() : rapidjson::Document();
}

// CheckToolParams on JSON text: "" when accepted, else the refusal's message (its wire code
// checked to be invalid-request).
std::string Check(const ToolSpec& spec, std::string_view json) {
  rapidjson::Document doc = Parse(json);
  Status status = CheckToolParams(spec, doc);
  if (status) return "";
  EXPECT_EQ(status.error().WireCode(), "invalid-request") << json;
  return status.error().message;
}

// A call of `spec`'s tool with its required parameters and `name`: `value` (JSON text). The
// required ones have values every parser accepts, unless `name` is one of them.
std::string CallWith(const ToolSpec& spec, std::string_view name, std::string_view value) {
  static const std::map<std::string_view, std::string_view> kRequired = {
      {"command", R"("true")"},
      {"action", R"("poll")"},
      {"input", R"("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch")"}};
  std::string json = R"({"tool":")" + std::string(spec.name) + "\"";
  for (const ParamSpec& p : spec.params) {
    if (!p.required || p.name == name) continue;
    json += ",\"" + std::string(p.name) + "\":" + std::string(kRequired.at(p.name));
  }
  return json + ",\"" + std::string(name) + "\":" + std::string(value) + "}";
}

// ---- The specs ------------------------------------------------------------------------------

TEST(ToolSpecsTest, FourToolsInOrderWithValidNamesAndTheirAnnotations) {
  std::vector<std::string> names;
  const std::regex valid("[A-Za-z0-9_.-]{1,128}");
  for (const ToolSpec& spec : ToolSpecs()) {
    names.emplace_back(spec.name);
    EXPECT_TRUE(std::regex_match(std::string(spec.name), valid)) << spec.name;
    EXPECT_EQ(FindToolSpec(spec.name), &spec);
    EXPECT_FALSE(spec.title.empty()) << spec.name;
    EXPECT_GT(spec.description.size(), 100u) << spec.name << ": a description an agent can use";
    for (const ParamSpec& p : spec.params) {
      EXPECT_FALSE(p.description.empty()) << spec.name << "." << p.name;
      EXPECT_EQ(FindParam(spec, p.name), &p);
    }
    EXPECT_EQ(FindParam(spec, "tool"), nullptr);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"exec", "process", "apply_patch", "policy_check"}));
  EXPECT_EQ(FindToolSpec("shell"), nullptr);
  EXPECT_EQ(&ToolSpecs(), &ToolSpecs());

  const ToolSpec& exec = Spec("exec");
  EXPECT_TRUE(exec.destructive);
  EXPECT_FALSE(exec.read_only);
  EXPECT_FALSE(exec.open_world);
  EXPECT_TRUE(Spec("process").destructive);
  EXPECT_TRUE(Spec("apply_patch").destructive);
  const ToolSpec& check = Spec("policy_check");
  EXPECT_TRUE(check.read_only);
  EXPECT_FALSE(check.destructive);
  EXPECT_TRUE(check.idempotent);
}

TEST(ToolSpecsTest, PolicyCheckTakesExactlyExecsParameters) {
  const ToolSpec& exec = Spec("exec");
  const ToolSpec& check = Spec("policy_check");
  ASSERT_EQ(ParamNames(check), ParamNames(exec));
  for (size_t i = 0; i < exec.params.size(); ++i) {
    EXPECT_EQ(check.params[i].type, exec.params[i].type) << exec.params[i].name;
    EXPECT_EQ(check.params[i].required, exec.params[i].required) << exec.params[i].name;
    EXPECT_EQ(check.params[i].want, exec.params[i].want) << exec.params[i].name;
  }
}

// The JSON Schema type each ParamType is published as.
std::string SchemaType(ParamType type) {
  switch (type) {
    case ParamType::kString:
      return R"({"type":"string"})";
    case ParamType::kNumber:
      return R"({"type":"number"})";
    case ParamType::kInteger:
      return R"({"type":"integer"})";
    case ParamType::kBoolean:
      return R"({"type":"boolean"})";
    case ParamType::kStringMap:
      return R"({"type":"object","additionalProperties":{"type":"string"}})";
    case ParamType::kStringArray:
      return R"({"type":"array","items":{"type":"string"}})";
    case ParamType::kStringOrInteger:
      return R"({"type":["string","integer"]})";
  }
  return "";
}

TEST(ToolSpecsTest, InputSchemaIsJsonListingExactlyTheParameters) {
  for (const ToolSpec& spec : ToolSpecs()) {
    SCOPED_TRACE(spec.name);
    std::string text = InputSchemaJson(spec);
    EXPECT_EQ(text, InputSchemaJson(spec)) << "deterministic";
    rapidjson::Document schema = Parse(text);
    ASSERT_TRUE(schema.IsObject());
    EXPECT_EQ(JsonString(schema, "type"), "object");
    const rapidjson::Value* properties = JsonMember(schema, "properties");
    ASSERT_TRUE(properties != nullptr && properties->IsObject());
    std::vector<std::string> listed, required;
    for (const auto& m : properties->GetObject()) {
      listed.emplace_back(m.name.GetString(), m.name.GetStringLength());
    }
    EXPECT_EQ(listed, ParamNames(spec)) << "the spec's parameters, in its order";
    for (const ParamSpec& p : spec.params) {
      SCOPED_TRACE(p.name);
      if (p.required) required.emplace_back(p.name);
      const rapidjson::Value* listed_prop = JsonMember(*properties, std::string(p.name).c_str());
      ASSERT_NE(listed_prop, nullptr);
      const rapidjson::Value& prop = *listed_prop;
      // Its type members, without description, enum and bounds, are the type's.
      rapidjson::Document type_only;
      type_only.CopyFrom(prop, type_only.GetAllocator());
      for (const char* key : {"description", "enum", "minimum", "maximum"}) {
        type_only.RemoveMember(key);
      }
      EXPECT_EQ(ToJson(type_only), SchemaType(p.type));
      EXPECT_EQ(JsonString(prop, "description"), p.description);
      EXPECT_EQ(JsonStringArray(prop, "enum"),
                std::vector<std::string>(p.enum_values.begin(), p.enum_values.end()));
      for (auto [key, bound] : {std::pair{"minimum", p.minimum}, std::pair{"maximum", p.maximum}}) {
        const rapidjson::Value* v = JsonMember(prop, key);
        ASSERT_EQ(v != nullptr, bound.has_value()) << key;
        if (v != nullptr) {
          ASSERT_TRUE(v->IsNumber()) << key;
          EXPECT_EQ(v->GetDouble(), *bound) << key;
        }
      }
    }
    const rapidjson::Value* req = JsonMember(schema, "required");
    if (required.empty()) {
      EXPECT_EQ(req, nullptr) << "\"required\" only when some are";
    } else {
      EXPECT_EQ(JsonStringArray(schema, "required"), required);
    }
  }
  EXPECT_EQ(JsonStringArray(Parse(InputSchemaJson(Spec("exec"))), "required"),
            std::vector<std::string>{"command"});
  EXPECT_EQ(JsonStringArray(Parse(InputSchemaJson(Spec("process"))), "required"),
            std::vector<std::string>{"action"});
}

// Member `key` of parameter `param` in `tool`'s input schema, as JSON ("(missing)" when absent).
std::string InputMember(std::string_view tool, const char* param, const char* key) {
  rapidjson::Document schema = Parse(InputSchemaJson(Spec(tool)));
  const rapidjson::Value* props = JsonMember(schema, "properties");
  const rapidjson::Value* prop = props ? JsonMember(*props, param) : nullptr;
  const rapidjson::Value* v = prop ? JsonMember(*prop, key) : nullptr;
  return v ? ToJson(*v) : "(missing)";
}

TEST(ToolSpecsTest, EnumsAndBoundsAreAdvertised) {
  EXPECT_EQ(InputMember("exec", "host", "enum"), R"(["auto","sandbox","gateway","node"])");
  EXPECT_EQ(InputMember("exec", "security", "enum"), R"(["deny","allowlist","full"])");
  EXPECT_EQ(InputMember("exec", "ask", "enum"), R"(["off","on-miss","always"])");
  EXPECT_EQ(InputMember("exec", "cpus", "minimum"), "0.01");
  EXPECT_EQ(InputMember("exec", "cpus", "maximum"), "1024");
  EXPECT_EQ(InputMember("exec", "pids", "minimum"), "1");
  EXPECT_EQ(InputMember("exec", "memory", "minimum"), "6291456");
  EXPECT_EQ(InputMember("exec", "timeout", "minimum"), "(missing)") << "0 or less: no limit";
  EXPECT_EQ(
      InputMember("process", "action", "enum"),
      R"(["list","poll","log","write","send-keys","submit","paste","kill","clear","remove"])");
  EXPECT_EQ(InputMember("process", "offset", "minimum"), "0");
}

// ---- Type checks ----------------------------------------------------------------------------

// What every parameter of every tool must be, as its refusal says: the whole table, so that a
// parameter added to a spec (or dropped) fails here until its refusal is written down.
const std::map<std::string, std::map<std::string, std::string>>& Wants() {
  static const auto* const kWants = [] {
    std::map<std::string, std::string> exec = {
        {"command", "a string"},
        {"workdir", "a string"},
        {"env", "an object of strings"},
        {"yieldMs", "a number"},
        {"background", "a boolean"},
        {"timeout", "a number of seconds"},
        {"timeoutSeconds", "a number of seconds"},
        {"pty", "a boolean"},
        {"elevated", "a boolean"},
        {"wait", "a boolean"},
        {"host", "a string"},
        {"security", "a string"},
        {"ask", "a string"},
        {"node", "a string"},
        {"image", "a string"},
        {"network", "a string"},
        {"memory", "a byte count or a size such as \"512m\""},
        {"cpus", "a number"},
        {"pids", "a whole number"},
        {"rm", "a boolean"},
    };
    return new std::map<std::string, std::map<std::string, std::string>>{
        {"exec", exec},
        {"policy_check", exec},
        {"process",
         {{"action", "a string"},
          {"sessionId", "a string"},
          {"data", "a string"},
          {"eof", "a boolean"},
          {"keys", "an array of strings"},
          {"hex", "an array of strings"},
          {"literal", "a string"},
          {"text", "a string"},
          {"bracketed", "a boolean"},
          {"offset", "a number"},
          {"limit", "a number"},
          {"timeout", "a number"}}},
        {"apply_patch", {{"input", "a string"}, {"workdir", "a string"}, {"model", "a string"}}},
    };
  }();
  return *kWants;
}

// A value of the wrong type for each type, and the JSON type the refusal names.
std::pair<std::string, std::string> WrongValue(ParamType type) {
  switch (type) {
    case ParamType::kString:
      return {"7", "number"};
    case ParamType::kNumber:
      return {R"("5")", "string"};
    case ParamType::kInteger:
      return {"2.5", "number"};
    case ParamType::kBoolean:
      return {R"("yes")", "string"};
    case ParamType::kStringMap:
      return {R"(["A=1"])", "array"};
    case ParamType::kStringArray:
      return {R"("Enter")", "string"};
    case ParamType::kStringOrInteger:
      return {"true", "boolean"};
  }
  return {};
}

TEST(CheckToolParamsTest, TheWantsTableCoversEveryParameterOfEveryTool) {
  std::set<std::string> tools;
  for (const ToolSpec& spec : ToolSpecs()) {
    tools.emplace(spec.name);
    ASSERT_TRUE(Wants().count(std::string(spec.name))) << spec.name;
    std::set<std::string> table, declared;
    for (const auto& [name, want] : Wants().at(std::string(spec.name))) table.insert(name);
    for (const std::string& name : ParamNames(spec)) declared.insert(name);
    EXPECT_EQ(table, declared) << spec.name;
  }
  EXPECT_EQ(tools.size(), Wants().size());
}

TEST(CheckToolParamsTest, EveryParameterOfTheWrongTypeIsRefusedWithItsExactMessage) {
  for (const ToolSpec& spec : ToolSpecs()) {
    for (const ParamSpec& p : spec.params) {
      auto [value, got] = WrongValue(p.type);
      std::string json = CallWith(spec, p.name, value);
      std::string want = Wants().at(std::string(spec.name)).at(std::string(p.name));
      EXPECT_EQ(Check(spec, json), std::string(spec.name) + " parameter \"" + std::string(p.name) +
                                       "\" must be " + want + ", got " + got)
          << json;
    }
  }
}

TEST(CheckToolParamsTest, EveryJsonTypeIsNamed) {
  const ToolSpec& exec = Spec("exec");
  for (auto [value, got] : std::vector<std::pair<const char*, const char*>>{{"true", "boolean"},
                                                                            {"1", "number"},
                                                                            {"-1.5", "number"},
                                                                            {"[]", "array"},
                                                                            {"{}", "object"}}) {
    EXPECT_EQ(Check(exec, CallWith(exec, "workdir", value)),
              std::string("exec parameter \"workdir\" must be a string, got ") + got);
  }
  EXPECT_EQ(Check(exec, CallWith(exec, "cpus", "\"x\"")),
            "exec parameter \"cpus\" must be a number, got string");
}

TEST(CheckToolParamsTest, WholeNumbersAreInt64s) {
  const ToolSpec& exec = Spec("exec");
  for (const char* ok : {"0", "-3", "64", "9223372036854775807"}) {
    EXPECT_EQ(Check(exec, CallWith(exec, "pids", ok)), "") << ok;
    EXPECT_EQ(Check(exec, CallWith(exec, "memory", ok)), "") << ok;
  }
  for (const char* bad : {"1.0", "1e3", "9223372036854775808", "18446744073709551615"}) {
    EXPECT_EQ(Check(exec, CallWith(exec, "pids", bad)),
              "exec parameter \"pids\" must be a whole number, got number")
        << bad;
    EXPECT_EQ(Check(exec, CallWith(exec, "memory", bad)),
              "exec parameter \"memory\" must be a byte count or a size such as \"512m\", got "
              "number")
        << bad;
  }
  EXPECT_EQ(Check(exec, CallWith(exec, "memory", "\"512m\"")), "");
}

TEST(CheckToolParamsTest, MapValuesAndArrayItemsAreStrings) {
  const ToolSpec& exec = Spec("exec");
  EXPECT_EQ(Check(exec, CallWith(exec, "env", R"({"A":"1","B":""})")), "");
  EXPECT_EQ(Check(exec, CallWith(exec, "env", "{}")), "");
  EXPECT_EQ(Check(exec, CallWith(exec, "env", R"({"A":"1","B":2})")),
            "exec env value of \"B\" must be a string, got number");
  EXPECT_EQ(Check(exec, CallWith(exec, "env", R"({"A":null})")),
            "exec env value of \"A\" must be a string, got null");
  const ToolSpec& process = Spec("process");
  EXPECT_EQ(Check(process, CallWith(process, "keys", R"(["C-c","Enter"])")), "");
  EXPECT_EQ(Check(process, CallWith(process, "hex", "[]")), "");
  EXPECT_EQ(Check(process, CallWith(process, "keys", R"(["a",1])")),
            "process parameter \"keys\" must be an array of strings, got an array with a number");
  EXPECT_EQ(Check(process, CallWith(process, "hex", "[null]")),
            "process parameter \"hex\" must be an array of strings, got an array with a null");
  EXPECT_EQ(Check(process, CallWith(process, "keys", R"([["x"]])")),
            "process parameter \"keys\" must be an array of strings, got an array with a array");
}

TEST(CheckToolParamsTest, ARequiredParameterMissingOrNullIsRefused) {
  for (const ToolSpec& spec : ToolSpecs()) {
    for (const ParamSpec& p : spec.params) {
      if (!p.required) continue;
      std::string refusal =
          std::string(spec.name) + " parameter \"" + std::string(p.name) + "\" is required";
      EXPECT_EQ(Check(spec, R"({"tool":"x"})"), refusal);
      EXPECT_EQ(Check(spec, CallWith(spec, p.name, "null")), refusal);
    }
  }
  EXPECT_EQ(Check(Spec("process"), R"({"sessionId":"a"})"),
            "process parameter \"action\" is required");
}

TEST(CheckToolParamsTest, RequiredParametersAreCheckedFirst) {
  EXPECT_EQ(Check(Spec("exec"), R"({"workdir":1,"command":2})"),
            "exec parameter \"command\" must be a string, got number");
  EXPECT_EQ(Check(Spec("exec"), R"({"command":"x","workdir":1,"pty":2})"),
            "exec parameter \"workdir\" must be a string, got number")
      << "then the call's own order";
}

TEST(CheckToolParamsTest, NullMeansNotGivenAndUnknownMembersAreIgnored) {
  for (const ToolSpec& spec : ToolSpecs()) {
    for (const ParamSpec& p : spec.params) {
      if (p.required) continue;
      std::string json = CallWith(spec, p.name, "null");
      EXPECT_EQ(Check(spec, json), "") << json;
    }
    std::string unknown = CallWith(spec, "notAParameter", R"({"any":[1,true,null]})");
    EXPECT_EQ(Check(spec, unknown), "") << unknown;
    EXPECT_EQ(Check(spec, CallWith(spec, "tool", "42")), "") << "\"tool\" is not a parameter";
  }
}

TEST(CheckToolParamsTest, ACallIsAnObject) {
  for (const char* json : {"[]", "\"exec\"", "3", "null", "true"}) {
    EXPECT_EQ(Check(Spec("exec"), json), "a tool call is a JSON object") << json;
  }
}

// ---- Results --------------------------------------------------------------------------------

TEST(ToolSpecsTest, OutputSchemasAreObjectsThatRequireStatus) {
  for (const ToolSpec& spec : ToolSpecs()) {
    SCOPED_TRACE(spec.name);
    rapidjson::Document schema = Parse(spec.output_schema_json);
    ASSERT_TRUE(schema.IsObject());
    EXPECT_EQ(JsonString(schema, "type"), "object");
    EXPECT_EQ(JsonString(schema, "$schema"), "https://json-schema.org/draft/2020-12/schema");
    EXPECT_TRUE(JsonBool(schema, "additionalProperties"));
    const rapidjson::Value* props = JsonMember(schema, "properties");
    ASSERT_TRUE(props != nullptr && props->IsObject());
    for (const char* key : {"status", "code", "message"}) {
      const rapidjson::Value* prop = JsonMember(*props, key);
      ASSERT_NE(prop, nullptr) << key << ": a refusal's";
      EXPECT_EQ(JsonString(*prop, "type"), "string") << key;
    }
    EXPECT_FALSE(props->HasMember("aggregated")) << "renamed output";
    for (const auto& m : props->GetObject()) {
      EXPECT_TRUE(m.value.HasMember("type")) << m.name.GetString();
      EXPECT_TRUE(m.value.HasMember("description")) << m.name.GetString();
    }
    if (spec.name == "policy_check") {
      // A verdict has a decision and no status, a refusal the other way round.
      EXPECT_FALSE(schema.HasMember("required"));
      EXPECT_EQ(ToJson(schema["anyOf"]), R"([{"required":["decision"]},{"required":["status"]}])");
    } else {
      EXPECT_EQ(JsonStringArray(schema, "required"), std::vector<std::string>{"status"});
    }
  }
}

// The type a result schema gives `path` (a.b.c; "[]" steps into an array's items).
std::string OutType(std::string_view tool, const std::vector<std::string>& path) {
  rapidjson::Document schema = Parse(Spec(tool).output_schema_json);
  const rapidjson::Value* v = &schema;
  for (const std::string& step : path) {
    if (step == "[]") {
      v = JsonMember(*v, "items");
    } else {
      const rapidjson::Value* props = JsonMember(*v, "properties");
      v = props ? JsonMember(*props, step.c_str()) : nullptr;
    }
    if (v == nullptr) return "(missing)";
  }
  const rapidjson::Value* type = JsonMember(*v, "type");
  return type ? ToJson(*type) : "(untyped)";
}

TEST(ToolSpecsTest, OutputSchemasTypeWhatTheRenderersWrite) {
  struct Row {
    const char* tool;
    std::vector<std::string> path;
    const char* type;
  };
  const Row rows[] = {
      // RenderExecOutcome, RenderRunning, RenderApprovalPending.
      {"exec", {"exitCode"}, R"(["integer","null"])"},
      {"exec", {"output"}, R"("string")"},
      {"exec", {"truncated"}, R"("boolean")"},
      {"exec", {"totalBytes"}, R"("integer")"},
      {"exec", {"durationMs"}, R"("integer")"},
      {"exec", {"signal"}, R"("string")"},
      {"exec", {"timedOut"}, R"("boolean")"},
      {"exec", {"cwd"}, R"("string")"},
      {"exec", {"host"}, R"("string")"},
      {"exec", {"sessionId"}, R"("string")"},
      {"exec", {"pid"}, R"("integer")"},
      {"exec", {"startedAt"}, R"("integer")"},
      {"exec", {"tail"}, R"("string")"},
      {"exec", {"approvalId"}, R"("string")"},
      {"exec", {"approvalSlug"}, R"("string")"},
      {"exec", {"expiresAtMs"}, R"("integer")"},
      {"exec", {"allowedDecisions"}, R"("array")"},
      {"exec", {"allowedDecisions", "[]"}, R"("string")"},
      {"exec", {"command"}, R"("string")"},
      {"exec", {"warningText"}, R"("string")"},
      // The process actions.
      {"process", {"sessionId"}, R"("string")"},
      {"process", {"output"}, R"("string")"},
      {"process", {"exitCode"}, R"("integer")"},
      {"process", {"exitSignal"}, R"("string")"},
      {"process", {"exitReason"}, R"("string")"},
      {"process", {"lost"}, R"("boolean")"},
      {"process", {"retryInMs"}, R"("integer")"},
      {"process", {"totalChars"}, R"("integer")"},
      {"process", {"sessions"}, R"("array")"},
      {"process", {"sessions", "[]"}, R"("object")"},
      {"process", {"sessions", "[]", "pid"}, R"("integer")"},
      {"process", {"sessions", "[]", "endedAt"}, R"("integer")"},
      {"process", {"sessions", "[]", "exitCode"}, R"("integer")"},
      {"process", {"sessions", "[]", "exitReason"}, R"("string")"},
      {"process", {"sessions", "[]", "host"}, R"("string")"},
      // apply_patch's RenderApplied.
      {"apply_patch", {"added", "[]"}, R"("string")"},
      {"apply_patch", {"moved", "[]", "to"}, R"("string")"},
      {"apply_patch", {"durationMs"}, R"("integer")"},
      // PolicyCheckJson.
      {"policy_check", {"decision"}, R"("string")"},
      {"policy_check", {"host"}, R"("object")"},
      {"policy_check", {"host", "requested"}, R"(["string","null"])"},
      {"policy_check", {"host", "effective"}, R"(["string","null"])"},
      {"policy_check", {"analysis", "segments", "[]", "satisfiedBy"}, R"(["string","null"])"},
      {"policy_check", {"analysis", "segments", "[]", "argv", "[]"}, R"("string")"},
      {"policy_check", {"rewritten"}, R"(["string","null"])"},
      {"policy_check", {"askFallback", "approved"}, R"("boolean")"},
      {"policy_check", {"allowAlways", "[]"}, R"("string")"},
  };
  for (const Row& row : rows) {
    std::string where = row.tool;
    for (const std::string& step : row.path) where += "." + step;
    EXPECT_EQ(OutType(row.tool, row.path), row.type) << where;
  }
}

// What in `value` does not fit `schema` (types, properties, array items), one line each.
void CollectMisfits(const rapidjson::Value& schema, const rapidjson::Value& value,
                    const std::string& where, std::vector<std::string>& misfits) {
  std::vector<std::string> types;
  if (const rapidjson::Value* type = JsonMember(schema, "type"); type && type->IsString()) {
    types.emplace_back(type->GetString());
  } else {
    types = JsonStringArray(schema, "type");
  }
  auto is = [&](const std::string& t) {
    return (t == "string" && value.IsString()) || (t == "integer" && value.IsInt64()) ||
           (t == "number" && value.IsNumber()) || (t == "boolean" && value.IsBool()) ||
           (t == "null" && value.IsNull()) || (t == "array" && value.IsArray()) ||
           (t == "object" && value.IsObject());
  };
  if (std::none_of(types.begin(), types.end(), is)) {
    misfits.push_back(where + ": " + ToJson(value) + " is not " + ToJson(schema["type"]));
    return;
  }
  if (value.IsObject()) {
    const rapidjson::Value* props = JsonMember(schema, "properties");
    for (const auto& m : value.GetObject()) {
      std::string key(m.name.GetString(), m.name.GetStringLength());
      const rapidjson::Value* prop = props ? JsonMember(*props, key.c_str()) : nullptr;
      if (prop == nullptr) {
        misfits.push_back(where + "." + key + ": not in the schema");
      } else {
        CollectMisfits(*prop, m.value, where + "." + key, misfits);
      }
    }
  } else if (value.IsArray()) {
    if (const rapidjson::Value* items = JsonMember(schema, "items")) {
      for (const auto& item : value.GetArray()) CollectMisfits(*items, item, where + "[]", misfits);
    }
  }
}

// `structured` fits `tool`'s output schema, with what it requires.
void ExpectFits(std::string_view tool, const rapidjson::Value& structured,
                const std::string& shown) {
  rapidjson::Document schema = Parse(Spec(tool).output_schema_json);
  std::vector<std::string> misfits;
  CollectMisfits(schema, structured, std::string(tool), misfits);
  std::vector<std::string> required = JsonStringArray(schema, "required");
  if (const rapidjson::Value* any_of = JsonMember(schema, "anyOf")) {
    bool one = false;
    for (const auto& alternative : any_of->GetArray()) {
      std::vector<std::string> names = JsonStringArray(alternative, "required");
      one = one || std::all_of(names.begin(), names.end(),
                               [&](const std::string& n) { return structured.HasMember(n); });
    }
    if (!one) misfits.push_back("none of anyOf's required members");
  }
  for (const std::string& name : required) {
    if (!structured.HasMember(name)) misfits.push_back(name + ": missing");
  }
  EXPECT_TRUE(misfits.empty()) << shown << "\n" << ::testing::PrintToString(misfits);
}

// A tool result's details as the MCP front end publishes them (aggregated renamed output) fit
// `tool`'s output schema.
void ExpectDetailsFit(std::string_view tool, const std::string& result_json) {
  rapidjson::Document result = Parse(result_json);
  const rapidjson::Value* details = JsonMember(result, "details");
  ASSERT_TRUE(details != nullptr && details->IsObject()) << result_json;
  rapidjson::Document structured;
  structured.CopyFrom(*details, structured.GetAllocator());
  if (structured.HasMember("aggregated")) {
    rapidjson::Value output(structured["aggregated"], structured.GetAllocator());
    structured.RemoveMember("aggregated");
    structured.AddMember("output", output, structured.GetAllocator());
  }
  ExpectFits(tool, structured, result_json);
}

TEST(ToolSpecsTest, RenderedExecResultsFitTheExecOutputSchema) {
  using S = exec::ExecOutcome::Status;
  auto outcome = [](S status, int code, int signal, std::string output, bool truncated) {
    exec::ExecOutcome o;
    o.status = status;
    o.exit_code = code;
    o.signal = signal;
    o.duration_ms = 1000;
    o.aggregated = std::move(output);
    o.total_bytes = o.aggregated.size();
    o.truncated = truncated;
    o.cwd = "/workspace";
    return o;
  };
  for (const exec::ExecOutcome& o :
       {outcome(S::kExited, 0, 0, "hi", false), outcome(S::kExited, 1, 0, "", false),
        outcome(S::kExited, 127, 0, "sh: x: not found", false),
        outcome(S::kSignaled, -1, 9, "tail", true), outcome(S::kTimedOut, -1, 0, "", false),
        outcome(S::kAborted, -1, 0, "", false)}) {
    ExpectDetailsFit("exec", api::RenderExecOutcome(o, "sandbox", 1, {"Warning: w"}));
  }
  ExpectDetailsFit("exec", api::RenderApprovalPending({"0123456789abcdef",
                                                       1700000000000,
                                                       "gateway",
                                                       "rm -rf x",
                                                       "/home/a",
                                                       {"allow-once", "deny"},
                                                       {"Warning: w"}}));
}

// PolicyCheckJson in-process, with $SANDRUN_HOME in a temp dir (each test case runs in its own
// process under ctest): allow, deny, and ask with its askFallback.
TEST(ToolSpecsTest, PolicyVerdictsFitThePolicyCheckOutputSchema) {
  char tmpl[] = "/tmp/sandrun-schemas-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string home = tmpl;
  ::setenv("SANDRUN_HOME", home.c_str(), 1);
  ::setenv("SANDRUN_LOAD_SHELL_ENV", "0", 1);
  std::ofstream(home + "/ask.json")
      << R"({"sandbox":{"mode":"off"},"tools":{"exec":{"host":"gateway","security":"allowlist",)"
      << R"("ask":"on-miss"}}})";
  struct Row {
    std::string config;
    std::string command;
    std::optional<std::string> host;
    std::string decision;
  };
  for (const Row& row :
       {Row{"", "echo hi | wc -l", std::nullopt, "allow"}, Row{"", "true", "spark-ff13", "deny"},
        Row{home + "/ask.json", "python3 -c 'print(1)' && ls", "gateway", "ask"}}) {
    api::GlobalOptions global;
    global.config_file = row.config;
    global.workspace = home;
    policy::ExecRequest request;
    request.command = row.command;
    request.host = row.host;
    std::string verdict = api::PolicyCheckJson(global, policy::Caller{}, request);
    rapidjson::Document doc = Parse(verdict);
    EXPECT_EQ(JsonString(doc, "decision"), row.decision) << verdict;
    EXPECT_EQ(doc.HasMember("askFallback"), row.decision == "ask") << verdict;
    ExpectFits("policy_check", doc, verdict);
  }
  std::error_code ec;
  std::filesystem::remove_all(home, ec);
}

TEST(ToolSpecsTest, ARefusalFitsEveryOutputSchema) {
  for (const ToolSpec& spec : ToolSpecs()) {
    ExpectDetailsFit(spec.name,
                     R"({"details":{"status":"refused","code":"denied","message":"no"}})");
  }
}

// ---- The parsers read exactly what the specs declare ----------------------------------------

// A valid value of a parameter and what a parser makes of it.
template <typename Request>
struct Sample {
  std::string json;
  std::function<bool(const Request&)> read;
};

// Every exec parameter: the table must cover exactly the spec's names (so a parameter added to
// the spec without the parser reading it, or to the parser without the spec, fails).
const std::map<std::string, Sample<policy::ExecRequest>>& ExecSamples() {
  using R = policy::ExecRequest;
  static const auto* const kSamples = new std::map<std::string, Sample<R>>{
      {"command", {R"("echo hi")", [](const R& r) { return r.command == "echo hi"; }}},
      {"workdir", {R"("sub")", [](const R& r) { return r.workdir == "sub"; }}},
      {"env",
       {R"({"A":"1"})",
        [](const R& r) {
          return r.env == std::map<std::string, std::string>{{"A", "1"}};
        }}},
      {"yieldMs", {"500", [](const R& r) { return r.yield_ms == 500; }}},
      {"background", {"true", [](const R& r) { return r.background; }}},
      {"timeout", {"30", [](const R& r) { return r.timeout_seconds == 30; }}},
      {"timeoutSeconds", {"60.5", [](const R& r) { return r.timeout_seconds == 60.5; }}},
      {"pty", {"true", [](const R& r) { return r.pty; }}},
      {"elevated", {"false", [](const R& r) { return r.elevated == false; }}},
      {"wait", {"true", [](const R& r) { return r.wait; }}},
      {"host", {R"("sandbox")", [](const R& r) { return r.host == "sandbox"; }}},
      {"security", {R"("full")", [](const R& r) { return r.security == "full"; }}},
      {"ask", {R"("always")", [](const R& r) { return r.ask == "always"; }}},
      {"node", {R"("n1")", [](const R& r) { return r.node == "n1"; }}},
      {"image", {R"(" img:1 ")", [](const R& r) { return r.image == "img:1"; }}},
      {"network", {R"("bridge")", [](const R& r) { return r.network == "bridge"; }}},
      {"memory", {R"("512m")", [](const R& r) { return r.memory_bytes == int64_t{512} << 20; }}},
      {"cpus", {"1.5", [](const R& r) { return r.cpus == 1.5; }}},
      {"pids", {"64", [](const R& r) { return r.pids == 64; }}},
      {"rm", {"true", [](const R& r) { return r.rm; }}},
  };
  return *kSamples;
}

template <typename Request>
void ExpectSamplesCoverTheSpec(const std::map<std::string, Sample<Request>>& samples,
                               const ToolSpec& spec) {
  std::vector<std::string> names;
  for (const auto& [name, sample] : samples) names.push_back(name);
  std::vector<std::string> declared = ParamNames(spec);
  std::sort(declared.begin(), declared.end());
  EXPECT_EQ(names, declared) << spec.name << ": one sample per parameter";
}

api::ToolCall ParsedExec(const std::string& json) {
  auto call = api::ParseToolCall(json);
  EXPECT_TRUE(call) << json << ": " << call.error().ToString();
  return call ? std::move(call).value() : api::ToolCall{};
}

TEST(ToolSpecsParityTest, ParseToolCallReadsEveryExecParameter) {
  const ToolSpec& exec = Spec("exec");
  ExpectSamplesCoverTheSpec(ExecSamples(), exec);
  for (const auto& [name, sample] : ExecSamples()) {
    std::string json = CallWith(exec, name, sample.json);
    api::ToolCall call = ParsedExec(json);
    EXPECT_EQ(call.tool, "exec");
    EXPECT_TRUE(sample.read(call.exec)) << json << ": the parser reads " << name;
  }
}

TEST(ToolSpecsParityTest, ParseToolCallAcceptsACallWithEveryExecParameter) {
  const ToolSpec& exec = Spec("exec");
  std::string json = R"({"tool":"exec")";
  for (const auto& [name, sample] : ExecSamples()) {
    // rm runs in the foreground only: with background and yieldMs it is false.
    json += ",\"" + name + "\":" + (name == "rm" ? std::string("false") : sample.json);
  }
  json += "}";
  api::ToolCall call = ParsedExec(json);
  for (const auto& [name, sample] : ExecSamples()) {
    if (name == "rm" || name == "timeout") continue;  // timeoutSeconds came last
    EXPECT_TRUE(sample.read(call.exec)) << name;
  }
  // What the parser reads of exec is what ExecRequestToJson writes: a round trip.
  api::ToolCall again = ParsedExec(api::ExecRequestToJson(call.exec));
  EXPECT_EQ(api::ExecRequestToJson(again.exec), api::ExecRequestToJson(call.exec));
  rapidjson::Document written = Parse(api::ExecRequestToJson(call.exec));
  for (const auto& m : written.GetObject()) {
    std::string key(m.name.GetString(), m.name.GetStringLength());
    EXPECT_TRUE(key == "tool" || FindParam(exec, key) != nullptr)
        << "ExecRequestToJson writes " << key << ", which exec does not declare";
  }
}

TEST(ToolSpecsParityTest, ParseToolCallRefusesEveryWrongTypeAsTheSpecDoes) {
  const ToolSpec& exec = Spec("exec");
  for (const ParamSpec& p : exec.params) {
    std::string json = CallWith(exec, p.name, WrongValue(p.type).first);
    auto call = api::ParseToolCall(json);
    ASSERT_FALSE(call) << json;
    EXPECT_EQ(call.error().WireCode(), "invalid-request");
    if (p.name == "host") {
      EXPECT_EQ(call.error().message,
                "Invalid exec host value type number. Allowed values: auto, sandbox, gateway, "
                "node.");
    } else {
      EXPECT_EQ(call.error().message, Check(exec, json)) << json;
    }
  }
  auto missing = api::ParseToolCall(R"({"tool":"exec","command":null})");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "Provide a command to start.") << "the parser's own";
  // An undeclared member is never read, whatever its type.
  ParsedExec(R"({"tool":"exec","command":"true","Background":"yes","extra":[1]})");
}

TEST(ToolSpecsParityTest, ParseToolCallReadsEveryApplyPatchParameter) {
  using R = api::ApplyPatchRequest;
  const std::map<std::string, Sample<R>> samples = {
      {"input",
       {R"("*** Begin Patch\n*** End Patch")",
        [](const R& r) { return r.input == "*** Begin Patch\n*** End Patch"; }}},
      {"workdir", {R"("sub")", [](const R& r) { return r.workdir == "sub"; }}},
      {"model", {R"("openai/gpt-5.4")", [](const R& r) { return r.model == "openai/gpt-5.4"; }}},
  };
  const ToolSpec& spec = Spec("apply_patch");
  ExpectSamplesCoverTheSpec(samples, spec);
  for (const auto& [name, sample] : samples) {
    std::string json = CallWith(spec, name, sample.json);
    api::ToolCall call = ParsedExec(json);
    EXPECT_EQ(call.tool, "apply_patch");
    EXPECT_TRUE(sample.read(call.apply_patch)) << json;
  }
  for (const ParamSpec& p : spec.params) {
    std::string json = CallWith(spec, p.name, WrongValue(p.type).first);
    auto call = api::ParseToolCall(json);
    ASSERT_FALSE(call) << json;
    EXPECT_EQ(call.error().message, Check(spec, json)) << json;
  }
}

TEST(ToolSpecsParityTest, ParseProcessRequestReadsEveryProcessParameter) {
  using R = sessions::ProcessRequest;
  const std::map<std::string, Sample<R>> samples = {
      {"action", {R"("kill")", [](const R& r) { return r.action == "kill"; }}},
      {"sessionId", {R"("calm-reef")", [](const R& r) { return r.session_id == "calm-reef"; }}},
      {"data", {R"("x")", [](const R& r) { return r.data == "x"; }}},
      {"eof", {"true", [](const R& r) { return r.eof; }}},
      {"keys",
       {R"(["C-c","Enter"])",
        [](const R& r) {
          return r.keys == std::vector<std::string>{"C-c", "Enter"};
        }}},
      {"hex", {R"(["1b"])", [](const R& r) { return r.hex == std::vector<std::string>{"1b"}; }}},
      {"literal", {R"("ls")", [](const R& r) { return r.literal == "ls"; }}},
      {"text", {R"("t")", [](const R& r) { return r.text == "t"; }}},
      {"bracketed", {"false", [](const R& r) { return r.bracketed == false; }}},
      {"offset", {"3", [](const R& r) { return r.offset == 3; }}},
      {"limit", {"4.9", [](const R& r) { return r.limit == 4; }}},
      {"timeout", {"1500", [](const R& r) { return r.timeout_ms == 1500; }}},
  };
  const ToolSpec& spec = Spec("process");
  ExpectSamplesCoverTheSpec(samples, spec);
  for (const auto& [name, sample] : samples) {
    std::string json = CallWith(spec, name, sample.json);
    auto request = sessions::ParseProcessRequest(std::string_view(json));
    ASSERT_TRUE(request) << json << ": " << request.error().ToString();
    EXPECT_TRUE(sample.read(*request)) << json;
  }
  for (const ParamSpec& p : spec.params) {
    std::string json = CallWith(spec, p.name, WrongValue(p.type).first);
    auto request = sessions::ParseProcessRequest(std::string_view(json));
    ASSERT_FALSE(request) << json;
    EXPECT_EQ(request.error().message, Check(spec, json)) << json;
  }
}

}  // namespace
}  // namespace sandrun::wire

#include "runner/sessions/process_request.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>

#include "runner/sessions/session.h"
#include "runner/wire/tool_result.h"
#include "runner/wire/tool_schemas.h"
#include "sandbox/base/json.h"

namespace sandrun::sessions {
namespace {

using Writer = JsonWriter;

Error Invalid(std::string message) { return Error::Refusal("invalid-request", std::move(message)); }

std::string Str(const rapidjson::Value& v) {
  return std::string(v.GetString(), v.GetStringLength());
}

// A JSON number as an int64 (floored, saturated).
int64_t ToInt64(const rapidjson::Value& v) {
  if (v.IsInt64()) return v.GetInt64();
  if (v.IsUint64()) return INT64_MAX;
  double d = std::floor(v.GetDouble());
  if (d >= 9.2e18) return INT64_MAX;
  if (d <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(d);
}

void AppendStrings(const rapidjson::Value& v, std::vector<std::string>& out) {
  for (const auto& item : v.GetArray()) out.push_back(Str(item));
}

}  // namespace

Result<ProcessRequest> ParseProcessRequest(const rapidjson::Value& call) {
  if (!call.IsObject()) return Invalid("a tool call is a JSON object");
  ProcessRequest req;
  const auto* action = JsonMember(call, "action");
  if (action == nullptr || action->IsNull()) {
    return Invalid(
        "process parameter \"action\" is required (list, poll, log, write, send-keys, submit, "
        "paste, kill, clear, remove)");
  }
  // The types are the spec's (wire::ToolSpecs: the one definition of the parameters).
  const wire::ToolSpec& spec = *wire::FindToolSpec("process");
  SANDRUN_RETURN_IF_ERROR(wire::CheckToolParams(spec, call));
  req.action = Str(*action);
  for (const auto& m : call.GetObject()) {
    std::string key = Str(m.name);
    const auto& v = m.value;
    // An explicit null means "not given"; other members ("tool" too) are ignored, as OpenClaw's
    // schema does.
    if (v.IsNull() || wire::FindParam(spec, key) == nullptr) continue;
    if (key == "sessionId" || key == "data" || key == "literal" || key == "text") {
      (key == "sessionId" ? req.session_id
       : key == "data"    ? req.data
       : key == "literal" ? req.literal
                          : req.text) = Str(v);
    } else if (key == "eof") {
      req.eof = v.GetBool();
    } else if (key == "bracketed") {
      req.bracketed = v.GetBool();
    } else if (key == "keys" || key == "hex") {
      AppendStrings(v, key == "keys" ? req.keys : req.hex);
    } else if (key == "offset" || key == "limit" || key == "timeout") {
      int64_t n = ToInt64(v);
      if (n < 0) return Invalid("process parameter \"" + key + "\" must be >= 0");
      (key == "offset" ? req.offset : key == "limit" ? req.limit : req.timeout_ms) = n;
    }
  }
  return req;
}

Result<ProcessRequest> ParseProcessRequest(std::string_view json) {
  JsonParseOptions options;
  options.source_name = "tool call";
  auto doc = ParseJson(json, options);
  if (!doc) return Error::Refusal("invalid-json", doc.error().message);
  return ParseProcessRequest(*doc);
}

std::string RenderRunning(const Session& session, const std::vector<std::string>& warnings) {
  int64_t pid = session.pid();
  std::string text = "Command still running (session " + session.id() + ", pid " +
                     (pid > 0 ? std::to_string(pid) : "n/a") +
                     "). Use process (list/poll/log/write/kill/clear/remove) for follow-up.";
  if (!warnings.empty()) {
    std::string joined;
    for (const auto& line : warnings) joined += (joined.empty() ? "" : "\n") + line;
    text = joined + "\n\n" + text;
  }
  std::string tail = session.Tail();
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  BeginToolResult(w, text);
  w.Key("status");
  w.String("running");
  w.Key("sessionId");
  WriteJsonString(w, session.id());
  if (pid > 0) {
    w.Key("pid");
    w.Int64(pid);
  }
  w.Key("startedAt");
  w.Int64(session.started_at_ms());
  if (!session.meta().cwd.empty()) {
    w.Key("cwd");
    WriteJsonString(w, session.meta().cwd);
  }
  if (!tail.empty()) {
    w.Key("tail");
    WriteJsonString(w, tail);
  }
  w.Key("host");
  WriteJsonString(w, session.meta().host);
  EndToolResult(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace sandrun::sessions

#include "runner/api/mcp_server.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "runner/api/tool_call.h"
#include "runner/wire/tool_schemas.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"

namespace sandrun::api {
namespace {

constexpr const char* kMetaVersion = "io.modelcontextprotocol/protocolVersion";
constexpr const char* kServerName = "sandrun";
constexpr const char* kInstructions =
    "sandrun runs shell commands for you in a Docker sandbox (sh -lc, network none by default). "
    "Use exec to run a command; a command still running after the server's block limit returns "
    "status \"running\" with a sessionId: follow it with process (poll, log, write, kill). "
    "policy_check tells whether a command would be allowed without running it. apply_patch "
    "edits files in the workspace.";
// How long a client may keep tools/list and server/discover (2026-07-28 caching.mdx): the
// tools are fixed for a binary; a caller's own view (its agent's tool policy) is per caller.
constexpr int64_t kListTtlMs = 300000;

std::string Str(const rapidjson::Value& v) {
  return std::string(v.GetString(), v.GetStringLength());
}

// Cuts `s` to at most `n` bytes without splitting a UTF-8 sequence; from the end when `tail`.
std::string_view Utf8Cut(std::string_view s, size_t n, bool tail) {
  if (s.size() <= n) return s;
  if (!tail) {
    size_t end = n;
    while (end > 0 && IsUtf8Continuation(s[end])) --end;
    return s.substr(0, end);
  }
  size_t start = s.size() - n;
  while (start < s.size() && IsUtf8Continuation(s[start])) ++start;
  return s.substr(start);
}

// Head and tail of a long output with a marker between them (mcp.maxOutputChars; MCP clients
// reject huge results, so unlike exec's tail-only cap the start survives too). `head_source`
// holds the output from its start, `tail_source` its end; `total` is everything printed.
std::string CapOutput(std::string_view head_source, std::string_view tail_source, uint64_t total,
                      size_t max_chars, const std::string& session_id, bool* cut) {
  if (total <= max_chars && head_source.size() <= max_chars) {
    *cut = false;
    return std::string(head_source);
  }
  *cut = true;
  std::string_view head = Utf8Cut(head_source, max_chars / 2, false);
  std::string_view tail = Utf8Cut(tail_source, max_chars / 2, true);
  const uint64_t shown = head.size() + tail.size();
  const uint64_t omitted = total > shown ? total - shown : 0;
  std::string marker = "\n[... " + std::to_string(omitted) + " bytes omitted";
  marker += session_id.empty() ? " ...]\n"
                               : ": process log with sessionId " + session_id +
                                     " reads them (offset and limit count lines) ...]\n";
  return std::string(head) + marker + std::string(tail);
}

void WriteRaw(JsonWriter& w, const std::string& json) {
  w.RawValue(json.data(), json.size(), rapidjson::kObjectType);
}

// {"jsonrpc":"2.0","id":<id>,"result":{<members>[,"resultType":"complete"]}}: `members` writes
// the result's own members; the modern era adds resultType (and, for cacheable results, ttlMs
// and cacheScope).
std::string ResultJson(const McpMessage& m, const std::function<void(JsonWriter&)>& members,
                       bool cacheable = false) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  WriteJsonField(w, "jsonrpc", "2.0");
  w.Key("id");
  w.RawValue(m.id_json.data(), m.id_json.size(), rapidjson::kNumberType);
  w.Key("result");
  w.StartObject();
  members(w);
  if (!m.protocol_version.empty()) {
    WriteJsonField(w, "resultType", "complete");
    if (cacheable) {
      w.Key("ttlMs");
      w.Int64(kListTtlMs);
      WriteJsonField(w, "cacheScope", "private");
    }
  }
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

McpReply RpcError(const McpMessage& m, int code, const std::string& message, int http_status = 200,
                  const std::string& data_json = "") {
  return {McpReply::Kind::kResponse, McpErrorJson(m.id_json, code, message, data_json),
          http_status};
}

std::string SupportedVersionsJson() {
  std::string out = "[\"" + std::string(kMcpModernVersion) + "\"";
  for (const auto& v : kMcpLegacyVersions) out += ",\"" + v + "\"";
  return out + "]";
}

void WriteCapabilities(JsonWriter& w) {
  w.Key("capabilities");
  w.StartObject();
  w.Key("tools");
  w.StartObject();
  w.Key("listChanged");
  w.Bool(false);
  w.EndObject();
  w.EndObject();
}

void WriteServerInfo(JsonWriter& w) {
  w.StartObject();
  WriteJsonField(w, "name", kServerName);
  WriteJsonField(w, "title", "sandrun sandboxed shell");
  WriteJsonField(w, "version", SANDRUN_VERSION);
  w.EndObject();
}

void WriteTool(JsonWriter& w, const wire::ToolSpec& spec) {
  w.StartObject();
  WriteJsonField(w, "name", spec.name);
  WriteJsonField(w, "title", spec.title);
  WriteJsonField(w, "description", spec.description);
  w.Key("inputSchema");
  WriteRaw(w, wire::InputSchemaJson(spec));
  w.Key("outputSchema");
  WriteRaw(w, std::string(spec.output_schema_json));
  w.Key("annotations");
  w.StartObject();
  WriteJsonField(w, "title", spec.title);
  w.Key("readOnlyHint");
  w.Bool(spec.read_only);
  w.Key("destructiveHint");
  w.Bool(spec.destructive);
  w.Key("idempotentHint");
  w.Bool(spec.idempotent);
  w.Key("openWorldHint");
  w.Bool(spec.open_world);
  w.EndObject();
  w.EndObject();
}

// A tools/call result: structuredContent, the same as JSON text, isError.
std::string ToolResultJson(const McpMessage& m, const std::string& structured, bool is_error) {
  return ResultJson(m, [&](JsonWriter& w) {
    w.Key("content");
    w.StartArray();
    w.StartObject();
    WriteJsonField(w, "type", "text");
    WriteJsonField(w, "text", structured);
    w.EndObject();
    w.EndArray();
    w.Key("structuredContent");
    WriteRaw(w, structured);
    w.Key("isError");
    w.Bool(is_error);
  });
}

// {"status":"refused","code":...,"message":...}: a call refused before anything ran (or sandrun's
// own failure, status "error"), as the tool's structured result.
std::string RefusalStructured(const std::string& code, const std::string& message,
                              bool internal = false) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  WriteJsonField(w, "status", internal ? "error" : "refused");
  WriteJsonField(w, "code", code);
  WriteJsonField(w, "message", message);
  w.EndObject();
  return buffer.GetString();
}

// The structured result of a tool's wire reply (`{"content":..,"details":{..}}`, a refusal
// `{"error":{code,message}}`, or a bare object such as a policy verdict): the details with
// `aggregated` as `output`, capped to head and tail. `head` (when not empty) is the output from
// its start (a kept exec session's log); `session_id` is added when the details have none.
struct Structured {
  std::string json;
  bool is_error = false;
};
Structured StructuredFrom(const std::string& reply_json, size_t max_chars,
                          const std::string& session_id = "", const std::string& head = "") {
  auto doc = ParseJson(reply_json);
  if (!doc || !doc->IsObject()) {
    return {RefusalStructured("internal", "the tool's reply was not a JSON object", true), true};
  }
  if (const auto* error = JsonMember(*doc, "error"); error != nullptr && error->IsObject()) {
    const std::string code = JsonString(*error, "code", "internal");
    return {RefusalStructured(code, JsonString(*error, "message"), code == "internal"), true};
  }
  const rapidjson::Value* details = JsonMember(*doc, "details");
  const rapidjson::Value& source = details != nullptr && details->IsObject() ? *details : *doc;
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  bool has_session = false, has_truncated = false, truncated = false, cut = false;
  // Without `aggregated`, the output is a running session's tail, else the result's text (a
  // process log's lines, a poll's new output, a patch's summary).
  if (const auto* aggregated = JsonMember(source, "aggregated");
      aggregated == nullptr || !aggregated->IsString()) {
    std::string text;
    if (const auto* tail = JsonMember(source, "tail"); tail != nullptr && tail->IsString()) {
      text = Str(*tail);
    } else if (const auto* content = JsonMember(*doc, "content");
               content != nullptr && content->IsArray() && !content->Empty()) {
      text = JsonString((*content)[0], "text");
    }
    if (!text.empty() || details != nullptr) {
      w.Key("output");
      WriteJsonString(w, CapOutput(text, text, text.size(), max_chars, session_id, &cut));
    }
  }
  for (const auto& member : source.GetObject()) {
    const std::string key = Str(member.name);
    if (key == "aggregated" && member.value.IsString()) {
      const std::string text = Str(member.value);
      const uint64_t total = std::max<uint64_t>(
          text.size(), static_cast<uint64_t>(std::max<int64_t>(JsonInt(source, "totalBytes"), 0)));
      w.Key("output");
      WriteJsonString(w, head.empty()
                             ? CapOutput(text, text, text.size(), max_chars, session_id, &cut)
                             : CapOutput(head, text, total, max_chars, session_id, &cut));
      continue;
    }
    if (key == "truncated") {
      has_truncated = true;
      truncated = member.value.IsBool() && member.value.GetBool();
      continue;  // written below, with the cut of the output
    }
    if (key == "sessionId") has_session = true;
    w.Key(member.name.GetString(), member.name.GetStringLength());
    WriteRaw(w, ToJson(member.value));
  }
  if (!has_session && !session_id.empty()) WriteJsonField(w, "sessionId", session_id);
  if (has_truncated || cut) {
    w.Key("truncated");
    w.Bool(truncated || cut);
  }
  w.EndObject();
  return {buffer.GetString(), false};
}

// The tool call's wire form: the MCP arguments with "tool" set (the parsers take the same JSON as
// POST /v1/tools/<tool>). nullopt when `args` is not an object.
std::optional<std::string> WireCall(const std::string& tool, const rapidjson::Value* args) {
  rapidjson::Document call(rapidjson::kObjectType);
  if (args != nullptr && !args->IsNull()) {
    if (!args->IsObject()) return std::nullopt;
    call.CopyFrom(*args, call.GetAllocator());
  }
  call.RemoveMember("tool");
  call.AddMember("tool", rapidjson::Value(tool.c_str(), call.GetAllocator()), call.GetAllocator());
  return ToJson(call);
}

// The caller a notifications/cancelled must come from to cancel a request: the same tenant,
// token, agent, session and uid (a request id alone is only unique per client).
std::string CallerKey(const Principal& who, const std::string& id_json) {
  return who.tenant + '\n' + who.token_name + '\n' + who.agent + '\n' + who.session + '\n' +
         std::to_string(who.uid) + '\n' + id_json;
}

// Whether an object anywhere in `v` names a member twice (the first one in *key). Depth is
// bounded by the parser (kMaxJsonDepth).
bool HasDuplicateKey(const rapidjson::Value& v, std::string* key) {
  if (v.IsArray()) {
    for (const auto& item : v.GetArray()) {
      if (HasDuplicateKey(item, key)) return true;
    }
    return false;
  }
  if (!v.IsObject()) return false;
  std::set<std::string_view> seen;
  for (const auto& m : v.GetObject()) {
    std::string_view name(m.name.GetString(), m.name.GetStringLength());
    if (!seen.insert(name).second) {
      *key = std::string(name);
      return true;
    }
    if (HasDuplicateKey(m.value, key)) return true;
  }
  return false;
}

}  // namespace

std::string McpErrorJson(const std::string& id_json, int code, const std::string& message,
                         const std::string& data_json) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  WriteJsonField(w, "jsonrpc", "2.0");
  w.Key("id");
  const std::string id = id_json.empty() ? "null" : id_json;
  w.RawValue(id.data(), id.size(), rapidjson::kNumberType);
  w.Key("error");
  w.StartObject();
  w.Key("code");
  w.Int(code);
  WriteJsonField(w, "message", message);
  if (!data_json.empty()) {
    w.Key("data");
    WriteRaw(w, data_json);
  }
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

std::variant<McpMessage, McpReply> ParseMcpMessage(std::string_view text) {
  auto invalid = [](int code, const std::string& message, const std::string& id = "null") {
    return McpReply{McpReply::Kind::kResponse, McpErrorJson(id, code, message), 400};
  };
  if (text.size() > kMcpMaxMessageBytes) {
    return invalid(kJsonRpcInvalidRequest,
                   "message is larger than " + std::to_string(kMcpMaxMessageBytes) + " bytes");
  }
  JsonParseOptions options;
  options.source_name = "message";
  options.validate_utf8 = true;  // JSON text is UTF-8 (RFC 8259 §8.1); we echo ids and names
  auto parsed = ParseJson(text, options);
  if (!parsed) return invalid(kJsonRpcParseError, "Parse error: " + parsed.error().message);
  if (std::string key; HasDuplicateKey(*parsed, &key)) {
    // One reader's first member and another's last would disagree (a gateway routing on
    // Mcp-Method, a client's own view of its id): such a message has no one meaning.
    return invalid(kJsonRpcInvalidRequest, "duplicate member \"" + key + "\"");
  }
  McpMessage m;
  m.doc = std::make_shared<rapidjson::Document>(std::move(*parsed));
  const rapidjson::Value& doc = *m.doc;
  if (doc.IsArray()) {
    return invalid(kJsonRpcInvalidRequest, "batches are not supported: send one message");
  }
  if (!doc.IsObject()) return invalid(kJsonRpcInvalidRequest, "a message is a JSON object");
  if (const auto* id = JsonMember(doc, "id"); id != nullptr) {
    // MCP ids are strings or integers, never null (basic/index.mdx).
    if (!id->IsString() && !id->IsInt64()) {
      return invalid(kJsonRpcInvalidRequest, "id must be a string or an integer");
    }
    m.id_json = ToJson(*id);
  }
  if (JsonString(doc, "jsonrpc") != "2.0") {
    return invalid(kJsonRpcInvalidRequest, "jsonrpc must be \"2.0\"",
                   m.id_json.empty() ? "null" : m.id_json);
  }
  const auto* method = JsonMember(doc, "method");
  if (method == nullptr) {
    if (doc.HasMember("result") || doc.HasMember("error")) {
      m.client_response = true;
      return m;
    }
    return invalid(kJsonRpcInvalidRequest, "a request needs a method",
                   m.id_json.empty() ? "null" : m.id_json);
  }
  if (!method->IsString()) {
    return invalid(kJsonRpcInvalidRequest, "method must be a string",
                   m.id_json.empty() ? "null" : m.id_json);
  }
  m.method = Str(*method);
  m.request = !m.id_json.empty();
  const auto* params = JsonMember(doc, "params");
  if (params != nullptr && !params->IsObject()) {
    return invalid(kJsonRpcInvalidParams, "params must be an object",
                   m.id_json.empty() ? "null" : m.id_json);
  }
  if (params != nullptr) {
    if (const auto* meta = JsonMember(*params, "_meta"); meta != nullptr && meta->IsObject()) {
      if (const auto* v = JsonMember(*meta, kMetaVersion); v != nullptr) {
        m.protocol_version = v->IsString() ? Str(*v) : ToJson(*v);
        if (m.protocol_version.empty()) m.protocol_version = "\"\"";
      }
      if (const auto* caps = JsonMember(*meta, "io.modelcontextprotocol/clientCapabilities")) {
        m.client_capabilities = caps->IsObject();
      }
      if (const auto* token = JsonMember(*meta, "progressToken");
          token != nullptr && (token->IsString() || token->IsInt64())) {
        m.progress_token_json = ToJson(*token);
      }
    }
    m.name = JsonString(*params, "name");
  }
  return m;
}

struct McpServer::InFlight {
  CancelToken cancel;                      // set by notifications/cancelled or CancelAll
  const CancelToken* transport = nullptr;  // the transport's own (a closed stream)
  bool cancelled() const {
    return cancel.cancelled() || (transport != nullptr && transport->cancelled());
  }
};

McpServer::McpServer(Runtime& runtime, std::string transport)
    : runtime_(runtime), transport_(std::move(transport)) {}

void McpServer::CancelRequest(const Principal& who, const std::string& id_json) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [begin, end] = in_flight_.equal_range(CallerKey(who, id_json));
  for (auto it = begin; it != end; ++it) it->second->cancel.Cancel();
}

McpReply McpServer::Handle(const McpMessage& m, const Principal& who, const Notify& notify,
                           const CancelToken* cancel) {
  if (m.client_response) return {McpReply::Kind::kNone, "", 202};
  if (!m.request) {
    // Notifications: cancelled names a request of the same caller; the rest need nothing.
    // Over HTTP a request is cancelled by closing its stream (2026-07-28 cancellation.mdx):
    // callers that share a principal (the local socket's clients, one token's) share ids too,
    // so a cancel notification there could name another client's request.
    if (m.method == "notifications/cancelled" && transport_ == "stdio") {
      const auto* params = JsonMember(*m.doc, "params");
      const auto* id = params != nullptr ? JsonMember(*params, "requestId") : nullptr;
      if (id != nullptr && (id->IsString() || id->IsInt64())) CancelRequest(who, ToJson(*id));
    }
    return {McpReply::Kind::kNone, "", 202};
  }
  InFlight flight;
  flight.transport = cancel;
  const std::string key = CallerKey(who, m.id_json);
  std::multimap<std::string, InFlight*>::iterator entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    entry = in_flight_.emplace(key, &flight);
  }
  McpReply reply = Dispatch(m, who, notify, flight);
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(entry);
  }
  // cancellation.mdx: a cancelled request gets no response (it may race with completion).
  if (flight.cancelled() && reply.kind == McpReply::Kind::kResponse) {
    reply.kind = McpReply::Kind::kCancelled;
  }
  return reply;
}

McpReply McpServer::Dispatch(const McpMessage& m, const Principal& who, const Notify& notify,
                             InFlight& flight) {
  if (!m.protocol_version.empty() && m.protocol_version != kMcpModernVersion) {
    // versioning.mdx: the version the request names is not one this server speaks.
    std::string requested = m.protocol_version;
    rapidjson::StringBuffer data;
    JsonWriter w(data);
    w.StartObject();
    w.Key("supported");
    WriteRaw(w, SupportedVersionsJson());
    WriteJsonField(w, "requested", requested);
    w.EndObject();
    return RpcError(m, kMcpUnsupportedVersion, "Unsupported protocol version", 400,
                    data.GetString());
  }
  if (!m.protocol_version.empty() && !m.client_capabilities) {
    // 2026-07-28 basic/index.mdx: protocolVersion and clientCapabilities are required on every
    // request; one without is malformed (400 over HTTP).
    return RpcError(m, kJsonRpcInvalidParams,
                    "_meta needs io.modelcontextprotocol/clientCapabilities (an object)", 400);
  }
  const auto* params = JsonMember(*m.doc, "params");
  if (m.method == "initialize") {
    // The legacy handshake (2025-11-25 basic/lifecycle.mdx): the client's version when it is
    // one of ours, else our newest legacy one (the client then decides).
    std::string asked = params != nullptr ? JsonString(*params, "protocolVersion") : "";
    if (asked.empty())
      return RpcError(m, kJsonRpcInvalidParams, "initialize needs protocolVersion");
    const bool known = std::find(kMcpLegacyVersions.begin(), kMcpLegacyVersions.end(), asked) !=
                       kMcpLegacyVersions.end();
    const std::string version = known ? asked : kMcpLegacyVersions.front();
    return {McpReply::Kind::kResponse, ResultJson(m, [&](JsonWriter& w) {
              WriteJsonField(w, "protocolVersion", version);
              WriteCapabilities(w);
              w.Key("serverInfo");
              WriteServerInfo(w);
              WriteJsonField(w, "instructions", kInstructions);
            })};
  }
  if (m.method == "ping") return {McpReply::Kind::kResponse, ResultJson(m, [](JsonWriter&) {})};
  if (m.method == "server/discover") {
    return {McpReply::Kind::kResponse, ResultJson(
                                           m,
                                           [&](JsonWriter& w) {
                                             w.Key("supportedVersions");
                                             WriteRaw(w, SupportedVersionsJson());
                                             WriteCapabilities(w);
                                             w.Key("_meta");
                                             w.StartObject();
                                             w.Key("io.modelcontextprotocol/serverInfo");
                                             WriteServerInfo(w);
                                             w.EndObject();
                                             WriteJsonField(w, "instructions", kInstructions);
                                             if (m.protocol_version.empty()) {
                                               // A legacy caller still learns how long to keep it.
                                               w.Key("ttlMs");
                                               w.Int64(kListTtlMs);
                                               WriteJsonField(w, "cacheScope", "private");
                                             }
                                           },
                                           /*cacheable=*/true)};
  }
  if (m.method == "tools/list") {
    if (params != nullptr && JsonMember(*params, "cursor") != nullptr &&
        !(*params)["cursor"].IsNull()) {
      // One page holds every tool: no cursor was ever handed out.
      return RpcError(m, kJsonRpcInvalidParams, "unknown cursor: tools/list has a single page");
    }
    return {McpReply::Kind::kResponse, ResultJson(
                                           m,
                                           [](JsonWriter& w) {
                                             w.Key("tools");
                                             w.StartArray();
                                             for (const auto& spec : wire::ToolSpecs()) {
                                               WriteTool(w, spec);
                                             }
                                             w.EndArray();
                                           },
                                           /*cacheable=*/true)};
  }
  if (m.method == "tools/call") return CallTool(m, who, notify, flight);
  return RpcError(m, kJsonRpcMethodNotFound, "Method not found: " + m.method,
                  m.protocol_version.empty() ? 200 : 404);
}

McpReply McpServer::CallTool(const McpMessage& m, const Principal& who, const Notify& notify,
                             InFlight& flight) {
  const auto* params = JsonMember(*m.doc, "params");
  const auto* name = params != nullptr ? JsonMember(*params, "name") : nullptr;
  if (name == nullptr || !name->IsString()) {
    return RpcError(m, kJsonRpcInvalidParams, "tools/call needs params.name (a string)");
  }
  const wire::ToolSpec* spec = wire::FindToolSpec(Str(*name));
  if (spec == nullptr) {
    return RpcError(m, kJsonRpcInvalidParams,
                    "Unknown tool: " + Str(*name) + " (exec, process, apply_patch, policy_check)");
  }
  const rapidjson::Value* args = JsonMember(*params, "arguments");
  if (args != nullptr && !args->IsNull() && !args->IsObject()) {
    return RpcError(m, kJsonRpcInvalidParams, "tools/call params.arguments must be an object");
  }
  const config::McpSettings settings = Settings();
  const auto max_chars = static_cast<size_t>(settings.max_output_chars);
  const std::string tool(spec->name);
  bool is_error = false;
  if (tool == "exec") {
    bool cancelled = false;
    const std::string structured =
        ExecResult(args, who, settings, notify, m, flight, &cancelled, &is_error);
    if (cancelled) return {McpReply::Kind::kCancelled, "", 200};
    return {McpReply::Kind::kResponse, ToolResultJson(m, structured, is_error)};
  }
  // policy_check takes an exec call (POST /v1/policy/check): it decides it, runs nothing.
  std::optional<std::string> body = WireCall(tool == "policy_check" ? "exec" : tool, args);
  if (tool == "process" && args != nullptr && args->IsObject()) {
    // A poll waits at most what is left of the block limit: no call blocks past it.
    const auto* timeout = JsonMember(*args, "timeout");
    if (timeout != nullptr && timeout->IsNumber() &&
        timeout->GetDouble() > static_cast<double>(settings.max_block_ms)) {
      rapidjson::Document clamped;
      clamped.CopyFrom(*args, clamped.GetAllocator());
      clamped["timeout"].SetInt64(settings.max_block_ms);
      body = WireCall(tool, &clamped);
    }
  }
  RuntimeReply reply = tool == "process"       ? runtime_.Process(who, *body)
                       : tool == "apply_patch" ? runtime_.ApplyPatch(who, *body)
                                               : runtime_.PolicyCheck(who, *body);
  Structured s = StructuredFrom(reply.json, max_chars);
  return {McpReply::Kind::kResponse, ToolResultJson(m, s.json, s.is_error)};
}

std::string McpServer::ExecResult(const rapidjson::Value* args, const Principal& who,
                                  const config::McpSettings& settings, const Notify& notify,
                                  const McpMessage& m, InFlight& flight, bool* cancelled,
                                  bool* is_error) {
  *is_error = true;  // until the run's own result says otherwise
  auto call = ParseToolCall(*WireCall("exec", args));
  if (!call) return RefusalStructured(call.error().WireCode(), call.error().message);
  policy::ExecRequest request = std::move(call->exec);
  const auto start = std::chrono::steady_clock::now();
  const int64_t block_ms = settings.max_block_ms;
  if (request.rm) {
    // A --rm call runs in the foreground only (its sandbox goes when it ends): it cannot yield,
    // so its timeout is the block limit instead.
    const double limit_s = static_cast<double>(block_ms) / 1000.0;
    if (!request.timeout_seconds || *request.timeout_seconds <= 0 ||
        *request.timeout_seconds > limit_s) {
      request.timeout_seconds = limit_s;
    }
  } else if (!request.background) {
    request.yield_ms = std::min(request.yield_ms.value_or(block_ms), block_ms);
  }
  // Waiting needs an operator to wait for: the server's broker (HTTP, and stdio through the
  // bridge). In-process, askFallback decides, as for the one-shot CLI.
  if (settings.wait_for_approval && transport_ == "http") request.wait = true;

  // The caller's cancel as one token; the approval wait also ends at the block limit.
  CancelToken caller_gone, approval_over;
  std::mutex watch_mu;
  std::condition_variable watch_wake;  // the end of the call wakes the watcher at once
  bool done = false;                   // guarded by watch_mu
  std::thread watcher([&] {
    const auto deadline = start + std::chrono::milliseconds(block_ms);
    std::unique_lock<std::mutex> lock(watch_mu);
    while (!done) {
      if (flight.cancelled()) {
        caller_gone.Cancel();
        approval_over.Cancel();
        return;
      }
      if (std::chrono::steady_clock::now() >= deadline) approval_over.Cancel();
      watch_wake.wait_for(lock, std::chrono::milliseconds(50));
    }
  });

  YieldWatch watch;
  watch.cancel = &caller_gone;
  watch.deadline = start + std::chrono::milliseconds(block_ms);
  watch.keep_over_bytes = static_cast<uint64_t>(settings.max_output_chars);
  if (notify && !m.progress_token_json.empty()) {
    watch.progress = [&](const std::string& tail, uint64_t total) {
      // progress.mdx: the value increases with each notification; the output so far is the
      // message (its tail), at most one notification a tick.
      rapidjson::StringBuffer buffer;
      JsonWriter w(buffer);
      w.StartObject();
      WriteJsonField(w, "jsonrpc", "2.0");
      WriteJsonField(w, "method", "notifications/progress");
      w.Key("params");
      w.StartObject();
      w.Key("progressToken");
      w.RawValue(m.progress_token_json.data(), m.progress_token_json.size(),
                 rapidjson::kNumberType);
      w.Key("progress");
      w.Uint64(total);
      WriteJsonField(w, "message", tail);
      w.EndObject();
      w.EndObject();
      if (!notify(buffer.GetString())) caller_gone.Cancel();
    };
  }
  ExecToolResult result = runtime_.ExecWatched(who, request, watch, &approval_over);
  {
    std::lock_guard<std::mutex> lock(watch_mu);
    done = true;
  }
  watch_wake.notify_all();
  watcher.join();
  if (caller_gone.cancelled()) {
    *cancelled = true;
    if (!result.session_id.empty()) {
      // Cancelled as its window ended: the run went to the background (or was kept for its long
      // output) behind a caller that will never hear of it. It goes.
      (void)runtime_.Process(who, R"({"tool":"process","action":")" +
                                      std::string(result.running ? "kill" : "remove") +
                                      R"(","sessionId":")" + result.session_id + R"("})");
    }
    return "";
  }
  if (result.refused || result.internal) {
    return RefusalStructured(result.error.WireCode(), result.error.message, result.internal);
  }
  const size_t max_chars = static_cast<size_t>(settings.max_output_chars);
  Structured s = StructuredFrom(result.json, max_chars, result.session_id, result.output_head);
  *is_error = s.is_error;
  return s.json;
}

}  // namespace sandrun::api

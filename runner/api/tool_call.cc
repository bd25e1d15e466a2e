#include "runner/api/tool_call.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>
#include <csignal>
#include <cstring>

#include "runner/config/config.h"
#include "runner/policy/shell_analysis.h"
#include "runner/wire/tool_result.h"
#include "runner/wire/tool_schemas.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"

namespace sandrun::api {
namespace {

using Writer = JsonWriter;

Error Invalid(std::string message) { return Error::Refusal("invalid-request", std::move(message)); }

std::string Str(const rapidjson::Value& v) {
  return std::string(v.GetString(), v.GetStringLength());
}

}  // namespace

Result<int64_t> ParseMemoryChoice(std::string_view text) {
  Result<int64_t> bytes = config::ParseByteSize(text);
  if (!bytes || *bytes <= 0) {
    return Invalid("exec memory \"" + std::string(text) +
                   "\" must be a positive size such as \"512m\" or \"2g\"");
  }
  return bytes;
}

Status ValidateSandboxChoices(const policy::ExecRequest& r) {
  for (const auto* choice : {&r.image, &r.network}) {
    if (*choice && (choice->value().empty() || choice->value().find('\0') != std::string::npos)) {
      return Invalid(std::string("exec ") + (choice == &r.image ? "image" : "network") +
                     " must be a non-empty name without NUL bytes");
    }
  }
  // The engine's own minimums: below them a limit is refused at create (memory) or rounds to
  // 0 nano-CPUs, which the engine reads as no limit at all (cpus).
  constexpr int64_t kMinMemory = int64_t{6} << 20;
  if (r.memory_bytes && *r.memory_bytes < kMinMemory) {
    return Invalid("exec memory must be at least 6m (the engine's minimum)");
  }
  if (r.cpus && (!std::isfinite(*r.cpus) || *r.cpus < 0.01 || *r.cpus > 1024)) {
    return Invalid("exec cpus must be a number from 0.01 to 1024");
  }
  if (r.pids && *r.pids <= 0) return Invalid("exec pids must be a positive whole number");
  if (r.rm && (r.background || r.yield_ms)) {
    return Invalid(
        "exec rm removes the call's sandbox when the call ends: it runs in the foreground only "
        "(drop background/yieldMs)");
  }
  return Ok();
}

namespace {

// Fills `req` from the object; returns an error for a wrong type or value. The types are the
// spec's (wire::ToolSpecs: the one definition of the parameters); the values are checked here.
Status ReadExecParams(const rapidjson::Value& obj, policy::ExecRequest& req) {
  const auto* command = JsonMember(obj, "command");
  if (command == nullptr || command->IsNull()) return Invalid("Provide a command to start.");
  // OpenClaw's own text for a host of another type, before the generic one.
  for (const auto& m : obj.GetObject()) {
    if (Str(m.name) == "host" && !m.value.IsNull() && !m.value.IsString()) {
      return Invalid(std::string("Invalid exec host value type ") + JsonTypeName(m.value) +
                     ". Allowed values: auto, sandbox, gateway, node.");
    }
  }
  const wire::ToolSpec& spec = *wire::FindToolSpec("exec");
  SANDRUN_RETURN_IF_ERROR(wire::CheckToolParams(spec, obj));
  req.command = Str(*command);
  SANDRUN_RETURN_IF_ERROR(ValidateCommand(req.command));
  for (const auto& m : obj.GetObject()) {
    std::string key = Str(m.name);
    const auto& v = m.value;
    // An explicit null means "not given"; other keys ("tool" too) are ignored, as OpenClaw's
    // schema does.
    if (v.IsNull() || wire::FindParam(spec, key) == nullptr) continue;
    if (key == "workdir") {
      if (Str(v).find('\0') != std::string::npos)
        return Invalid("exec workdir contains a NUL byte");
      req.workdir = Str(v);
    } else if (key == "env") {
      for (const auto& kv : v.GetObject()) req.env[Str(kv.name)] = Str(kv.value);
    } else if (key == "yieldMs") {
      double d = v.GetDouble();
      if (std::isfinite(d)) req.yield_ms = static_cast<int64_t>(std::clamp(d, 10.0, 120000.0));
    } else if (key == "background") {
      req.background = v.GetBool();
    } else if (key == "timeout" || key == "timeoutSeconds") {
      if (!std::isfinite(v.GetDouble())) return Invalid("exec " + key + " must be finite");
      req.timeout_seconds = v.GetDouble();
    } else if (key == "pty") {
      req.pty = v.GetBool();
    } else if (key == "elevated") {
      req.elevated = v.GetBool();
    } else if (key == "wait") {
      req.wait = v.GetBool();
    } else if (key == "host") {
      req.host = Str(v);
    } else if (key == "security" || key == "ask" || key == "node") {
      (key == "security" ? req.security : key == "ask" ? req.ask : req.node) = Str(v);
    } else if (key == "image" || key == "network") {
      (key == "image" ? req.image : req.network) = Trim(Str(v));
    } else if (key == "memory") {
      if (v.IsInt64()) {
        req.memory_bytes = v.GetInt64();
      } else {
        SANDRUN_ASSIGN_OR_RETURN(req.memory_bytes, ParseMemoryChoice(Str(v)));
      }
    } else if (key == "cpus") {
      req.cpus = v.GetDouble();
    } else if (key == "pids") {
      req.pids = v.GetInt64();
    } else if (key == "rm") {
      req.rm = v.GetBool();
    }
  }
  return ValidateSandboxChoices(req);
}

// apply_patch: "input" (a non-empty string), optional "workdir" and "model" strings.
Status ReadApplyPatchParams(const rapidjson::Value& obj, ApplyPatchRequest& req) {
  const auto* input = JsonMember(obj, "input");
  if (input == nullptr || input->IsNull()) {
    return Invalid(
        "apply_patch needs \"input\": the patch text (*** Begin Patch ... *** End Patch)");
  }
  SANDRUN_RETURN_IF_ERROR(wire::CheckToolParams(*wire::FindToolSpec("apply_patch"), obj));
  req.input = Str(*input);
  if (req.input.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Invalid(
        "apply_patch needs \"input\": the patch text (*** Begin Patch ... *** End Patch)");
  }
  for (const char* key : {"workdir", "model"}) {
    const auto* v = JsonMember(obj, key);
    if (v == nullptr || v->IsNull()) continue;
    if (Str(*v).find('\0') != std::string::npos) {
      return Invalid(std::string("apply_patch ") + key + " contains a NUL byte");
    }
    (std::string_view(key) == "workdir" ? req.workdir : req.model) = Str(*v);
  }
  return Ok();  // other keys are ignored, as for exec
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace

Status ValidateCommand(std::string_view command) {
  if (command.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return Invalid("Provide a command to start.");
  }
  if (command.find('\0') != std::string_view::npos) {
    return Invalid("exec command contains a NUL byte");
  }
  if (command.size() > kMaxCommandBytes) {
    return Invalid("exec command is " + std::to_string(command.size()) + " bytes; the limit is " +
                   std::to_string(kMaxCommandBytes));
  }
  return Ok();
}

Result<ToolCall> ParseToolCall(std::string_view text) {
  if (text.size() > kMaxCallBytes) {
    return Invalid("tool call is larger than " + std::to_string(kMaxCallBytes) + " bytes");
  }
  JsonParseOptions options;
  options.source_name = "tool call";
  auto doc = ParseJson(text, options);
  if (!doc) return Error::Refusal("invalid-json", doc.error().message);
  if (!doc->IsObject()) return Invalid("a tool call is a JSON object");
  const auto* tool = JsonMember(*doc, "tool");
  if (tool == nullptr || !tool->IsString()) {
    return Invalid("a tool call needs \"tool\": \"exec\" (a string)");
  }
  ToolCall call;
  call.tool = Str(*tool);
  if (call.tool == "apply_patch") {
    SANDRUN_RETURN_IF_ERROR(ReadApplyPatchParams(*doc, call.apply_patch));
    return call;
  }
  if (call.tool != "exec") {
    if (call.tool == "process") {
      return Error::Refusal("server-required",
                            "The process tool works on background sessions, which live in a "
                            "running server: start `sandrun serve`.");
    }
    return Error::Refusal("unknown-tool", "Unknown tool \"" + call.tool +
                                              "\". Known tools: exec, process, apply_patch.");
  }
  SANDRUN_RETURN_IF_ERROR(ReadExecParams(*doc, call.exec));
  return call;
}

std::string CommandFromWords(const std::vector<std::string>& words) {
  if (words.size() == 1) return words[0];
  std::string command;
  for (const std::string& word : words) {
    if (!command.empty()) command += ' ';  // a quoted word is never empty
    command += policy::QuoteShellWord(word);
  }
  return command;
}

std::string ToolNameOf(std::string_view text) {
  auto doc = ParseJson(text);
  return doc ? JsonString(*doc, "tool") : "";
}

std::string ExecRequestToJson(const policy::ExecRequest& r) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("tool");
  w.String("exec");
  w.Key("command");
  WriteJsonString(w, r.command);
  auto opt_string = [&](const char* key, const std::optional<std::string>& v) {
    if (!v) return;
    w.Key(key);
    WriteJsonString(w, *v);
  };
  opt_string("workdir", r.workdir);
  opt_string("host", r.host);
  opt_string("security", r.security);
  opt_string("ask", r.ask);
  opt_string("node", r.node);
  if (!r.env.empty()) {
    w.Key("env");
    w.StartObject();
    for (const auto& [k, v] : r.env) {
      WriteJsonString(w, k);
      WriteJsonString(w, v);
    }
    w.EndObject();
  }
  if (r.yield_ms) {
    w.Key("yieldMs");
    w.Int64(*r.yield_ms);
  }
  if (r.background) {
    w.Key("background");
    w.Bool(true);
  }
  if (r.timeout_seconds) {
    w.Key("timeout");
    w.Double(*r.timeout_seconds);
  }
  if (r.pty) {
    w.Key("pty");
    w.Bool(true);
  }
  if (r.elevated) {
    w.Key("elevated");
    w.Bool(*r.elevated);
  }
  if (r.wait) {
    w.Key("wait");
    w.Bool(true);
  }
  opt_string("image", r.image);
  opt_string("network", r.network);
  if (r.memory_bytes) {
    w.Key("memory");
    w.Int64(*r.memory_bytes);
  }
  if (r.cpus) {
    w.Key("cpus");
    w.Double(*r.cpus);
  }
  if (r.pids) {
    w.Key("pids");
    w.Int64(*r.pids);
  }
  if (r.rm) {
    w.Key("rm");
    w.Bool(true);
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string FailureReason(const exec::ExecOutcome& outcome, int64_t timeout_seconds) {
  using Status = exec::ExecOutcome::Status;
  switch (outcome.status) {
    case Status::kTimedOut:
      return "Command timed out after " + std::to_string(timeout_seconds) +
             " seconds. If this command is expected to take longer, re-run with a higher timeout "
             "(e.g., exec timeout=300). If it should keep running, start it with exec "
             "background=true or yieldMs so OpenClaw can register a pollable process session. "
             "Do not rely on shell backgrounding with a trailing &.";
    case Status::kSignaled:
      return "Command aborted by signal " + SignalName(outcome.signal);
    case Status::kAborted:
      return "Command aborted before exit code was captured";
    case Status::kExited:
      if (outcome.exit_code == 127) return "Command not found";
      if (outcome.exit_code == 126) return "Command not executable (permission denied)";
      return "";
  }
  return "";
}

std::string RenderExecOutcome(const exec::ExecOutcome& outcome, const std::string& host,
                              int64_t timeout_seconds, const std::vector<std::string>& warnings) {
  std::string reason = FailureReason(outcome, timeout_seconds);
  bool failed = !reason.empty();
  std::string aggregated = Trim(outcome.aggregated);
  std::string text;
  if (failed) {
    text = aggregated.empty() ? reason : aggregated + "\n\n" + reason;
  } else {
    if (outcome.exit_code != 0) {
      aggregated += "\n\n(Command exited with code " + std::to_string(outcome.exit_code) + ")";
      aggregated = Trim(aggregated);
    }
    text = aggregated.empty() ? "(no output)" : aggregated;
  }
  if (!warnings.empty()) {
    std::string joined;
    for (const auto& w : warnings) joined += (joined.empty() ? "" : "\n") + w;
    text = joined + "\n\n" + text;
  }

  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  BeginToolResult(w, text);
  w.Key("status");
  w.String(failed ? "failed" : "completed");
  w.Key("exitCode");
  if (outcome.status == exec::ExecOutcome::Status::kExited) {
    w.Int(outcome.exit_code);
  } else {
    w.Null();
  }
  if (outcome.status == exec::ExecOutcome::Status::kSignaled) {
    w.Key("signal");
    WriteJsonString(w, SignalName(outcome.signal));
  }
  w.Key("durationMs");
  w.Int64(outcome.duration_ms);
  w.Key("aggregated");
  WriteJsonString(w, aggregated);
  if (failed) {
    w.Key("timedOut");
    w.Bool(outcome.status == exec::ExecOutcome::Status::kTimedOut);
  }
  w.Key("cwd");
  WriteJsonString(w, outcome.cwd);
  w.Key("host");
  WriteJsonString(w, host);
  w.Key("truncated");
  w.Bool(outcome.truncated);
  w.Key("totalBytes");
  w.Uint64(outcome.total_bytes);
  EndToolResult(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace sandrun::api

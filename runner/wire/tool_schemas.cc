#include "runner/wire/tool_schemas.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>
#include <utility>

#include "sandbox/base/json.h"

namespace sandrun::wire {
namespace {

// ---- Parameters ----------------------------------------------------------------------------

std::vector<ParamSpec> ExecParams() {
  using T = ParamType;
  return {
      {.name = "command",
       .description =
           "The shell command to run. In the sandbox it runs as `sh -lc <command>` in the "
           "agent's container (working directory /workspace); on the host, with the host's "
           "shell and `-c`. At most 1 MiB, no NUL bytes. Do not background it with a trailing "
           "`&`: use background or yieldMs instead.",
       .required = true},
      {.name = "workdir",
       .description =
           "The command's working directory: relative to the workspace, or absolute (in the "
           "sandbox, a path under /workspace). Default: the workspace; one that is unavailable "
           "falls back to it with a warning."},
      {.name = "env",
       .type = T::kStringMap,
       .description =
           "Environment variables to add for this command. On the host, overrides of PATH, "
           "LD_*, DYLD_*, BASH_FUNC_* and other dangerous variables are refused."},
      {.name = "yieldMs",
       .type = T::kNumber,
       .description =
           "How long to wait for the command to finish, in milliseconds (clamped to 10..120000; "
           "default 10000). If it is still running then, it continues as a background session "
           "and the call returns status \"running\" with a sessionId: follow it with the "
           "process tool. Needs a running server (`sandrun serve`); without one the command "
           "runs to completion."},
      {.name = "background",
       .type = T::kBoolean,
       .description =
           "Start the command as a background session at once: the call returns status "
           "\"running\" with a sessionId to follow with the process tool (poll, log, write, "
           "kill)."},
      {.name = "timeout",
       .type = T::kNumber,
       .description =
           "Kill the command after this many seconds (default tools.exec.timeoutSeconds, 1800; "
           "0 or less: no limit). Applies to background sessions too.",
       .want = "a number of seconds"},
      {.name = "timeoutSeconds",
       .type = T::kNumber,
       .description = "The same as timeout (OpenClaw's newer name).",
       .want = "a number of seconds"},
      {.name = "pty",
       .type = T::kBoolean,
       .description =
           "Run the command on a pseudo-terminal, for programs that need one (editors, pagers, "
           "REPLs); its output then holds terminal escapes. In a background session, drive it "
           "with the process tool (send-keys, paste, submit)."},
      {.name = "elevated",
       .type = T::kBoolean,
       .description =
           "Ask to run on the host (gateway) instead of the sandbox. Refused unless the operator "
           "enabled elevated access for this caller (tools.elevated); an elevated command may "
           "still need an operator's approval."},
      {.name = "wait",
       .type = T::kBoolean,
       .description =
           "When the command needs an operator's approval, wait for the decision and run the "
           "approved command as this call (a running server only). Without it the call returns "
           "status \"approval-pending\" at once and an approved command runs in the "
           "background."},
      {.name = "host",
       .description =
           "Where to run: auto (the configured host: the sandbox when the session is "
           "sandboxed), sandbox (fails closed: refused when no sandbox is available, never run "
           "elsewhere), gateway (this machine, outside the sandbox), node (no node hosts yet). "
           "A call may only narrow the configured host.",
       .enum_values = {"auto", "sandbox", "gateway", "node"}},
      {.name = "security",
       .description =
           "deny | allowlist | full. Accepted for OpenClaw compatibility and ignored: a call "
           "cannot change its own security.",
       .enum_values = {"deny", "allowlist", "full"}},
      {.name = "ask",
       .description =
           "When a host command needs an operator's approval: off, on-miss (commands the "
           "allowlist does not satisfy) or always. It may only tighten the configured value.",
       .enum_values = {"off", "on-miss", "always"}},
      {.name = "node",
       .description = "The node host to run on with host=node (no node hosts are available yet)."},
      {.name = "image",
       .description =
           "The sandbox image for this call (such as sandrun-sandbox:minimal): only one the "
           "configuration allows (sandbox.allow.images). Another image is another container."},
      {.name = "network",
       .description =
           "The sandbox's network mode for this call (default none: no network): only one the "
           "configuration allows (sandbox.allow.network), such as bridge."},
      {.name = "memory",
       .type = T::kStringOrInteger,
       .description =
           "The memory limit of this call's sandbox: a byte count or a size such as \"512m\" or "
           "\"2g\" (at least 6m), within sandbox.allow.memory.",
       .want = "a byte count or a size such as \"512m\"",
       .minimum = 6 << 20},
      {.name = "cpus",
       .type = T::kNumber,
       .description = "The CPU limit of this call's sandbox, within sandbox.allow.cpus.",
       .minimum = 0.01,
       .maximum = 1024},
      {.name = "pids",
       .type = T::kInteger,
       .description = "The process-count limit of this call's sandbox, within sandbox.allow.pids.",
       .minimum = 1},
      {.name = "rm",
       .type = T::kBoolean,
       .description =
           "Run in a fresh sandbox of this call's own, removed with its scratch data when the "
           "call ends (foreground only: not with background or yieldMs)."},
  };
}

std::vector<ParamSpec> ProcessParams() {
  using T = ParamType;
  return {
      {.name = "action",
       .description =
           "list: the background sessions. poll: new output since the last poll, and the exit "
           "status once the session ended (waits up to timeout ms). log: the session's output "
           "by lines (offset, limit). write: data to its stdin (eof closes it). send-keys: "
           "literal text, hex bytes and named keys. submit: Enter. paste: text. kill: stop a "
           "running session. clear: forget a finished one. remove: kill if running, then "
           "forget.",
       .enum_values = {"list", "poll", "log", "write", "send-keys", "submit", "paste", "kill",
                       "clear", "remove"},
       .required = true},
      {.name = "sessionId",
       .description =
           "The session: the sessionId of exec's \"running\" result or of list. Required by "
           "every action but list."},
      {.name = "data", .description = "write: the text to write to the session's stdin."},
      {.name = "eof",
       .type = T::kBoolean,
       .description = "write: close the session's stdin after writing."},
      {.name = "keys",
       .type = T::kStringArray,
       .description =
           "send-keys: key names sent in order after literal and hex, such as Enter, Tab, Up, "
           "C-c, M-x, ^D, F5; an unknown name is sent as text."},
      {.name = "hex",
       .type = T::kStringArray,
       .description = "send-keys: raw bytes in hex, such as \"1b\" or \"0x03\"."},
      {.name = "literal", .description = "send-keys: text sent as it is, first."},
      {.name = "text", .description = "paste: the text to paste."},
      {.name = "bracketed",
       .type = T::kBoolean,
       .description = "paste: wrap the text in bracketed-paste escapes (default true)."},
      {.name = "offset",
       .type = T::kNumber,
       .description =
           "log: the first line to show (0-based). Without offset and limit, log shows the last "
           "200 lines.",
       .minimum = 0},
      {.name = "limit",
       .type = T::kNumber,
       .description = "log: how many lines to show (without offset: the last limit lines).",
       .minimum = 0},
      {.name = "timeout",
       .type = T::kNumber,
       .description =
           "poll: wait up to this many milliseconds (at most 120000) for the session to end "
           "before answering.",
       .minimum = 0},
  };
}

std::vector<ParamSpec> ApplyPatchParams() {
  return {
      {.name = "input",
       .description =
           "The patch: *** Begin Patch, then file sections, then *** End Patch. "
           "\"*** Add File: <path>\" followed by the new file's lines, each prefixed with +; "
           "\"*** Delete File: <path>\"; \"*** Update File: <path>\" (optionally followed by "
           "\"*** Move to: <new path>\") with @@ hunks of context ( ), removed (-) and added (+) "
           "lines.",
       .required = true},
      {.name = "workdir",
       .description =
           "The directory the patch's paths are relative to, itself relative to the workspace. "
           "Default: the workspace."},
      {.name = "model",
       .description = "The calling model's id (gpt-5.4 or openai/gpt-5.4), checked against "
                      "tools.exec.applyPatch.allowModels when that is set."},
  };
}

// ---- Results (MCP outputSchema) ------------------------------------------------------------
//
// Each result is the tool result's `details` object with `aggregated` renamed to `output`, or a
// refusal {"status":"refused","code","message"}: the fields below are every key the renderers
// can write (RenderExecOutcome, RenderRunning, RenderApprovalPending, the process actions,
// apply_patch's RenderApplied, PolicyCheckJson), each typed as it is written.

// A JSON Schema type as the specs write it: a parameter's (ShapeOf) or a result field's.
enum class Shape {
  kString,
  kStringOrNull,
  kNumber,
  kInteger,
  kIntegerOrNull,
  kStringOrInteger,
  kBoolean,
  kStringMap,
  kStringArray,
  kObject,       // with `fields`
  kObjectArray,  // items with `fields`
};

struct OutField {
  std::string_view name{};
  Shape type = Shape::kString;
  std::string_view description{};
  std::vector<OutField> fields{};
};

struct OutputSpec {
  std::vector<OutField> fields{};
  // "required": [required]; when empty, "anyOf" a required one of `any_of` instead.
  std::string_view required{};
  std::vector<std::string_view> any_of{};
};

Shape ShapeOf(ParamType type) {
  switch (type) {
    case ParamType::kString:
      return Shape::kString;
    case ParamType::kNumber:
      return Shape::kNumber;
    case ParamType::kInteger:
      return Shape::kInteger;
    case ParamType::kBoolean:
      return Shape::kBoolean;
    case ParamType::kStringMap:
      return Shape::kStringMap;
    case ParamType::kStringArray:
      return Shape::kStringArray;
    case ParamType::kStringOrInteger:
      return Shape::kStringOrInteger;
  }
  return Shape::kString;
}

void WriteStringList(JsonWriter& w, const std::vector<std::string_view>& items) {
  w.StartArray();
  for (std::string_view item : items) WriteJsonString(w, item);
  w.EndArray();
}

// {"type":"string"}, the value of an additionalProperties or items of strings.
void WriteStringSchema(JsonWriter& w) {
  w.StartObject();
  WriteJsonField(w, "type", "string");
  w.EndObject();
}

void WriteProperties(JsonWriter& w, const std::vector<OutField>& fields);

// "type" and what goes with it (items, properties, additionalProperties), into the open object.
void WriteType(JsonWriter& w, Shape shape, const std::vector<OutField>& fields) {
  w.Key("type");
  switch (shape) {
    case Shape::kString:
      w.String("string");
      break;
    case Shape::kStringOrNull:
      WriteStringList(w, {"string", "null"});
      break;
    case Shape::kNumber:
      w.String("number");
      break;
    case Shape::kInteger:
      w.String("integer");
      break;
    case Shape::kIntegerOrNull:
      WriteStringList(w, {"integer", "null"});
      break;
    case Shape::kStringOrInteger:
      WriteStringList(w, {"string", "integer"});
      break;
    case Shape::kBoolean:
      w.String("boolean");
      break;
    case Shape::kStringMap:
      w.String("object");
      w.Key("additionalProperties");
      WriteStringSchema(w);
      break;
    case Shape::kStringArray:
      w.String("array");
      w.Key("items");
      WriteStringSchema(w);
      break;
    case Shape::kObject:
      w.String("object");
      WriteProperties(w, fields);
      break;
    case Shape::kObjectArray:
      w.String("array");
      w.Key("items");
      w.StartObject();
      WriteJsonField(w, "type", "object");
      WriteProperties(w, fields);
      w.EndObject();
      break;
  }
}

void WriteProperties(JsonWriter& w, const std::vector<OutField>& fields) {
  w.Key("properties");
  w.StartObject();
  for (const OutField& f : fields) {
    WriteJsonString(w, f.name);
    w.StartObject();
    WriteType(w, f.type, f.fields);
    if (!f.description.empty()) WriteJsonField(w, "description", f.description);
    w.EndObject();
  }
  w.EndObject();
}

std::string OutputSchemaJson(const OutputSpec& spec) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  WriteJsonField(w, "$schema", "https://json-schema.org/draft/2020-12/schema");
  WriteJsonField(w, "type", "object");
  WriteProperties(w, spec.fields);
  if (!spec.required.empty()) {
    w.Key("required");
    WriteStringList(w, {spec.required});
  } else {
    w.Key("anyOf");
    w.StartArray();
    for (std::string_view name : spec.any_of) {
      w.StartObject();
      w.Key("required");
      WriteStringList(w, {name});
      w.EndObject();
    }
    w.EndArray();
  }
  w.Key("additionalProperties");
  w.Bool(true);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

// A refusal's fields, which every tool's result can have.
void AddRefusalFields(std::vector<OutField>& fields) {
  fields.push_back({"code", Shape::kString,
                    "refused: the wire code (invalid-request, denied, sandbox-unavailable, ...)"});
  fields.push_back({"message", Shape::kString, "refused: why, in words"});
}

// How a background session ended (the process actions' ExitDetails): exitCode only when it
// exited, never null.
void AddSessionExitFields(std::vector<OutField>& fields) {
  fields.push_back({"exitCode", Shape::kInteger, "the exit code, when the command exited"});
  fields.push_back({"exitSignal", Shape::kString, "the signal that ended it (SIGKILL, ...)"});
  fields.push_back({"timedOut", Shape::kBoolean, "true: it was killed at its timeout"});
  fields.push_back({"lost", Shape::kBoolean, "true: its end was not seen (the server restarted)"});
  fields.push_back({"exitReason", Shape::kString, "the exit line, as the text shows it"});
}

std::string ExecOutputSchema() {
  std::vector<OutField> fields = {
      {"status", Shape::kString,
       "completed: the command ran and exited (any exit code but 126 and 127); failed: not "
       "found (127), not executable (126), killed by a signal or at its timeout; running: it "
       "continues as a background session (sessionId: follow it with the process tool); "
       "approval-pending: an operator must approve it first (approvalId); refused: nothing ran "
       "(code and message say why)"},
      {"exitCode", Shape::kIntegerOrNull, "the exit code; null when it did not exit"},
      {"signal", Shape::kString, "failed by a signal: its name (SIGKILL, ...)"},
      {"timedOut", Shape::kBoolean, "failed: whether the timeout killed it"},
      {"durationMs", Shape::kInteger, "how long it ran, in milliseconds"},
      {"output", Shape::kString,
       "stdout and stderr merged in arrival order, trimmed (the tail when truncated)"},
      {"truncated", Shape::kBoolean, "true: output holds only the tail of what was written"},
      {"totalBytes", Shape::kInteger, "how many bytes of output the command wrote"},
      {"cwd", Shape::kString, "the working directory it ran in"},
      {"host", Shape::kString, "where it ran or would run: sandbox, gateway or node"},
      {"sessionId", Shape::kString, "running: the background session"},
      {"pid", Shape::kInteger, "running: the process id"},
      {"startedAt", Shape::kInteger, "running: when it started (Unix milliseconds)"},
      {"tail", Shape::kString, "running: the end of its output so far"},
      {"approvalId", Shape::kString, "approval-pending: the approval's id"},
      {"approvalSlug", Shape::kString, "approval-pending: the id's first 8 characters"},
      {"expiresAtMs", Shape::kInteger,
       "approval-pending: when the approval expires (Unix milliseconds)"},
      {"allowedDecisions", Shape::kStringArray,
       "approval-pending: what an operator may answer (allow-once, allow-always, deny)"},
      {"command", Shape::kString, "approval-pending: the command to approve"},
      {"warningText", Shape::kString, "approval-pending: the warnings, one a line"},
  };
  AddRefusalFields(fields);
  return OutputSchemaJson({.fields = std::move(fields), .required = "status"});
}

std::string ProcessOutputSchema() {
  std::vector<OutField> row = {
      {"sessionId", Shape::kString, "the session"},
      {"status", Shape::kString, "running, completed or failed"},
      {"pid", Shape::kInteger, "the process id, while it runs"},
      {"startedAt", Shape::kInteger, "when it started (Unix milliseconds)"},
      {"endedAt", Shape::kInteger, "when it ended (Unix milliseconds)"},
      {"runtimeMs", Shape::kInteger, "how long it ran or has run"},
      {"cwd", Shape::kString, "its working directory"},
      {"command", Shape::kString, "its command"},
      {"name", Shape::kString, "its name"},
      {"tail", Shape::kString, "the end of its output"},
      {"truncated", Shape::kBoolean, "true: the oldest output was dropped"},
      {"host", Shape::kString, "sandbox or gateway"},
  };
  AddSessionExitFields(row);
  std::vector<OutField> fields = {
      {"status", Shape::kString,
       "running: the session still runs; completed or failed: it ended so (kill answers failed; "
       "list and clear answer completed); refused: nothing happened (code and message say "
       "why)"},
      {"sessionId", Shape::kString, "the session"},
      {"name", Shape::kString, "the session's name"},
      {"output", Shape::kString,
       "poll: the session's output so far, stdout and stderr merged (the text shows only what is "
       "new)"},
      {"retryInMs", Shape::kInteger, "poll: when polling again is worth it"},
      {"total", Shape::kInteger, "log: the number of lines"},
      {"totalLines", Shape::kInteger, "log: the number of lines"},
      {"totalChars", Shape::kInteger, "log: the number of characters"},
      {"truncated", Shape::kBoolean, "log: true when the oldest output was dropped"},
      {"sessions", Shape::kObjectArray, "list: the background sessions, newest first",
       std::move(row)},
  };
  AddSessionExitFields(fields);
  AddRefusalFields(fields);
  return OutputSchemaJson({.fields = std::move(fields), .required = "status"});
}

std::string ApplyPatchOutputSchema() {
  std::vector<OutField> fields = {
      {"status", Shape::kString,
       "completed: every change was written; refused: nothing changed (code and message say "
       "why)"},
      {"added", Shape::kStringArray, "the files added"},
      {"updated", Shape::kStringArray, "the files updated"},
      {"deleted", Shape::kStringArray, "the files deleted"},
      {"moved",
       Shape::kObjectArray,
       "the files moved",
       {{"from", Shape::kString, "the old path"}, {"to", Shape::kString, "the new path"}}},
      {"cwd", Shape::kString, "the directory the paths are relative to"},
      {"host", Shape::kString, "sandbox or gateway"},
      {"durationMs", Shape::kInteger, "how long it took, in milliseconds"},
  };
  AddRefusalFields(fields);
  return OutputSchemaJson({.fields = std::move(fields), .required = "status"});
}

// PolicyCheckJson writes no status, and a refusal has no decision: a result has one or the
// other, so neither is required alone (anyOf).
std::string PolicyCheckOutputSchema() {
  std::vector<OutField> segment = {
      {"argv", Shape::kStringArray, "its words"},
      {"resolvedPath", Shape::kString, "the executable it resolves to"},
      {"satisfiedBy", Shape::kStringOrNull, "allowlist, safeBins, safeBuiltins, skills, or null"},
      {"miss", Shape::kString, "why nothing satisfied it"},
  };
  std::vector<OutField> fields = {
      {"decision", Shape::kString,
       "allow: exec would run it; ask: an operator would have to approve it; needs-review: the "
       "configured reviewer would be asked, then an operator; deny: exec would refuse it "
       "(reason says why)"},
      {"reason", Shape::kString, "why"},
      {"host",
       Shape::kObject,
       "the host asked for, configured and resolved",
       {{"requested", Shape::kStringOrNull, "the call's host"},
        {"configured", Shape::kString, "tools.exec.host"},
        {"effective", Shape::kStringOrNull, "where it would run (null: refused before)"}}},
      {"security", Shape::kString, "the effective security: deny, allowlist or full"},
      {"ask", Shape::kString, "the effective ask: off, on-miss or always"},
      {"analysis",
       Shape::kObject,
       "the shell analysis of the command",
       {{"ok", Shape::kBoolean, "whether the analyser understood it"},
        {"reason", Shape::kString, "what it did not understand"},
        {"segments", Shape::kObjectArray, "each simple command", std::move(segment)}}},
      {"inlineEval", Shape::kStringArray, "the inline programs found (python3 -c, ...)"},
      {"rewritten", Shape::kStringOrNull, "the command exec would run instead"},
      {"askFallback",
       Shape::kObject,
       "ask, needs-review: what happens when no operator answers",
       {{"security", Shape::kString, "askFallback"},
        {"approved", Shape::kBoolean, "whether it would run"},
        {"command", Shape::kString, "approved: what would run"},
        {"reason", Shape::kString, "not approved: why"}}},
      {"allowedDecisions", Shape::kStringArray, "ask, needs-review: an operator's choices"},
      {"allowAlways", Shape::kStringArray,
       "ask, needs-review: the patterns allow-always would keep"},
      {"status", Shape::kString, "refused, only then: nothing was decided"},
  };
  AddRefusalFields(fields);
  return OutputSchemaJson({.fields = std::move(fields), .any_of = {"decision", "status"}});
}

// Kept for the process's life, as the specs that point into it.
std::string_view Keep(std::string text) { return *new std::string(std::move(text)); }

std::vector<ToolSpec> MakeToolSpecs() {
  std::vector<ToolSpec> specs;
  specs.push_back(
      {.name = "exec",
       .title = "Run a shell command",
       .description =
           "Run a shell command. By default it runs in a Docker sandbox as `sh -lc <command>`: "
           "the agent's container, working directory /workspace, no network, a read-only root "
           "file system; it runs on this machine (host gateway) only where the configuration "
           "allows it or elevated access is granted. The result's status is completed (exitCode "
           "may be non-zero: a command that exits 1 completed), failed (not found, not "
           "executable, killed by a signal or at its timeout), running (the command is still "
           "running after yieldMs, default 10 s, or was started with background: follow the "
           "sessionId with the process tool) or approval-pending (an operator must approve it "
           "first). stdout and stderr come back merged, keeping the tail of long output. "
           "Refusals (bad parameters, host or sandbox unavailable, denied by policy) ran "
           "nothing.",
       .params = ExecParams(),
       .output_schema_json = Keep(ExecOutputSchema()),
       .destructive = true,
       .open_world = false});
  specs.push_back(
      {.name = "process",
       .title = "Manage background sessions",
       .description =
           "Follow and control the background sessions exec started (status running with a "
           "sessionId): list them, poll for new output and the exit status, read the whole log "
           "by lines, write to stdin, send keys, paste text or press Enter in a terminal "
           "session, kill a running one, clear or remove a finished one. Sessions belong to the "
           "calling agent; finished ones are kept for 30 minutes by default.",
       .params = ProcessParams(),
       .output_schema_json = Keep(ProcessOutputSchema()),
       .destructive = true});
  specs.push_back(
      {.name = "apply_patch",
       .title = "Apply a patch",
       .description =
           "Add, delete, update and move files in the workspace with one patch (the format is "
           "described under input). All or nothing: every hunk is checked before any file "
           "changes. Paths are relative to workdir and may not leave the workspace; in the "
           "sandbox it edits the files the container sees.",
       .params = ApplyPatchParams(),
       .output_schema_json = Keep(ApplyPatchOutputSchema()),
       .destructive = true});
  specs.push_back(
      {.name = "policy_check",
       .title = "Check what exec would decide",
       .description =
           "Decide what exec would do with these exact exec parameters, running nothing: the "
           "decision (allow, ask, needs-review or deny) with its reason, the host it would run "
           "on, the effective security and ask, how each simple command of the shell text "
           "resolves and what allowlist entry satisfies it, and what would be rewritten. Use it "
           "to learn whether a command needs an operator's approval before running it with "
           "exec.",
       .params = ExecParams(),
       .output_schema_json = Keep(PolicyCheckOutputSchema()),
       .read_only = true,
       .destructive = false,
       .idempotent = true});
  return specs;
}

// ---- Checking a call -----------------------------------------------------------------------

Error Invalid(std::string message) { return Error::Refusal("invalid-request", std::move(message)); }

std::string_view AsView(const rapidjson::Value& v) {
  return std::string_view(v.GetString(), v.GetStringLength());
}

// The first member named `name`, as RapidJSON's FindMember finds it; nullptr when there is none.
const rapidjson::Value* Member(const rapidjson::Value& obj, std::string_view name) {
  for (const auto& m : obj.GetObject()) {
    if (AsView(m.name) == name) return &m.value;
  }
  return nullptr;
}

std::string_view Want(const ParamSpec& p) {
  if (!p.want.empty()) return p.want;
  switch (p.type) {
    case ParamType::kString:
      return "a string";
    case ParamType::kNumber:
      return "a number";
    case ParamType::kInteger:
      return "a whole number";
    case ParamType::kBoolean:
      return "a boolean";
    case ParamType::kStringMap:
      return "an object of strings";
    case ParamType::kStringArray:
      return "an array of strings";
    case ParamType::kStringOrInteger:
      return "a string or a whole number";
  }
  return "";
}

// Whether `v` is of the type (a map or an array: the container; its items are checked apart).
// A whole number is one RapidJSON holds as an int64, as the parsers read it.
bool HasType(ParamType type, const rapidjson::Value& v) {
  switch (type) {
    case ParamType::kString:
      return v.IsString();
    case ParamType::kNumber:
      return v.IsNumber();
    case ParamType::kInteger:
      return v.IsInt64();
    case ParamType::kBoolean:
      return v.IsBool();
    case ParamType::kStringMap:
      return v.IsObject();
    case ParamType::kStringArray:
      return v.IsArray();
    case ParamType::kStringOrInteger:
      return v.IsString() || v.IsInt64();
  }
  return false;
}

Status CheckParam(const ToolSpec& spec, const ParamSpec& p, const rapidjson::Value& v) {
  auto refuse = [&](std::string_view got) {
    return Invalid(std::string(spec.name) + " parameter \"" + std::string(p.name) + "\" must be " +
                   std::string(Want(p)) + ", got " + std::string(got));
  };
  if (!HasType(p.type, v)) return refuse(JsonTypeName(v));
  if (p.type == ParamType::kStringMap) {
    for (const auto& m : v.GetObject()) {
      if (!m.value.IsString()) {
        return Invalid(std::string(spec.name) + " " + std::string(p.name) + " value of \"" +
                       std::string(AsView(m.name)) + "\" must be a string, got " +
                       JsonTypeName(m.value));
      }
    }
  } else if (p.type == ParamType::kStringArray) {
    for (const auto& item : v.GetArray()) {
      if (!item.IsString()) return refuse(std::string("an array with a ") + JsonTypeName(item));
    }
  }
  return Ok();
}

void WriteBound(JsonWriter& w, const char* key, std::optional<double> bound) {
  if (!bound) return;
  w.Key(key);
  double whole = std::trunc(*bound);
  if (whole == *bound && std::fabs(whole) < 9e15) {
    w.Int64(static_cast<int64_t>(whole));  // 0, not 0.0
  } else {
    w.Double(*bound);
  }
}

void WriteParamSchema(JsonWriter& w, const ParamSpec& p) {
  w.StartObject();
  WriteType(w, ShapeOf(p.type), {});
  if (!p.description.empty()) WriteJsonField(w, "description", p.description);
  if (!p.enum_values.empty()) {
    w.Key("enum");
    WriteStringList(w, p.enum_values);
  }
  WriteBound(w, "minimum", p.minimum);
  WriteBound(w, "maximum", p.maximum);
  w.EndObject();
}

}  // namespace

const std::vector<ToolSpec>& ToolSpecs() {
  static const auto* const kSpecs = new std::vector<ToolSpec>(MakeToolSpecs());
  return *kSpecs;
}

const ToolSpec* FindToolSpec(std::string_view name) {
  for (const ToolSpec& spec : ToolSpecs()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const ParamSpec* FindParam(const ToolSpec& spec, std::string_view name) {
  for (const ParamSpec& p : spec.params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

Status CheckToolParams(const ToolSpec& spec, const rapidjson::Value& call) {
  if (!call.IsObject()) return Invalid("a tool call is a JSON object");
  // The required parameters first (what the parsers always looked at first), then the call's
  // members in its own order: the first problem found is the one named.
  for (const ParamSpec& p : spec.params) {
    if (!p.required) continue;
    const rapidjson::Value* v = Member(call, p.name);
    if (v == nullptr || v->IsNull()) {
      return Invalid(std::string(spec.name) + " parameter \"" + std::string(p.name) +
                     "\" is required");
    }
    SANDRUN_RETURN_IF_ERROR(CheckParam(spec, p, *v));
  }
  for (const auto& m : call.GetObject()) {
    if (m.value.IsNull()) continue;  // an explicit null means "not given"
    if (const ParamSpec* p = FindParam(spec, AsView(m.name))) {
      SANDRUN_RETURN_IF_ERROR(CheckParam(spec, *p, m.value));
    }
  }
  return Ok();
}

std::string InputSchemaJson(const ToolSpec& spec) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  WriteJsonField(w, "type", "object");
  w.Key("properties");
  w.StartObject();
  std::vector<std::string_view> required;
  for (const ParamSpec& p : spec.params) {
    WriteJsonString(w, p.name);
    WriteParamSchema(w, p);
    if (p.required) required.push_back(p.name);
  }
  w.EndObject();
  if (!required.empty()) {
    w.Key("required");
    WriteStringList(w, required);
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace sandrun::wire

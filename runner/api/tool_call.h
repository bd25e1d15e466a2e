// Tool-call JSON in and result JSON out (SPEC §2.1): parsing and validating `{"tool":"exec",...}`
// into an ExecRequest (and `{"tool":"apply_patch",...}` into an ApplyPatchRequest), and rendering
// outcomes in OpenClaw's shapes.
//
// Pattern of use:
//   Result<ToolCall> call = ParseToolCall(text);
//   if (!call) print(RenderToolError(call.error()));   // {"error":{"code","message"}}
//   ... run ... print(RenderExecOutcome(outcome, host, warnings));
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runner/policy/exec_request.h"
#include "sandbox/base/result.h"
#include "sandbox/executors/output.h"

namespace sandrun::api {

inline constexpr size_t kMaxCommandBytes = 1u << 20;  // 1 MiB
inline constexpr size_t kMaxCallBytes = 4u << 20;     // a whole tool call

// {"tool":"apply_patch","input":"*** Begin Patch ...","workdir":...,"model":...} (SPEC §6b).
struct ApplyPatchRequest {
  std::string input;                   // the patch envelope
  std::optional<std::string> workdir;  // relative to the workspace (or the container's view)
  std::optional<std::string> model;    // the calling model, for tools.exec.applyPatch.allowModels
};

struct ToolCall {
  std::string tool;  // "exec" | "apply_patch"
  policy::ExecRequest exec;
  ApplyPatchRequest apply_patch;
};

// Parses and validates a tool call. Every malformed input is a refusal naming the problem, with
// its wire code (invalid-json, invalid-request, unknown-tool, server-required). The parameters
// and their types are the exec and apply_patch specs' (runner/wire/tool_schemas.h).
Result<ToolCall> ParseToolCall(std::string_view text);

// The checks every command passes, whichever front end it came through: non-blank, no NUL
// byte, at most kMaxCommandBytes. The refusal is invalid-request.
Status ValidateCommand(std::string_view command);

// The call's sandbox choices (image, network, memory, cpus, pids, rm; issue 19) checked as a
// tool call's are, whichever front end built the request: names non-empty without NUL, limits
// positive (cpus at most 1024), rm only in the foreground. Whether the configuration allows
// them is the gate's (sandbox.allow.*). The refusal is invalid-request.
Status ValidateSandboxChoices(const policy::ExecRequest& request);

// `memory`: "512m", "2g" or a byte count; refused (invalid-request) when not a positive size.
Result<int64_t> ParseMemoryChoice(std::string_view text);

// The shell text for the words that follow "--" on the command line of exec and policy check.
// They are never reparsed: one word is the text byte for byte ("[a,b]" stays "[a,b]"); several
// are each quoted for sh (policy::QuoteShellWord) and joined with spaces, so that the shell runs
// exactly that argv: {"printf", "%s|", "a  b", "it's"} -> printf '%s|' 'a  b' 'it'"'"'s'. (One
// exception is the shell's, not ours: bash takes a command name starting with '%', quoted or not,
// as a job spec; the allowlist analysis refuses it as job-control.) No words: "".
std::string CommandFromWords(const std::vector<std::string>& words);

// The "tool" member of a tool call's text ("" when it is not a JSON object with a string there):
// which route a front end hands it to, before it is parsed and validated there.
std::string ToolNameOf(std::string_view text);

// The tool-call JSON for a request ({"tool":"exec",...}), e.g. to send it to a server.
std::string ExecRequestToJson(const policy::ExecRequest& request);

// completed | failed, with `details` as OpenClaw's ExecToolDetails plus sandrun's `host`,
// `truncated` and `totalBytes`. Warnings go before the text, separated by a blank line.
std::string RenderExecOutcome(const exec::ExecOutcome& outcome, const std::string& host,
                              int64_t timeout_seconds, const std::vector<std::string>& warnings);

// The failure reason OpenClaw appends for an outcome, or "" for a completed run.
std::string FailureReason(const exec::ExecOutcome& outcome, int64_t timeout_seconds);

}  // namespace sandrun::api

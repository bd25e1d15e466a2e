#include "runner/api/exec_cmd.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <variant>

#include "runner/api/exec_tool.h"
#include "runner/api/server_client.h"
#include "runner/api/tool_call.h"
#include "runner/config/state_dir.h"
#include "runner/policy/shell_analysis.h"
#include "sandbox/base/json.h"

namespace sandrun::api {
namespace {

// Ctrl-C / SIGTERM cancel the running command (its whole tree is killed), then we exit.
CancelToken g_cancel;

extern "C" void OnSignal(int) { g_cancel.Cancel(); }

void InstallCancelHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a closed stdout must not kill us before the child is reaped
}

void WriteAll(FILE* f, std::string_view bytes) {
  fwrite(bytes.data(), 1, bytes.size(), f);
  fflush(f);
}

// The running server's socket, or "" when none answers (then the call runs in-process).
std::string LiveServer(const GlobalOptions& global) {
  auto state_dir = config::StateDirPath();
  if (!state_dir) return "";
  std::string socket = ServerSocketPath(global, *state_dir);
  return ServerAnswers(socket) ? socket : "";
}

// `sandrun exec` without --json through a server: print what the result says, exit like the
// command. (Through the server, stdout and stderr arrive merged, at the end.)
int ReportServerExec(const Result<ServerReply>& reply) {
  if (!reply) {
    PrintError(reply.error().ToString());
    return kExitFailure;
  }
  auto doc = ParseJson(reply->body);
  if (!doc || !doc->IsObject()) {
    PrintError("the server answered " + std::to_string(reply->status) + ": " + reply->body);
    return kExitFailure;
  }
  if (const auto* error = JsonMember(*doc, "error")) {
    PrintError(JsonString(*error, "message"));
    return ExitCodeFor(*reply);
  }
  const auto* details = JsonMember(*doc, "details");
  std::string status = details ? JsonString(*details, "status") : "";
  std::string text;
  if (const auto* content = JsonMember(*doc, "content");
      content && content->IsArray() && !content->Empty()) {
    text = JsonString((*content)[0], "text");
  }
  if (status == "running" || status == "approval-pending") {
    // Nothing finished yet: the id to follow up with on stdout, the explanation on stderr.
    std::fprintf(stderr, "sandrun: %s\n", text.c_str());
    std::printf("%s\n",
                JsonString(*details, status == "running" ? "sessionId" : "approvalId").c_str());
    return kExitOk;
  }
  std::string aggregated = JsonString(*details, "aggregated");
  if (!aggregated.empty()) std::printf("%s\n", aggregated.c_str());
  const auto* code = JsonMember(*details, "exitCode");
  if (code != nullptr && code->IsInt()) {
    if (status == "failed")
      PrintError(text.substr(text.rfind("\n\n") == std::string::npos ? 0 : text.rfind("\n\n") + 2));
    return code->GetInt();
  }
  PrintError(text.substr(text.rfind("\n\n") == std::string::npos ? 0 : text.rfind("\n\n") + 2));
  return JsonBool(*details, "timedOut") ? 124 : kExitFailure;
}

}  // namespace

std::string ParseEnvFlags(const std::vector<std::string>& flags,
                          std::map<std::string, std::string>* env) {
  std::map<std::string, std::string> parsed;
  for (const auto& kv : flags) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return "--env takes KEY=VALUE, got \"" + kv + "\"";
    parsed[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (auto& [k, v] : parsed) (*env)[k] = std::move(v);
  return "";
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

int RunCallCommand(const GlobalOptions& global, const std::string& json_arg) {
  std::string text = json_arg;
  if (text.empty() || text == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  if (std::string socket = LiveServer(global); !socket.empty()) {
    auto doc = ParseJson(text);
    std::string tool = doc ? JsonString(*doc, "tool") : "";
    return PrintServerReply(PostToServer(
        socket, tool == "process" ? "/v1/tools/process" : "/v1/tools/exec", text, global));
  }
  auto parsed = ParseToolCall(text);
  if (auto* error = std::get_if<ToolError>(&parsed)) {
    std::printf("%s\n", RenderError(*error).c_str());
    return kExitRefused;
  }
  InstallCancelHandlers();
  const ToolCall& call = std::get<ToolCall>(parsed);
  ExecToolResult result = RunExecTool(global, CliCaller(global), call.exec, nullptr, &g_cancel);
  std::printf("%s\n", result.json.c_str());
  if (result.refused) return kExitRefused;
  if (result.internal) return kExitFailure;
  return kExitOk;
}

int RunExecCommand(const GlobalOptions& global, const ExecFlags& flags) {
  // Build the same request a tool call would carry, so both paths validate identically.
  std::string command = CommandFromWords(flags.command);
  policy::ExecRequest request;
  request.command = command;
  if (auto invalid = ValidateCommand(command)) {
    PrintError(invalid->message + " (usage: sandrun exec [flags] -- COMMAND)");
    return kExitRefused;
  }
  if (!flags.host.empty()) request.host = flags.host;
  if (!flags.security.empty()) request.security = flags.security;
  if (!flags.ask.empty()) request.ask = flags.ask;
  if (!flags.workdir.empty()) request.workdir = flags.workdir;
  if (flags.elevated) request.elevated = true;
  if (std::string bad = ParseEnvFlags(flags.env, &request.env); !bad.empty()) {
    PrintError(bad);
    return kExitRefused;
  }
  if (flags.timeout >= 0) request.timeout_seconds = flags.timeout;
  if (flags.yield_ms >= 0) request.yield_ms = flags.yield_ms;
  request.background = flags.background;
  request.pty = flags.pty;

  if (std::string socket = LiveServer(global); !socket.empty()) {
    auto reply = PostToServer(socket, "/v1/tools/exec", ExecRequestToJson(request), global);
    if (flags.json) return PrintServerReply(reply);
    return ReportServerExec(reply);
  }

  InstallCancelHandlers();
  exec::LiveSink live;
  if (!flags.json) {
    live = [](exec::Stream stream, std::string_view bytes) {
      WriteAll(stream == exec::Stream::kStderr ? stderr : stdout, bytes);
    };
  }
  ExecToolResult result = RunExecTool(global, CliCaller(global), request, live, &g_cancel);
  if (flags.json) {
    std::printf("%s\n", result.json.c_str());
    return result.refused ? kExitRefused : result.internal ? kExitFailure : kExitOk;
  }
  if (result.refused || result.internal) {
    PrintError(result.error.message);
    return result.refused ? kExitRefused : kExitFailure;
  }
  for (const auto& w : result.warnings) PrintWarning(w);
  const auto& out = result.outcome;
  using Status = exec::ExecOutcome::Status;
  std::string reason = FailureReason(out, result.timeout_seconds);
  switch (out.status) {
    case Status::kExited:
      return out.exit_code;
    case Status::kSignaled:
      PrintError(reason);
      return 128 + out.signal;
    case Status::kTimedOut:
      PrintError(reason);
      return 124;
    case Status::kAborted:
      PrintError(reason);
      return g_cancel.cancelled() ? 130 : kExitFailure;
  }
  return kExitFailure;
}

}  // namespace sandrun::api

namespace sandrun::api {

int RunProcessCommand(const GlobalOptions& global, const ProcessFlags& flags) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("tool");
  w.String("process");
  w.Key("action");
  w.String(flags.action.c_str());
  auto str = [&](const char* key, const std::string& v) {
    w.Key(key);
    w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  };
  auto list = [&](const char* key, const std::vector<std::string>& v) {
    w.Key(key);
    w.StartArray();
    for (const auto& item : v)
      w.String(item.c_str(), static_cast<rapidjson::SizeType>(item.size()));
    w.EndArray();
  };
  if (!flags.session_id.empty()) str("sessionId", flags.session_id);
  if (flags.timeout_ms >= 0) {
    w.Key("timeout");
    w.Int64(flags.timeout_ms);
  }
  if (flags.has_data) str("data", flags.data);
  if (flags.eof) {
    w.Key("eof");
    w.Bool(true);
  }
  if (!flags.keys.empty()) list("keys", flags.keys);
  if (flags.has_literal) str("literal", flags.literal);
  if (!flags.hex.empty()) list("hex", flags.hex);
  if (flags.has_text) str("text", flags.text);
  if (flags.no_bracketed) {
    w.Key("bracketed");
    w.Bool(false);
  }
  if (flags.offset >= 0) {
    w.Key("offset");
    w.Int64(flags.offset);
  }
  if (flags.limit >= 0) {
    w.Key("limit");
    w.Int64(flags.limit);
  }
  w.EndObject();
  std::string socket = LiveServer(global);
  if (socket.empty()) {
    std::printf("%s\n", RenderError(ToolError{"server-required",
                                              "The process tool works on background sessions, "
                                              "which live in a running server: start `sandrun "
                                              "serve`."})
                            .c_str());
    return kExitRefused;
  }
  return PrintServerReply(PostToServer(socket, "/v1/tools/process", buffer.GetString(), global));
}

}  // namespace sandrun::api

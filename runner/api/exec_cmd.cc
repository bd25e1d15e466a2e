#include "runner/api/exec_cmd.h"

#include <csignal>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <variant>

#include "runner/api/exec_tool.h"
#include "runner/api/tool_call.h"

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

}  // namespace

int RunCallCommand(const GlobalOptions& global, const std::string& json_arg) {
  std::string text = json_arg;
  if (text.empty() || text == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  auto parsed = ParseToolCall(text);
  if (auto* error = std::get_if<ToolError>(&parsed)) {
    std::printf("%s\n", RenderError(*error).c_str());
    return kExitRefused;
  }
  InstallCancelHandlers();
  const ToolCall& call = std::get<ToolCall>(parsed);
  ExecToolResult result = RunExecTool(global, call.exec, nullptr, &g_cancel);
  std::printf("%s\n", result.json.c_str());
  if (result.refused) return kExitRefused;
  if (result.internal) return kExitFailure;
  return kExitOk;
}

int RunExecCommand(const GlobalOptions& global, const ExecFlags& flags) {
  // Build the same request a tool call would carry, so both paths validate identically.
  std::string command;
  for (const auto& part : flags.command) command += (command.empty() ? "" : " ") + part;
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
  for (const auto& kv : flags.env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      PrintError("--env takes KEY=VALUE, got \"" + kv + "\"");
      return kExitRefused;
    }
    request.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (flags.timeout >= 0) request.timeout_seconds = flags.timeout;
  if (flags.yield_ms >= 0) request.yield_ms = flags.yield_ms;
  request.background = flags.background;
  request.pty = flags.pty;

  InstallCancelHandlers();
  exec::LiveSink live;
  if (!flags.json) {
    live = [](exec::Stream stream, std::string_view bytes) {
      WriteAll(stream == exec::Stream::kStderr ? stderr : stdout, bytes);
    };
  }
  ExecToolResult result = RunExecTool(global, request, live, &g_cancel);
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

#include "runner/api/exec_cmd.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <variant>

#include "runner/api/exec_stream.h"
#include "runner/api/exec_tool.h"
#include "runner/api/foreground_run.h"
#include "runner/api/runtime.h"
#include "runner/api/server_client.h"
#include "runner/api/tool_call.h"
#include "runner/config/state_dir.h"

namespace sandrun::api {
namespace {

// Ctrl-C / SIGTERM cancel the running command (its whole tree is killed), then we exit.
CancelToken g_cancel;
std::atomic<bool> g_cancelled{false};  // the same, for the server stream
volatile sig_atomic_t g_signal = 0;    // the signal that cancelled the run

extern "C" void OnSignal(int sig) {
  g_signal = sig;
  g_cancel.Cancel();
  g_cancelled.store(true);
}

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

// The command's stdin: ours when it is a pipe, a file or a socket (or with -i), else none (the
// command reads EOF at once): a terminal is never read behind the user's back.
int StdinToForward(bool interactive) {
  struct stat st {};
  if (::fstat(STDIN_FILENO, &st) != 0) return -1;
  if (interactive) return STDIN_FILENO;
  if (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)) return STDIN_FILENO;
  return -1;
}

// A runtime's reply printed and exited as a server's (0 handled, 2 refused, 1 internal).
int PrintReply(RuntimeReply reply) {
  return PrintServerReply(ServerReply{reply.status, std::move(reply.json)});
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

int RunCallCommand(const GlobalOptions& global, const std::string& json_arg) {
  std::string text = json_arg;
  if (text.empty() || text == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  const std::string tool = ToolNameOf(text);
  // apply_patch edits this user's files in-process, server or not; the rest goes to a server
  // when one answers.
  if (tool != "apply_patch") {
    if (std::string socket = LiveServer(global); !socket.empty()) {
      return PrintServerReply(PostToServer(
          socket, tool == "process" ? "/v1/tools/process" : "/v1/tools/exec", text, global));
    }
  }
  // In-process, the same runtime calls as the server's, printed and exited the same way.
  std::unique_ptr<Runtime> runtime = Runtime::StartOneShot(global);
  const Principal who = CliPrincipal(global);
  if (tool == "apply_patch") return PrintReply(runtime->ApplyPatch(who, text));
  // The process tool's checks (tool policy first) are the server's; then server-required.
  if (tool == "process") return PrintReply(runtime->Process(who, text));
  InstallCancelHandlers();  // an exec is cancelled (its tree killed) by our signals
  return PrintReply(runtime->Exec(who, text, &g_cancel));
}

int RunExecCommand(const GlobalOptions& global, const ExecFlags& flags) {
  // Refused before anything ran: 125, or 2 with --json (as `call`) unless --exit-code.
  const int refused = flags.json && !flags.exit_code ? kExitRefused : kExecExitRefused;
  // Build the same request a tool call would carry, so both paths validate identically.
  std::string command = CommandFromWords(flags.command);
  policy::ExecRequest request;
  request.command = command;
  if (Status valid = ValidateCommand(command); !valid) {
    PrintError(valid.error().ToString() + " (usage: sandrun exec [flags] -- COMMAND)");
    return refused;
  }
  if (!flags.host.empty()) request.host = flags.host;
  if (!flags.security.empty()) request.security = flags.security;
  if (!flags.ask.empty()) request.ask = flags.ask;
  if (!flags.workdir.empty()) request.workdir = flags.workdir;
  if (flags.elevated) request.elevated = true;
  request.wait = flags.wait;
  if (std::string bad = ParseEnvFlags(flags.env, &request.env); !bad.empty()) {
    PrintError(bad);
    return refused;
  }
  if (flags.timeout >= 0) request.timeout_seconds = flags.timeout;
  if (flags.yield_ms >= 0) request.yield_ms = flags.yield_ms;
  request.background = flags.background;
  request.pty = flags.pty;
  if (!flags.image.empty()) request.image = flags.image;
  if (!flags.network.empty()) request.network = flags.network;
  if (!flags.memory.empty()) {
    Result<int64_t> bytes = ParseMemoryChoice(flags.memory);
    if (!bytes) {
      PrintError(bytes.error().ToString());
      return refused;
    }
    request.memory_bytes = *bytes;
  }
  if (flags.cpus >= 0) request.cpus = flags.cpus;
  if (flags.pids >= 0) request.pids = flags.pids;
  request.rm = flags.rm;
  if (Status valid = ValidateSandboxChoices(request); !valid) {
    PrintError(valid.error().ToString());
    return refused;
  }

  InstallCancelHandlers();
  const int stdin_fd = StdinToForward(flags.interactive);
  // The command's output, byte for byte as it arrives (not with --json: the result holds it).
  exec::LiveSink live = [json = flags.json](exec::Stream stream, std::string_view bytes) {
    if (!json) WriteAll(stream == exec::Stream::kStderr ? stderr : stdout, bytes);
  };
  ExecReport report;
  if (std::string socket = LiveServer(global); !socket.empty()) {
    ExecStreamIo io;
    io.stdin_fd = stdin_fd;
    io.cancelled = &g_cancelled;
    io.output = [&live](bool is_stderr, std::string_view bytes) {
      live(is_stderr ? exec::Stream::kStderr : exec::Stream::kStdout, bytes);
    };
    std::error_code ec;
    std::string cwd = std::filesystem::current_path(ec).string();
    auto streamed = ExecThroughServer(socket, ExecRequestToJson(request), global, cwd, io);
    report = streamed ? std::move(streamed).value()
                      : ReportError(Error(streamed.error().code, streamed.error().ToString())
                                        .WithWire("server-unreachable"),
                                    true);
  } else {
    // The same runtime as the server's, one-shot: no sessions, so nothing outlives this call.
    std::unique_ptr<Runtime> runtime = Runtime::StartOneShot(global);
    ExecToolResult result = runtime->ExecForeground(
        CliPrincipal(global), request, [&](exec::Executor& executor, const exec::Plan& plan) {
          return RunInForeground(executor, plan, live, stdin_fd, &g_cancel);
        });
    report = ReportExec(result, g_signal);
  }
  return PrintExecReport(report, flags.json, flags.exit_code);
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
    // A one-shot runtime has no sessions: it refuses the call (tool-denied when the tool policy
    // denies process, else server-required).
    return PrintReply(
        Runtime::StartOneShot(global)->Process(CliPrincipal(global), buffer.GetString()));
  }
  return PrintServerReply(PostToServer(socket, "/v1/tools/process", buffer.GetString(), global));
}

}  // namespace sandrun::api

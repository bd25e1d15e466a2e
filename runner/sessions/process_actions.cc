// The process tool's actions (OpenClaw's bash-tools.process, reference §6): texts and details.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <functional>

#include "runner/sessions/internal.h"
#include "runner/sessions/keys.h"
#include "runner/sessions/manager.h"
#include "runner/sessions/text.h"
#include "runner/wire/tool_result.h"

namespace sandrun::sessions {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

constexpr int64_t kMaxPollWaitMs = 120000;
constexpr int64_t kDefaultLogTailLines = 200;
constexpr const char* kActions[] = {"list",   "poll",  "log",  "write", "send-keys",
                                    "submit", "paste", "kill", "clear", "remove"};

void Str(Writer& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// A refusal of an action (nothing happened), in the wire shape of every tool refusal. Codes:
// unknown-action, session-not-found, session-state (not backgrounded, stdin not writable, cursor
// key mode unknown), invalid-request.
ProcessResult Refuse(std::string code, std::string message) {
  return ProcessResult{"", true, Error::Refusal(std::move(code), std::move(message))};
}

// {"content":[{"type":"text","text":...}],"details":{...}}; `details` writes the members.
ProcessResult Reply(const std::string& text, const std::function<void(Writer&)>& details) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  BeginToolResult(w, text);
  details(w);
  EndToolResult(w);
  return ProcessResult{std::string(buffer.GetString(), buffer.GetSize()), false, std::nullopt};
}

std::string ExitLine(const SessionSnapshot& s) {
  if (s.lost) return s.lost_note;
  if (std::string reason = EndReason(s.phase, s.exit_signal, s.meta.timeout_ms); !reason.empty()) {
    return reason;
  }
  if (!s.exit_signal.empty()) return "Process exited with signal " + s.exit_signal + ".";
  if (s.exit_code) return "Process exited with code " + std::to_string(*s.exit_code) + ".";
  return "Process ended without an exit status.";
}

void ExitDetails(Writer& w, const SessionSnapshot& s) {
  if (s.exit_code) {
    w.Key("exitCode");
    w.Int(*s.exit_code);
  }
  if (!s.exit_signal.empty()) {
    w.Key("exitSignal");
    Str(w, s.exit_signal);
  }
  if (s.timed_out) {
    w.Key("timedOut");
    w.Bool(true);
  }
  if (s.lost) {
    w.Key("lost");
    w.Bool(true);
  }
  w.Key("exitReason");  // the exit line poll shows, for log and list too
  Str(w, ExitLine(s));
}

std::string NotBackgrounded(const std::string& id) {
  return "Session " + id + " is not backgrounded.";
}

}  // namespace

ProcessResult SessionManager::Process(const ProcessRequest& request, const Scope& scope) {
  if (request.action == "list") return List(scope);
  if (!request.session_id || request.session_id->empty()) {
    return Refuse("invalid-request", "sessionId is required for this action.");
  }
  if (std::none_of(std::begin(kActions), std::end(kActions),
                   [&](const char* a) { return request.action == a; })) {
    return Refuse("unknown-action", "Unknown action " + request.action);
  }
  const std::string& id = *request.session_id;
  std::shared_ptr<Session> session = Find(id, scope);
  // A run that finished inside its yield window was never a background session.
  if (session && session->finished() && !session->backgrounded()) session = nullptr;
  bool running = session && !session->finished();
  const std::string& action = request.action;

  if (action == "poll" || action == "log") {
    if (!session) return Refuse("session-not-found", "No session found for " + id);
    if (running && !session->backgrounded()) return Refuse("session-state", NotBackgrounded(id));
    return action == "poll" ? Poll(request, session) : Log(request, session);
  }
  if (action == "clear") {
    if (!session || running)
      return Refuse("session-not-found", "No finished session found for " + id);
    return Clear(session);
  }
  if (action == "remove") {
    if (!session) return Refuse("session-not-found", "No session found for " + id);
    return RemoveAction(session);
  }
  // write, send-keys, submit, paste, kill: running sessions only.
  if (!running) return Refuse("session-not-found", "No active session found for " + id);
  if (!session->backgrounded()) return Refuse("session-state", NotBackgrounded(id));
  if (action == "kill") return Kill(session);
  return Input(request, session);
}

ProcessResult SessionManager::List(const Scope& scope) {
  std::vector<SessionSnapshot> rows;
  for (const auto& session : Visible(scope)) {
    if (!session->backgrounded()) continue;
    rows.push_back(session->Snapshot());
  }
  std::sort(rows.begin(), rows.end(), [](const SessionSnapshot& a, const SessionSnapshot& b) {
    return a.started_at_ms != b.started_at_ms ? a.started_at_ms > b.started_at_ms : a.id < b.id;
  });
  int64_t now = hub_->Now();
  std::string text;
  for (const auto& s : rows) {
    int64_t runtime = (s.finished ? s.ended_at_ms : now) - s.started_at_ms;
    std::string label =
        !s.name.empty() ? TruncateMiddle(s.name, 80) : TruncateMiddle(s.meta.command, 120);
    if (!text.empty()) text += "\n";
    text += s.id + " " + PadRight(SessionStatusName(s.status), 9) + " " +
            FormatDurationCompact(std::max<int64_t>(runtime, 0)) + " :: " + label;
  }
  if (text.empty()) text = "No running or recent sessions.";
  return Reply(text, [&](Writer& w) {
    w.Key("status");
    w.String("completed");
    w.Key("sessions");
    w.StartArray();
    for (const auto& s : rows) {
      w.StartObject();
      w.Key("sessionId");
      Str(w, s.id);
      w.Key("status");
      w.String(SessionStatusName(s.status));
      if (s.pid > 0 && !s.finished) {
        w.Key("pid");
        w.Int64(s.pid);
      }
      w.Key("startedAt");
      w.Int64(s.started_at_ms);
      if (s.finished) {
        w.Key("endedAt");
        w.Int64(s.ended_at_ms);
      }
      w.Key("runtimeMs");
      w.Int64(std::max<int64_t>((s.finished ? s.ended_at_ms : now) - s.started_at_ms, 0));
      w.Key("cwd");
      Str(w, s.meta.cwd);
      w.Key("command");
      Str(w, s.meta.command);
      w.Key("name");
      Str(w, s.name);
      w.Key("tail");
      Str(w, s.tail);
      w.Key("truncated");
      w.Bool(s.truncated);
      w.Key("host");
      Str(w, s.meta.host);
      if (s.finished) ExitDetails(w, s);
      w.EndObject();
    }
    w.EndArray();
  });
}

ProcessResult SessionManager::Poll(const ProcessRequest& request,
                                   const std::shared_ptr<Session>& session) {
  if (session->finished()) {
    SessionSnapshot s = session->Snapshot();
    std::string text = s.tail.empty()
                           ? std::string("(no output recorded") +
                                 (s.truncated ? " \xE2\x80\x94 truncated to cap" : "") + ")"
                           : TrimEnd(s.tail);
    text += "\n\n" + ExitLine(s);
    return Reply(text, [&](Writer& w) {
      w.Key("status");
      w.String(SessionStatusName(s.status));
      w.Key("sessionId");
      Str(w, s.id);
      ExitDetails(w, s);
      w.Key("aggregated");
      Str(w, s.aggregated);
      w.Key("name");
      Str(w, s.name);
    });
  }
  int64_t wait = std::clamp<int64_t>(request.timeout_ms.value_or(0), 0, kMaxPollWaitMs);
  if (wait > 0) (void)session->WaitFor(wait);
  bool exited = session->finished();  // before draining: once finished, all output is pending
  Session::Drained drained = session->Drain();
  std::string out = TrimEnd(drained.out);
  std::string err = TrimEnd(drained.err);
  std::string output = Trim(out.empty() ? err : err.empty() ? out : out + "\n" + err);
  SessionSnapshot s = session->Snapshot();
  std::optional<int64_t> retry;
  if (!exited) retry = session->NextRetryMs(!output.empty());
  std::string text = (output.empty() ? "(no new output)" : output) +
                     (exited ? "\n\n" + ExitLine(s) : std::string("\n\nProcess still running."));
  return Reply(text, [&](Writer& w) {
    w.Key("status");
    w.String(exited ? SessionStatusName(s.status) : "running");
    w.Key("sessionId");
    Str(w, s.id);
    if (exited) ExitDetails(w, s);
    w.Key("aggregated");
    Str(w, s.aggregated);
    w.Key("name");
    Str(w, s.name);
    if (retry) {
      w.Key("retryInMs");
      w.Int64(*retry);
    }
  });
}

ProcessResult SessionManager::Log(const ProcessRequest& request,
                                  const std::shared_ptr<Session>& session) {
  bool default_tail = !request.offset && !request.limit;
  std::optional<int64_t> limit =
      default_tail ? std::optional<int64_t>(kDefaultLogTailLines) : request.limit;
  LogSlice slice = session->SliceLog(request.offset, limit);
  SessionSnapshot s = session->Snapshot();
  std::string text = slice.text;
  if (slice.line_count == 0) text = s.finished ? "(no output recorded)" : "(no output yet)";
  if (slice.cut) {
    text += "\n\n[showing lines " + std::to_string(slice.first_line + 1) + "-" +
            std::to_string(slice.first_line + slice.line_count) + " of " +
            std::to_string(slice.total_lines) + " (size cap " +
            std::to_string(hub_->options.max_output_chars) + " chars); pass offset/limit to page]";
  } else if (default_tail && slice.total_lines > kDefaultLogTailLines) {
    text += "\n\n[showing last " + std::to_string(kDefaultLogTailLines) + " of " +
            std::to_string(slice.total_lines) + " lines; pass offset/limit to page]";
  }
  return Reply(text, [&](Writer& w) {
    w.Key("status");
    w.String(SessionStatusName(s.status));
    w.Key("sessionId");
    Str(w, s.id);
    w.Key("total");
    w.Int64(slice.total_lines);
    w.Key("totalLines");
    w.Int64(slice.total_lines);
    w.Key("totalChars");
    w.Uint64(slice.total_chars);
    w.Key("truncated");
    w.Bool(slice.dropped > 0);
    w.Key("name");
    Str(w, s.name);
    if (s.finished) ExitDetails(w, s);
  });
}

ProcessResult SessionManager::Input(const ProcessRequest& request,
                                    const std::shared_ptr<Session>& session) {
  const std::string& id = session->id();
  const std::string& action = request.action;
  std::string not_writable = "Session " + id + " stdin is not writable.";
  if (!session->input_open()) return Refuse("session-state", not_writable);
  std::string name = session->Snapshot().name;
  auto running_reply = [&](const std::string& text) {
    return Reply(text, [&](Writer& w) {
      w.Key("status");
      w.String("running");
      w.Key("sessionId");
      Str(w, id);
      w.Key("name");
      Str(w, name);
    });
  };
  if (action == "write") {
    std::string data = request.data.value_or("");
    if (!session->Write(data)) return Refuse("session-state", not_writable);
    if (request.eof && !session->CloseInput()) return Refuse("session-state", not_writable);
    return running_reply("Wrote " + std::to_string(data.size()) + " bytes to session " + id +
                         (request.eof ? " (stdin closed)" : "") + ".");
  }
  if (action == "send-keys") {
    CursorKeyMode mode = session->cursor_key_mode();
    if (mode == CursorKeyMode::kUnknown && HasCursorModeSensitiveKeys(request.keys)) {
      return Refuse("session-state",
                    "Session " + id +
                        " cursor key mode is not known yet. Poll or log until startup output "
                        "appears, then retry send-keys.");
    }
    EncodedKeys keys =
        EncodeKeySequence(KeyRequest{request.keys, request.hex, request.literal}, mode);
    if (keys.data.empty()) return Refuse("invalid-request", "No key data provided.");
    if (!session->Write(keys.data)) return Refuse("session-state", not_writable);
    std::string text = "Sent " + std::to_string(keys.data.size()) + " bytes to session " + id + ".";
    if (!keys.warnings.empty()) {
      text += "\nWarnings:";
      for (const auto& warning : keys.warnings) text += "\n- " + warning;
    }
    return running_reply(text);
  }
  if (action == "submit") {
    if (!session->Write("\r")) return Refuse("session-state", not_writable);
    return running_reply("Submitted session " + id + " (sent CR).");
  }
  // paste
  if (!request.text || request.text->empty()) {
    return Refuse("invalid-request", "No paste text provided.");
  }
  if (!session->Write(EncodePaste(*request.text, request.bracketed.value_or(true)))) {
    return Refuse("session-state", not_writable);
  }
  return running_reply("Pasted " + std::to_string(CountChars(*request.text)) +
                       " chars to session " + id + ".");
}

ProcessResult SessionManager::Kill(const std::shared_ptr<Session>& session) {
  (void)session->Kill();
  std::string name = session->Snapshot().name;
  return Reply("Killed session " + session->id() + ".", [&](Writer& w) {
    w.Key("status");
    w.String("failed");
    w.Key("name");
    Str(w, name);
  });
}

ProcessResult SessionManager::Clear(const std::shared_ptr<Session>& session) {
  Remove(session->id());
  return Reply("Cleared session " + session->id() + ".", [](Writer& w) {
    w.Key("status");
    w.String("completed");
  });
}

ProcessResult SessionManager::RemoveAction(const std::shared_ptr<Session>& session) {
  bool was_running = !session->finished();
  std::string name = session->Snapshot().name;
  Remove(session->id());
  return Reply("Removed session " + session->id() + ".", [&](Writer& w) {
    w.Key("status");
    w.String(was_running ? "failed" : "completed");
    if (was_running) {
      w.Key("name");
      Str(w, name);
    }
  });
}

}  // namespace sandrun::sessions

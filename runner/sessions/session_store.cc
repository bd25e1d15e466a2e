// Session state on disk: meta.json, status.json, output.log; and reading it back (Recover).
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "runner/sessions/internal.h"
#include "runner/sessions/session.h"
#include "runner/sessions/text.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"
#include "sandbox/os/file.h"

namespace sandrun::sessions {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

constexpr int kFormatVersion = 1;

void Str(Writer& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

}  // namespace

namespace internal {

std::string ProcessStartTime(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return "";
  size_t paren = line.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream fields(line.substr(paren + 1));
  std::string field;
  // After "pid (comm)", fields start at number 3 (state); the start time is number 22.
  for (int n = 3; n <= 22; ++n) {
    if (!(fields >> field)) return "";
    if (n == 3 && field == "Z") return "";  // a zombie is gone for our purposes
  }
  return field;
}

}  // namespace internal

void Session::PersistLocked() {
  if (persisted_) return;
  persisted_ = true;  // once: a failure below leaves the output in memory (bounded)
  if (!EnsureDirectory(hub_->root, 0700)) return;
  // Exclusive: a directory someone else made (another process on this state dir picked the
  // same id) is never written to or deleted by us.
  if (::mkdir(dir().c_str(), 0700) != 0) return;
  owns_dir_ = true;
  WriteMetaLocked();
  (void)log_.Persist(dir() + "/" + internal::kLogFile);  // else it stays in memory
  if (finished_locked()) log_.Close();
}

void Session::WriteMetaLocked() {
  if (!owns_dir_) return;
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("version");
  w.Int(kFormatVersion);
  w.Key("id");
  Str(w, id_);
  w.Key("tenant");
  Str(w, meta_.scope.tenant);
  w.Key("agentId");
  Str(w, meta_.scope.agent_id);
  w.Key("sessionKey");
  Str(w, meta_.scope.session_key);
  w.Key("command");
  Str(w, meta_.command);
  w.Key("cwd");
  Str(w, meta_.cwd);
  w.Key("host");
  Str(w, meta_.host);
  w.Key("pty");
  w.Bool(meta_.pty);
  w.Key("name");
  Str(w, meta_.name);
  w.Key("timeoutMs");
  w.Int64(meta_.timeout_ms);
  w.Key("notifyOnExit");
  w.Bool(meta_.notify_on_exit);
  w.Key("notifyOnExitEmptySuccess");
  w.Bool(meta_.notify_on_exit_empty_success);
  w.Key("startedAt");
  w.Int64(started_at_ms_);
  w.Key("pid");
  w.Int64(pid_);
  w.Key("pidStart");
  Str(w, pid_start_);
  w.Key("backgrounded");
  w.Bool(backgrounded_);
  if (kind_) {  // what Recover needs to find the process again (Executor::Adopt)
    w.Key("processKind");
    w.String(exec::ProcessKindName(*kind_));
    w.Key("adoptionKey");
    Str(w, adoption_key_);
  }
  w.EndObject();
  (void)WriteFileAtomic(dir() + "/" + internal::kMetaFile,
                        std::string_view(buffer.GetString(), buffer.GetSize()), 0600,
                        /*durable=*/false);
}

void Session::WriteStatusLocked() {
  if (!owns_dir_) return;
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("version");
  w.Int(kFormatVersion);
  w.Key("status");
  w.String(SessionStatusName(status_));
  w.Key("exitCode");
  if (exit_code_) {
    w.Int(*exit_code_);
  } else {
    w.Null();
  }
  w.Key("exitSignal");
  if (exit_signal_.empty()) {
    w.Null();
  } else {
    Str(w, exit_signal_);
  }
  w.Key("endedAt");
  w.Int64(ended_at_ms_);
  w.Key("timedOut");
  w.Bool(phase_ == Phase::kTimedOut);
  w.Key("killed");
  w.Bool(phase_ == Phase::kKilled);
  w.Key("lost");
  w.Bool(phase_ == Phase::kLost);
  w.Key("phase");
  w.String(PhaseName(phase_));
  if (phase_ == Phase::kLost) {
    w.Key("lostNote");
    Str(w, lost_note_);
  }
  w.Key("totalBytes");
  w.Uint64(std::max<uint64_t>(collector_.total_bytes(), recovered_total_bytes_));
  w.EndObject();
  (void)WriteFileAtomic(dir() + "/" + internal::kStatusFile,
                        std::string_view(buffer.GetString(), buffer.GetSize()), 0600,
                        /*durable=*/true);
}

Result<std::pair<std::shared_ptr<Session>, Session::LoadKind>> Session::Load(
    const std::string& id, const std::shared_ptr<internal::Hub>& hub) {
  std::string dir = hub->root + "/" + id;
  auto meta_text = ReadFile(dir + "/" + internal::kMetaFile, 16u << 20);
  if (!meta_text) return std::move(meta_text).error().Wrap("session " + id);
  JsonParseOptions options;
  options.source_name = dir + "/" + internal::kMetaFile;
  auto meta_doc = ParseJson(*meta_text, options);
  if (!meta_doc) return std::move(meta_doc).error();
  const rapidjson::Value& m = *meta_doc;
  if (!m.IsObject() || JsonString(m, "id") != id) {
    return Error(ErrorCode::kProtocol, options.source_name + ": not a session record for " + id);
  }
  SessionMeta meta;
  meta.scope.tenant = JsonString(m, "tenant");
  meta.scope.agent_id = JsonString(m, "agentId", "main");
  meta.scope.session_key = JsonString(m, "sessionKey");
  meta.command = JsonString(m, "command");
  meta.cwd = JsonString(m, "cwd");
  meta.host = JsonString(m, "host");
  meta.pty = JsonBool(m, "pty");
  meta.name = JsonString(m, "name");
  meta.timeout_ms = JsonInt(m, "timeoutMs");
  meta.notify_on_exit = JsonBool(m, "notifyOnExit", true);
  meta.notify_on_exit_empty_success = JsonBool(m, "notifyOnExitEmptySuccess");

  auto session = std::make_shared<Session>(id, std::move(meta), hub);
  Session& s = *session;
  std::lock_guard<std::mutex> lock(s.mu_);
  s.started_at_ms_ = JsonInt(m, "startedAt", hub->Now());
  s.pid_ = JsonInt(m, "pid");
  s.pid_start_ = JsonString(m, "pidStart");
  s.backgrounded_ = JsonBool(m, "backgrounded");
  s.persisted_ = true;
  s.owns_dir_ = true;
  if (std::string kind = JsonString(m, "processKind"); kind == "host") {
    s.kind_ = exec::ProcessKind::kHost;
  } else if (kind == "container") {
    s.kind_ = exec::ProcessKind::kContainer;
  }
  s.adoption_key_ = JsonString(m, "adoptionKey");
  s.settled_ = true;
  s.input_open_ = false;
  s.started_event_sent_ = true;
  s.exit_event_sent_ = true;  // exits before the restart were announced then, or never will be
  if (!s.backgrounded_) return std::make_pair(session, LoadKind::kDrop);

  SANDRUN_RETURN_IF_ERROR(s.log_.OpenExisting(dir + "/" + internal::kLogFile));
  std::string tail = s.log_.ReadTail(hub->options.max_output_chars);
  size_t start = 0;
  while (start < tail.size() && IsUtf8Continuation(tail[start])) ++start;
  s.collector_.Append(exec::Stream::kStdout, std::string_view(tail).substr(start));
  s.recovered_total_bytes_ = s.log_.size() + s.log_.dropped();

  auto status_text = ReadFile(dir + "/" + internal::kStatusFile, 1u << 20);
  rapidjson::Document status_doc;
  if (status_text) {
    options.source_name = dir + "/" + internal::kStatusFile;
    auto parsed = ParseJson(*status_text, options);
    if (parsed && parsed->IsObject()) status_doc = std::move(parsed).value();
  }
  if (status_doc.IsObject()) {
    const rapidjson::Value& st = status_doc;
    s.status_ = JsonString(st, "status") == "completed" ? SessionStatus::kCompleted
                                                        : SessionStatus::kFailed;
    if (const auto* code = JsonMember(st, "exitCode"); code != nullptr && code->IsInt()) {
      s.exit_code_ = code->GetInt();
    }
    s.exit_signal_ = JsonString(st, "exitSignal");
    s.ended_at_ms_ = JsonInt(st, "endedAt", hub->Now());
    s.phase_ = JsonBool(st, "lost")       ? Phase::kLost
               : JsonBool(st, "killed")   ? Phase::kKilled
               : JsonBool(st, "timedOut") ? Phase::kTimedOut
               : s.exit_code_             ? Phase::kExited
                                          : Phase::kFailed;
    s.lost_note_ = JsonString(st, "lostNote");
    s.recovered_total_bytes_ = std::max<uint64_t>(s.recovered_total_bytes_,
                                                  static_cast<uint64_t>(JsonInt(st, "totalBytes")));
    bool expired = hub->Now() - s.ended_at_ms_ > hub->options.cleanup_ms;
    return std::make_pair(session, expired ? LoadKind::kDrop : LoadKind::kFinished);
  }

  // Recorded running (or its status write never completed): Recover adopts it or calls it lost
  // (MarkLost); until then it is Starting.
  return std::make_pair(session, LoadKind::kRunning);
}

std::string Session::LostNote() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string note = "Process was lost when the server restarted.";
  if (kind_ == exec::ProcessKind::kHost && pid_ > 0 && !pid_start_.empty() &&
      internal::ProcessStartTime(pid_) == pid_start_) {
    note += " It is still running as pid " + std::to_string(pid_) + " (process group " +
            std::to_string(pid_) + ") but no longer attached.";
  }
  return note;
}

}  // namespace sandrun::sessions

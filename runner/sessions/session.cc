#include "runner/sessions/session.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "runner/sessions/internal.h"
#include "runner/sessions/text.h"

namespace sandrun::sessions {
namespace {

constexpr size_t kTailChars = 2000;  // OpenClaw's session tail
constexpr int64_t kRetryScheduleMs[] = {5000, 10000, 30000, 60000};

}  // namespace

std::string Scope::Key() const { return session_key.empty() ? "agent:" + agent_id : session_key; }

const char* SessionStatusName(SessionStatus status) {
  switch (status) {
    case SessionStatus::kRunning:
      return "running";
    case SessionStatus::kCompleted:
      return "completed";
    case SessionStatus::kFailed:
      return "failed";
  }
  return "failed";
}

Session::Session(std::string id, SessionMeta meta, std::shared_ptr<internal::Hub> hub)
    : id_(std::move(id)),
      meta_(std::move(meta)),
      hub_(std::move(hub)),
      started_at_ms_(hub_->Now()),
      cursor_mode_(meta_.pty ? CursorKeyMode::kUnknown : CursorKeyMode::kNormal),
      collector_(hub_->options.max_output_chars),
      log_(hub_->options.max_log_bytes, hub_->options.foreground_log_bytes),
      pending_out_(std::min(hub_->options.pending_max_chars, hub_->options.max_output_chars)),
      pending_err_(std::min(hub_->options.pending_max_chars, hub_->options.max_output_chars)) {}

Session::~Session() {
  exec::RunningProcess* process = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (IsLive(phase_)) process = raw_process_;  // a released one is left alone
  }
  if (process != nullptr) (void)process->Kill(SIGKILL);
  if (waiter_.joinable()) waiter_.join();
  // process_ (declared before waiter_) is destroyed after this: it joins its pump thread.
}

std::string Session::dir() const { return hub_->root + "/" + id_; }

exec::LiveSink Session::Sink() {
  return [this](exec::Stream stream, std::string_view bytes) { OnOutput(stream, bytes); };
}

void Session::OnOutput(exec::Stream stream, std::string_view bytes) {
  int answer = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!IsLive(phase_)) return;
    if (!meta_.pty) {
      AppendLocked(stream, bytes);
    } else {
      TerminalScanner::Scanned scanned = scanner_.Scan(bytes);
      if (cursor_mode_ == CursorKeyMode::kUnknown) cursor_mode_ = CursorKeyMode::kNormal;
      if (scanned.mode) cursor_mode_ = *scanned.mode;
      AppendLocked(stream, scanned.output);
      if (raw_process_ == nullptr) {
        pending_dsr_ += scanned.dsr_requests;  // answered once attached
      } else {
        answer = scanned.dsr_requests;
      }
    }
  }
  if (answer > 0) AnswerDsr(answer);
  hub_->LogGrew(meta_.scope.tenant);
}

void Session::AppendLocked(exec::Stream stream, std::string_view bytes) {
  if (bytes.empty()) return;
  collector_.Append(stream, bytes);
  log_.Append(bytes);
  (stream == exec::Stream::kStderr ? pending_err_ : pending_out_).Append(bytes);
}

void Session::AnswerDsr(int count) {
  exec::RunningProcess* process = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    process = raw_process_;
  }
  if (process == nullptr) return;
  std::lock_guard<std::mutex> io(io_mu_);
  for (int i = 0; i < count; ++i) (void)process->WriteStdin(kDsrReply);
}

void Session::Attach(std::unique_ptr<exec::RunningProcess> process) {
  if (!process) return;
  int answer = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (process_ || !ApplyLocked(PhaseEvent::kAttach)) return;  // once
    process_ = std::move(process);
    raw_process_ = process_.get();
    pid_ = raw_process_->pid();
    kind_ = raw_process_->kind();
    adoption_key_ = raw_process_->adoption_key();
    if (kind_ == exec::ProcessKind::kHost && pid_ > 0) {
      pid_start_ = internal::ProcessStartTime(pid_);
    }
    answer = std::exchange(pending_dsr_, 0);
    if (persisted_) WriteMetaLocked();
    StartWaiterLocked();
  }
  if (answer > 0) AnswerDsr(answer);
}

void Session::StartWaiterLocked() {
  exec::RunningProcess* raw = raw_process_;
  waiter_ = std::thread([this, raw] { Finish(raw->Wait()); });
}

bool Session::ApplyLocked(PhaseEvent event) {
  std::optional<Phase> next = Transition(phase_, event);
  if (!next) return false;
  phase_ = *next;
  return true;
}

void Session::Adopt(std::unique_ptr<exec::RunningProcess> process, const std::string& note) {
  std::lock_guard<std::mutex> lock(mu_);
  if (process_ || !process || !ApplyLocked(PhaseEvent::kAdopt)) return;
  process_ = std::move(process);
  raw_process_ = process_.get();
  if (int64_t pid = raw_process_->pid(); pid > 0) pid_ = pid;
  kind_ = raw_process_->kind();
  adoption_key_ = raw_process_->adoption_key();
  settled_ = false;
  input_open_ = false;  // its stdin stayed with the server that started it
  exit_event_sent_ = false;
  (void)log_.ReopenForAppend();  // best effort: a log that cannot grow keeps what it has
  AppendLocked(exec::Stream::kStdout, note);
  WriteMetaLocked();
  StartWaiterLocked();
}

void Session::MarkLost(std::string note) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ApplyLocked(PhaseEvent::kLose)) return;
  status_ = SessionStatus::kFailed;
  ended_at_ms_ = hub_->Now();
  lost_note_ = std::move(note);
  WriteStatusLocked();
}

Status Session::Release() {
  exec::RunningProcess* process = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (phase_ != Phase::kBackground || raw_process_ == nullptr) {
      return Error(ErrorCode::kConflict, "not a running background session");
    }
    releasing_ = true;
    process = raw_process_;
  }
  Status status = process->Release();  // without mu_: it waits out a sink call, which takes it
  std::lock_guard<std::mutex> lock(mu_);
  if (!status) {
    releasing_ = false;
    return status;
  }
  (void)ApplyLocked(PhaseEvent::kRelease);  // unless it ended first (then that is recorded)
  return Ok();
}

void Session::Finish(exec::ExecOutcome outcome) {
  std::vector<Event> events;
  {
    std::unique_lock<std::mutex> lock(mu_);
    using S = exec::ExecOutcome::Status;
    if (releasing_ && phase_ == Phase::kBackground) {
      (void)ApplyLocked(PhaseEvent::kRelease);  // this "end" is Wait() returning on release
    }
    if (phase_ == Phase::kReleased) {  // nothing of a released process is recorded
      settled_ = true;
      done_cv_.notify_all();
      return;
    }
    PhaseEvent end = outcome.status == S::kExited     ? PhaseEvent::kEndExited
                     : outcome.status == S::kSignaled ? PhaseEvent::kEndSignaled
                     : outcome.status == S::kTimedOut ? PhaseEvent::kEndTimedOut
                                                      : PhaseEvent::kEndAborted;
    if (!ApplyLocked(end)) {  // not live: already ended
      settled_ = true;
      done_cv_.notify_all();
      return;
    }
    if (meta_.pty) AppendLocked(exec::Stream::kStdout, scanner_.Flush());
    outcome.aggregated = collector_.Text();
    outcome.truncated = collector_.truncated();
    outcome.total_bytes = collector_.total_bytes();
    bool timed_out = phase_ == Phase::kTimedOut;
    if (phase_ == Phase::kKilled) {
      exit_signal_ = "SIGKILL";
    } else if (outcome.status == S::kSignaled || (timed_out && outcome.signal != 0)) {
      exit_signal_ = SignalName(outcome.signal);
    } else if (outcome.status == S::kExited) {
      exit_code_ = outcome.exit_code;
    }
    bool ok = phase_ == Phase::kExited && outcome.exit_code == 0;
    status_ = ok ? SessionStatus::kCompleted : SessionStatus::kFailed;
    ended_at_ms_ = hub_->Now();
    outcome_ = std::move(outcome);
    input_open_ = false;
    log_.Close();
    if (backgrounded_) WriteStatusLocked();
    CollectEventsLocked(events);
  }
  for (const auto& e : events) hub_->Emit(e);
  {
    std::lock_guard<std::mutex> lock(mu_);
    settled_ = true;
  }
  done_cv_.notify_all();
}

bool Session::WaitFor(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (timeout_ms <= 0) return settled_;
  return done_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [this] { return settled_; });
}

void Session::MarkBackgrounded() {
  std::vector<Event> events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (backgrounded_) return;
    backgrounded_ = true;
    (void)ApplyLocked(PhaseEvent::kBackground);  // an ended run keeps its end phase
    PersistLocked();
    if (finished_locked()) {
      log_.Close();
      WriteStatusLocked();
    }
    CollectEventsLocked(events);
  }
  for (const auto& e : events) hub_->Emit(e);
  hub_->LogGrew(meta_.scope.tenant);  // what it printed in its yield window counts from now
}

void Session::CollectEventsLocked(std::vector<Event>& events) {
  if (!backgrounded_ || phase_ == Phase::kLost) return;
  if (!started_event_sent_) {
    started_event_sent_ = true;
    Event e;
    e.type = Event::Type::kSessionStarted;
    e.scope = meta_.scope;
    e.session_id = id_;
    e.at_ms = started_at_ms_;
    e.text = "Exec running in background (session " + id_ + ", pid " +
             (pid_ > 0 ? std::to_string(pid_) : "n/a") +
             ") :: " + TruncateMiddle(meta_.command, 120);
    events.push_back(std::move(e));
  }
  if (!finished_locked() || exit_event_sent_ || !meta_.notify_on_exit) return;
  exit_event_sent_ = true;
  // OpenClaw's maybeNotifyOnExit.
  std::string output =
      CompactNotifyOutput(LastChars(LastChars(collector_.Text(), kTailChars), 400));
  bool completed = status_ == SessionStatus::kCompleted;
  if (completed && output.empty() && !meta_.notify_on_exit_empty_success) return;
  // A timeout or a signal death says so (never "code 0": there was no exit code).
  std::string label = phase_ == Phase::kTimedOut ? "timed out"
                      : !exit_signal_.empty()    ? "signal " + exit_signal_
                      : exit_code_               ? "code " + std::to_string(*exit_code_)
                                                 : "no exit status";
  std::string reason = EndReason(phase_, exit_signal_, meta_.timeout_ms);
  if (!reason.empty()) output = output.empty() ? reason : reason + " :: " + output;
  Event e;
  e.type = completed ? Event::Type::kExecFinished : Event::Type::kExecFailed;
  e.scope = meta_.scope;
  e.session_id = id_;
  e.at_ms = ended_at_ms_;
  e.status = status_;
  e.exit_code = exit_code_;
  e.signal = exit_signal_;
  e.timed_out = phase_ == Phase::kTimedOut;
  e.text = std::string("Exec ") + (completed ? "completed" : "failed") + " (" + id_.substr(0, 8) +
           ", " + label + ")" + (output.empty() ? "" : " :: " + output);
  events.push_back(std::move(e));
}

bool Session::backgrounded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return backgrounded_;
}

bool Session::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_locked();
}

Phase Session::phase() const {
  std::lock_guard<std::mutex> lock(mu_);
  return phase_;
}

std::optional<exec::ProcessKind> Session::kind() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kind_;
}

std::optional<exec::ExecOutcome> Session::Outcome() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outcome_;
}

int64_t Session::pid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pid_;
}

std::string Session::Tail() const {
  std::lock_guard<std::mutex> lock(mu_);
  return LastChars(collector_.Text(), kTailChars);
}

bool Session::has_process() const {
  std::lock_guard<std::mutex> lock(mu_);
  return raw_process_ != nullptr;
}

bool Session::input_open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return raw_process_ != nullptr && IsLive(phase_) && input_open_;
}

CursorKeyMode Session::cursor_key_mode() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cursor_mode_;
}

Status Session::Write(std::string_view data) {
  exec::RunningProcess* process = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (raw_process_ == nullptr || !IsLive(phase_) || !input_open_) {
      return Error(ErrorCode::kConflict, "stdin is not writable");
    }
    process = raw_process_;
  }
  std::lock_guard<std::mutex> io(io_mu_);
  return process->WriteStdin(data);
}

Status Session::CloseInput() {
  exec::RunningProcess* process = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (raw_process_ == nullptr || !IsLive(phase_) || !input_open_) {
      return Error(ErrorCode::kConflict, "stdin is not writable");
    }
    process = raw_process_;
    if (!meta_.pty) input_open_ = false;  // a terminal stays open after ^D
  }
  std::lock_guard<std::mutex> io(io_mu_);
  return process->CloseStdin();
}

Status Session::Resize(unsigned rows, unsigned cols) {
  exec::RunningProcess* process = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (raw_process_ == nullptr || !IsLive(phase_) || !meta_.pty) {
      return Error(ErrorCode::kConflict, "not a running terminal session");
    }
    process = raw_process_;
  }
  std::lock_guard<std::mutex> io(io_mu_);
  return process->Resize(rows, cols);
}

Status Session::Kill(int64_t wait_ms) { return Terminate(-1, wait_ms); }

Status Session::Terminate(int64_t grace_ms, int64_t wait_ms) {
  exec::RunningProcess* process = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!IsLive(phase_)) return Ok();
    if (raw_process_ == nullptr) return Error(ErrorCode::kConflict, "no process attached");
    (void)ApplyLocked(PhaseEvent::kKill);
    process = raw_process_;
  }
  if (grace_ms >= 0) {
    // TERM first: a command may clean up (temporary files, child jobs) before it goes.
    Status term = process->Kill(SIGTERM);
    if (WaitFor(grace_ms)) return term;
  }
  Status status = process->Kill(SIGKILL);
  (void)WaitFor(wait_ms);
  return status;
}

Session::Drained Session::Drain() {
  std::lock_guard<std::mutex> lock(mu_);
  return Drained{pending_out_.Take(finished_locked()), pending_err_.Take(finished_locked())};
}

int64_t Session::NextRetryMs(bool had_new_output) {
  std::lock_guard<std::mutex> lock(mu_);
  if (had_new_output) {
    empty_polls_ = 0;
    return kRetryScheduleMs[0];
  }
  size_t index =
      std::min<size_t>(static_cast<size_t>(empty_polls_), std::size(kRetryScheduleMs) - 1);
  ++empty_polls_;
  return kRetryScheduleMs[index];
}

LogSlice Session::SliceLog(std::optional<int64_t> offset, std::optional<int64_t> limit) const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_.Slice(offset, limit, hub_->options.max_output_chars);
}

SessionSnapshot Session::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  SessionSnapshot s;
  s.id = id_;
  s.meta = meta_;
  s.name = meta_.name.empty() ? DeriveSessionName(meta_.command) : meta_.name;
  s.status = status_;
  s.backgrounded = backgrounded_;
  s.finished = finished_locked();
  s.phase = phase_;
  s.kind = kind_;
  s.pid = pid_;
  s.started_at_ms = started_at_ms_;
  s.ended_at_ms = ended_at_ms_;
  s.exit_code = exit_code_;
  s.exit_signal = exit_signal_;
  s.timed_out = phase_ == Phase::kTimedOut;
  s.killed = phase_ == Phase::kKilled || phase_ == Phase::kKilling;
  s.lost = phase_ == Phase::kLost;
  s.lost_note = lost_note_;
  s.aggregated = collector_.Text();
  s.tail = LastChars(s.aggregated, kTailChars);
  s.total_bytes = std::max<uint64_t>(collector_.total_bytes(), recovered_total_bytes_);
  // Beyond the in-memory tail, or a log the tenant's quota cut.
  s.truncated = s.total_bytes > hub_->options.max_output_chars || log_.capped();
  return s;
}

Session::LogUsage Session::log_usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {backgrounded_, finished_locked(), ended_at_ms_, log_.size()};
}

void Session::DropLog() {
  std::lock_guard<std::mutex> lock(mu_);
  log_.Drop();
}

void Session::CapLog() {
  std::lock_guard<std::mutex> lock(mu_);
  log_.CapAtCurrentSize();
}

void Session::DeleteFiles() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!owns_dir_) return;
    owns_dir_ = false;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir(), ec);
}

}  // namespace sandrun::sessions

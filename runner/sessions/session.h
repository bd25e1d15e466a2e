// One command run through the session registry: its process, its output (the full log on disk, a
// bounded in-memory tail, the poll drain buffers) and how it ended. Thread-safe. Sessions know
// nothing of Docker: a RunningProcess is all they see of the executor.
//
// Pattern of use (the exec flow; `manager` is a SessionManager):
//   SANDRUN_ASSIGN_OR_RETURN(std::shared_ptr<Session> s, manager.Begin(meta));
//   auto proc = executor.Start(plan, s->Sink());
//   if (!proc) { manager.Discard(s->id()); return refusal; }
//   s->Attach(std::move(proc).value());
//   if (!background && s->WaitFor(yield_ms)) {          // finished inside the yield window
//     exec::ExecOutcome outcome = *s->Outcome();
//     manager.Discard(s->id());
//     return RenderExecOutcome(outcome, ...);
//   }
//   s->MarkBackgrounded();                              // now a background session
//   return RenderRunning(*s, warnings);
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runner/sessions/keys.h"
#include "runner/sessions/output_log.h"
#include "runner/sessions/state.h"
#include "runner/sessions/terminal.h"
#include "sandbox/base/result.h"
#include "sandbox/executors/output.h"
#include "sandbox/executors/process.h"

namespace sandrun::sessions {

// Who may see a session: the same tenant, agent and session key (an empty key is the agent's own
// scope, OpenClaw's `agent:<agentId>`). Another scope's sessions answer "not found".
struct Scope {
  std::string tenant;  // "" on the CLI and single-tenant servers
  std::string agent_id = "main";
  std::string session_key;

  bool operator==(const Scope&) const = default;
  // OpenClaw's scope key: the session key, else "agent:<agentId>".
  std::string Key() const;
};

struct SessionMeta {
  Scope scope;
  std::string command;
  std::string cwd;
  std::string host;  // "sandbox" | "gateway": a label for list; behaviour follows the process kind
  bool pty = false;
  std::string name;        // list label; "" = derived from the command as OpenClaw does
  int64_t timeout_ms = 0;  // the plan's timeout (0 = none), recorded with the session
  bool notify_on_exit = true;
  bool notify_on_exit_empty_success = false;
};

enum class SessionStatus { kRunning, kCompleted, kFailed };
const char* SessionStatusName(SessionStatus status);  // "running" | "completed" | "failed"

// A consistent copy of a session's state, for list/poll/log and rendering.
struct SessionSnapshot {
  std::string id;
  SessionMeta meta;
  std::string name;  // meta.name or the derived one
  SessionStatus status = SessionStatus::kRunning;
  Phase phase = Phase::kStarting;
  std::optional<exec::ProcessKind> kind;  // once a process was attached (or recorded)
  bool backgrounded = false;
  bool finished = false;
  int64_t pid = 0;  // 0 = unknown
  int64_t started_at_ms = 0;
  int64_t ended_at_ms = 0;  // when finished
  std::optional<int> exit_code;
  std::string exit_signal;  // "SIGKILL", or ""
  bool timed_out = false;
  bool killed = false;       // by the process tool (kill/remove) or a server shutdown
  bool lost = false;         // recorded running when the server restarted
  std::string lost_note;     // why/what, for lost sessions
  std::string aggregated;    // the in-memory tail (max_output_chars), sanitised
  std::string tail;          // its last 2000 characters
  bool truncated = false;    // output beyond the in-memory tail existed
  uint64_t total_bytes = 0;  // everything the command printed
};

struct Event;

namespace internal {
struct Hub;  // the manager's side: options, clock, event sink (outlives nothing it must not)
}

class Session {
 public:
  // Built by SessionManager only.
  Session(std::string id, SessionMeta meta, std::shared_ptr<internal::Hub> hub);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // Kills a process still running (executor contract) and joins the waiter.
  ~Session();

  const std::string& id() const { return id_; }
  const SessionMeta& meta() const { return meta_; }
  int64_t started_at_ms() const { return started_at_ms_; }

  // --- the exec flow ---
  // Where the executor sends output (any thread). Valid for the session's lifetime.
  exec::LiveSink Sink();
  // Takes the started process and starts the waiter that records its final outcome. Once.
  void Attach(std::unique_ptr<exec::RunningProcess> process);
  // Blocks up to `timeout_ms` (<= 0: just looks); true once the process ended, its outcome is
  // recorded and its exit event (if any) was delivered.
  bool WaitFor(int64_t timeout_ms);
  // Turns the run into a background session: persisted, listed, notified on exit. Idempotent.
  void MarkBackgrounded();
  bool backgrounded() const;
  bool finished() const;
  // The final outcome once finished; `aggregated` is the session's own capped, sanitised tail
  // (PTY cursor-position requests removed).
  std::optional<exec::ExecOutcome> Outcome() const;
  int64_t pid() const;
  std::string Tail() const;  // last 2000 characters of the output, sanitised

  // --- the process tool ---
  SessionSnapshot Snapshot() const;
  bool has_process() const;  // false for recovered sessions
  bool input_open() const;   // stdin (or the PTY) accepts writes
  CursorKeyMode cursor_key_mode() const;
  // Writes to stdin / the PTY. Serialised with other writes (and DSR answers).
  Status Write(std::string_view data);
  // EOF: closes a stdin pipe (input_open() turns false); sends ^D to a PTY.
  Status CloseInput();
  // A PTY session's window size (the program gets SIGWINCH).
  Status Resize(unsigned rows, unsigned cols);
  // SIGKILL to the whole tree; marks the session killed (failed, SIGKILL) and waits up to
  // `wait_ms` for the outcome to be recorded. Ok (nothing done) once finished.
  Status Kill(int64_t wait_ms = 5000);
  // The caller gave up on the run (an MCP cancel): SIGTERM to the whole tree, then, if it has not
  // ended within `grace_ms`, Kill (grace < 0: SIGKILL at once). Marked killed either way. Ok
  // (nothing done) once finished.
  Status Terminate(int64_t grace_ms, int64_t wait_ms = 5000);
  // Server shutdown: leaves a background session's process running (RunningProcess::Release):
  // nothing of it is recorded any more, status.json is not written (the next Recover finds it
  // recorded running), and destroying the session leaves the process alone. kConflict when not
  // a running background session or the process cannot be released (kill it instead).
  Status Release();
  Phase phase() const;
  // The attached (or recorded) process's kind; nullopt before Attach on a fresh session.
  std::optional<exec::ProcessKind> kind() const;
  // Takes what poll has not shown yet: stdout and stderr, each sanitised.
  struct Drained {
    std::string out;
    std::string err;
  };
  Drained Drain();
  // The poll backoff: 5000 after new output, else 5000, 10000, 30000, 60000 for consecutive
  // empty polls.
  int64_t NextRetryMs(bool had_new_output);
  // The tenant's log quota (SessionManager::SetLogBudgets): what it needs to know of a session
  // (cheap: checked as output arrives), and the two ways a log shrinks or stops growing
  // (OutputLog::Drop, OutputLog::CapAtCurrentSize).
  struct LogUsage {
    bool backgrounded = false;
    bool finished = false;
    int64_t ended_at_ms = 0;
    uint64_t bytes = 0;  // kept in the log
  };
  LogUsage log_usage() const;
  void DropLog();
  void CapLog();
  // A line slice of the whole output log (see OutputLog::Slice).
  LogSlice SliceLog(std::optional<int64_t> offset, std::optional<int64_t> limit) const;

 private:
  friend class SessionManager;
  // kRunning: recorded running (phase Starting): Recover adopts it (Adopt) or calls it lost.
  enum class LoadKind { kFinished, kRunning, kDrop };
  // Reads a session back from its directory (Recover). kDrop: never backgrounded or expired.
  static Result<std::pair<std::shared_ptr<Session>, LoadKind>> Load(
      const std::string& id, const std::shared_ptr<internal::Hub>& hub);
  // Recover: the executor found the process again; it is a background session again (kill,
  // timeout and the exit event work; `note` goes into its output).
  void Adopt(std::unique_ptr<exec::RunningProcess> process, const std::string& note);
  // Recover: the recorded process is out of reach; failed, with `note` as its exit line.
  void MarkLost(std::string note);
  // "Process was lost when the server restarted." and, for a host process still alive (same pid
  // and start time), where it still runs.
  std::string LostNote() const;
  // The one place the phase changes; false (nothing changed) when `event` is illegal now.
  bool ApplyLocked(PhaseEvent event);
  void StartWaiterLocked();
  void OnOutput(exec::Stream stream, std::string_view bytes);
  void AppendLocked(exec::Stream stream, std::string_view bytes);
  void Finish(exec::ExecOutcome outcome);
  void PersistLocked();  // creates the directory, meta.json and the log file
  void WriteMetaLocked();
  void WriteStatusLocked();
  // Collects the session.started / exit events due now (caller holds mu_; emit after unlock).
  void CollectEventsLocked(std::vector<Event>& events);
  std::string dir() const;
  void AnswerDsr(int count);
  void DeleteFiles();

  const std::string id_;
  const SessionMeta meta_;
  const std::shared_ptr<internal::Hub> hub_;
  int64_t started_at_ms_;

  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::unique_ptr<exec::RunningProcess> process_;  // set once by Attach, never reset
  exec::RunningProcess* raw_process_ = nullptr;
  std::mutex io_mu_;  // serialises writes to the process
  int pending_dsr_ = 0;
  int64_t pid_ = 0;
  std::string pid_start_;  // /proc/<pid>/stat start time (host), to recognise it later
  std::optional<exec::ProcessKind> kind_;
  std::string adoption_key_;
  Phase phase_ = Phase::kStarting;
  bool releasing_ = false;  // Release() is under way: the process's next end is the release
  bool backgrounded_ = false;
  bool persisted_ = false;
  bool owns_dir_ = false;  // we created (or recovered) dir(): only then is it ours to delete
  bool finished_locked() const { return !IsLive(phase_) && phase_ != Phase::kReleased; }
  bool settled_ = false;  // finished and its events delivered: what WaitFor waits for
  bool started_event_sent_ = false;
  bool exit_event_sent_ = false;
  bool input_open_ = true;
  std::string lost_note_;
  int64_t ended_at_ms_ = 0;
  SessionStatus status_ = SessionStatus::kRunning;
  std::optional<int> exit_code_;
  std::string exit_signal_;
  uint64_t recovered_total_bytes_ = 0;
  std::optional<exec::ExecOutcome> outcome_;
  CursorKeyMode cursor_mode_;
  TerminalScanner scanner_;
  exec::OutputCollector collector_;
  OutputLog log_;
  PendingBuffer pending_out_;
  PendingBuffer pending_err_;
  int empty_polls_ = 0;
  std::thread waiter_;
};

}  // namespace sandrun::sessions

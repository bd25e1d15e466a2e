// The background session registry and the `process` tool (OpenClaw's bash-process-registry and
// bash-tools.process, reference §6): ids, scoping, on-disk state, TTL sweeping, exit events.
// Thread-safe.
//
// On disk, one directory per session: $state_dir/sessions/<id>/
//   meta.json    who, what, where, pid; rewritten (atomically) when the pid or background
//                state changes
//   output.log   the merged output, appended as it arrives (raw bytes)
//   status.json  how it ended, written atomically once it did
// A run that finishes inside its yield window never touches the disk and is forgotten by Discard.
//
// Pattern of use (the server):
//   SessionManager sessions({.state_dir = home});
//   auto report = sessions.Recover();                 // before serving
//   sessions.SetEventSink([&](const Event& e) { broadcast(e.ToJson()); });
//   ... exec: Begin / Start / Attach / WaitFor / MarkBackgrounded (see session.h) ...
//   ... process: ProcessResult r = sessions.Process(request, scope);
//   ... SIGTERM: sessions.Shutdown(/*kill_host_processes=*/true);
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runner/sessions/process_request.h"
#include "runner/sessions/session.h"
#include "sandbox/base/result.h"
#include "sandbox/executors/executor.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::sessions {

struct Options {
  std::string state_dir;  // $SANDRUN_HOME; sessions go to <state_dir>/sessions/
  // Finished-session TTL (tools.exec.cleanupMs), clamped to [1 min, 3 h] as OpenClaw does.
  int64_t cleanup_ms = 30 * 60 * 1000;
  size_t pending_max_chars = 30000;  // each poll drain buffer (min with max_output_chars)
  size_t max_output_chars = 200000;  // the in-memory tail (poll/list `aggregated`, `tail`)
  uint64_t max_log_bytes = uint64_t{1} << 30;  // per session on disk; beyond it output is dropped
  // What a run keeps for its log while still inside its yield window (nothing is written to disk
  // before it is backgrounded): the first and the last half; the middle becomes a marker line.
  size_t foreground_log_bytes = 1u << 20;
  // A thread sweeping finished sessions every max(30 s, ttl/6). Off: call Sweep() yourself.
  bool sweeper_thread = true;
  // Wall-clock milliseconds since the epoch (the seam for tests). Default: the system clock.
  std::function<int64_t()> now_ms;
  // Recover's way back to a process that outlived a server restart: the executor that runs
  // processes of a kind (nullptr: none). Unset: every session recorded running is lost.
  std::function<exec::Executor*(exec::ProcessKind)> executor_for;
};

// Something agents may want to hear about (GET /v1/events).
struct Event {
  enum class Type {
    kSessionStarted,  // a run became a background session
    kExecFinished,    // a background session exited 0: "Exec completed (<id8>, code 0) :: ..."
    kExecFailed,      // it failed: "Exec failed (<id8>, code N|signal S) :: ..."
  };
  Type type = Type::kSessionStarted;
  Scope scope;
  std::string session_id;
  std::string text;  // the notifyOnExit text (OpenClaw's), or a started notice
  int64_t at_ms = 0;
  // The structured end, for clients that should not parse `text`: "running" when started.
  SessionStatus status = SessionStatus::kRunning;
  std::optional<int> exit_code;
  std::string signal;  // "SIGKILL", or ""
  bool timed_out = false;

  static const char* TypeName(Type type);  // session.started | exec.finished | exec.failed
  // {"type","sessionId","tenant","agentId","sessionKey","text","atMs","status","exitCode",
  //  "signal","timedOut"} (exitCode and signal null when there is none)
  std::string ToJson() const;
};

struct RecoveryReport {
  int finished = 0;  // came back with status and log
  int adopted = 0;   // recorded running and found again by its executor: running again
  int lost = 0;      // recorded running, not found again: failed ("lost when ... restarted")
  int dropped = 0;   // never backgrounded, or past the TTL: deleted
  std::vector<std::string> warnings;  // unreadable entries (left on disk, skipped)
};

class SessionManager {
 public:
  explicit SessionManager(Options options);
  SessionManager(const SessionManager&) = delete;
  SessionManager& operator=(const SessionManager&) = delete;
  // Stops the sweeper. Sessions still running are killed (executor contract), unless
  // Shutdown(false) released them first.
  ~SessionManager();

  // At server start, before Begin: takes ownership of $state_dir/sessions (an exclusive lock
  // held until destruction: a second server, or a CLI run, must never recover the sessions of a
  // live one and call them lost; kConflict if another process holds it), then loads it. Finished
  // sessions come back with status and full log; never-backgrounded or expired ones are deleted.
  // Ones recorded running:
  //  - a container (sandbox) process is re-adopted through Options::executor_for and
  //    Executor::Adopt with its recorded adoption key: a background session again, killable, its
  //    timeout enforced from its original start (an expired one fires at once), its exit event
  //    sent; output it printed after the restart is not captured (a note in its output says
  //    so). Re-adopting rather than killing keeps what the agent asked for (a long job) and
  //    still leaves nothing unreachable. kNotFound: it is gone, the session is lost; any other
  //    error (engine down): lost, and the note says it may still run in the sandbox;
  //  - a host (gateway) process cannot be re-attached (its pipes died with the server): lost
  //    (failed; "Process was lost when the server restarted." naming the pid if it still runs,
  //    which happens only after Shutdown(false)).
  // An Error only when the sessions directory cannot be read or created.
  Result<RecoveryReport> Recover();

  // Registers a new run under a fresh adjective-noun id. Nothing is written to disk yet.
  Result<std::shared_ptr<Session>> Begin(SessionMeta meta);

  // Forgets a run that is not a background session (it finished in its yield window, or its
  // start failed, or its foreground call was abandoned): kills it if still running, deletes any
  // files. No-op for unknown ids.
  void Discard(const std::string& id);

  // The process tool. `scope` is the caller's: other scopes' sessions are "not found".
  // `poll` may block up to its timeout.
  ProcessResult Process(const ProcessRequest& request, const Scope& scope);

  // Called from the thread a session ended on (or Begin's caller for session.started): keep it
  // quick. Replaces the previous sink; nullptr to stop.
  void SetEventSink(std::function<void(const Event&)> sink);

  // maxLogBytes by tenant (0 or absent: no limit): the tenant's background sessions' logs
  // together. When over, the logs of its oldest finished sessions are dropped first (emptied;
  // the session stays, its `log` says truncated); when only running ones are left, each keeps
  // the head it has on disk and its in-memory tail (poll), drops the rest and is marked
  // truncated. Checked as output arrives.
  void SetLogBudgets(std::map<std::string, uint64_t> budgets);

  // Drops finished background sessions whose end is older than the TTL (and their files).
  void Sweep();

  // Server shutdown: state is already on disk. Runs still in their yield window are killed.
  // Background sessions of host processes are killed (SIGKILL to the tree, status written:
  // failed, killed) when `kill_host_processes`; the other background sessions are released
  // (Session::Release: left running, nothing more recorded, never killed by this object's
  // destruction; the next Recover re-adopts or loses them); one whose process cannot be released
  // is killed. Nothing is kept alive past this object. Begin refuses afterwards.
  void Shutdown(bool kill_host_processes);

  // A visible session (nullptr if unknown or in another scope).
  std::shared_ptr<Session> Find(const std::string& id, const Scope& scope) const;
  // Every registered session (any scope), for metrics.
  size_t size() const;
  // A tenant's background sessions (the quotas and metrics): held (not removed), running.
  struct TenantUsage {
    size_t held = 0;
    size_t running = 0;
  };
  TenantUsage UsageOf(const std::string& tenant) const;
  // Running background sessions by tenant (metrics).
  std::map<std::string, size_t> RunningByTenant() const;

 private:
  std::vector<std::shared_ptr<Session>> Visible(const Scope& scope) const;
  bool IdTaken(const std::string& id) const;  // caller holds mu_
  // Recover: re-adopts a session recorded running, or marks it lost. True when adopted.
  bool AdoptOrLose(Session& session);
  void Remove(const std::string& id);
  void SweeperLoop();
  void EnforceLogBudget(const std::string& tenant, uint64_t budget);

  ProcessResult List(const Scope& scope);
  ProcessResult Poll(const ProcessRequest& request, const std::shared_ptr<Session>& session);
  ProcessResult Log(const ProcessRequest& request, const std::shared_ptr<Session>& session);
  ProcessResult Input(const ProcessRequest& request, const std::shared_ptr<Session>& session);
  ProcessResult Kill(const std::shared_ptr<Session>& session);
  ProcessResult Clear(const std::shared_ptr<Session>& session);
  ProcessResult RemoveAction(const std::shared_ptr<Session>& session);

  std::shared_ptr<internal::Hub> hub_;
  UniqueFd owner_lock_;  // flock on <root>/.lock, taken by Recover
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  bool shut_down_ = false;
  std::condition_variable sweep_cv_;
  bool stop_sweeper_ = false;
  std::thread sweeper_;
};

}  // namespace sandrun::sessions

// Pending exec approvals in a running server (SPEC §6.5, reference §4.4): an exec that needs an
// approval is registered here and answered `approval-pending`; an operator decides it
// (`POST /v1/approvals/{id}`, `sandrun approvals approve ID DECISION`), or the timeout hands it
// to askFallback. Approved commands run as background sessions (their end is the session's
// exec.finished/exec.failed event, and one still running after approvalRunningNoticeMs gets one
// exec.running "Exec running" notice); a call that waits (`"wait": true`, `sandrun exec --wait`)
// is handed its approved command instead and runs it itself. Every request and resolution is an
// event, and a record in the tenant's approvals record (config/approval_records.h): pending ones
// outlive a restart (Restore), decided ones say who answered, when and what.
//
// Pattern of use (runtime.cc):
//   ApprovalBroker broker(state_dir, run_fn, publish_fn, {}, running_fn);
//   std::string id = broker.Register(std::move(pending)).id;    // from RunExecTool
//   ApprovalBroker::Handoff h = broker.Await(id, &cancel);       // a waiting call
//   ApprovalBroker::Answer a = broker.Decide(id_or_slug, "allow-once", tenant, "ops-1");
//   broker.Shutdown();                                  // pending ones stay on disk
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runner/config/approval_records.h"
#include "runner/policy/approval_flow.h"
#include "runner/policy/exec_request.h"
#include "runner/policy/gate.h"
#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

struct PendingApproval {
  std::string id;  // a UUID (set by Register)
  int64_t created_ms = 0;
  int64_t expires_ms = 0;  // set by Register from timeout_ms
  int64_t timeout_ms = 1800000;
  std::string tenant;
  policy::Caller caller;
  std::string host;                 // gateway | node
  std::string command;              // as requested
  policy::GatedPlan gated;          // what runs when approved (command replaced then)
  policy::ApprovalVerdict verdict;  // allowed decisions, patterns, askFallback
  bool notify_on_exit = true;
  bool notify_on_exit_empty_success = false;
  int64_t running_notice_ms = 10000;  // approvalRunningNoticeMs (0: no notice)
  // Kept in the record so a restart can decide the call again (opaque here).
  std::string request_json;
  std::string principal_json;
  bool wait = false;  // a call waits for the answer (Await): it runs the approved command
};

class ApprovalBroker {
 public:
  // Starts `command` for an approved `p` as a background session: its id, or an error message.
  using RunFn =
      std::function<Result<std::string>(const PendingApproval& p, const std::string& command)>;
  // Publishes an event: ("approval.requested" | "approval.resolved", JSON object).
  using PublishFn = std::function<void(const std::string& tenant, const std::string& type,
                                       const std::string& json)>;
  using NowFn = std::function<int64_t()>;

  // Whether the background session `session_id` that approved `p` runs as is still running
  // (the "Exec running" notice).
  using RunningFn = std::function<bool(const PendingApproval& p, const std::string& session_id)>;

  ApprovalBroker(std::string state_dir, RunFn run, PublishFn publish, NowFn now_ms = {},
                 RunningFn running = {});
  ~ApprovalBroker();
  ApprovalBroker(const ApprovalBroker&) = delete;
  ApprovalBroker& operator=(const ApprovalBroker&) = delete;

  // At most this many approvals pend per tenant, and only commands an operator can read: the
  // record of each is kept on disk, and a tenant must not be able to fill it (or the operator's
  // screen) up.
  static constexpr size_t kMaxPendingPerTenant = 64;
  static constexpr size_t kMaxCommandBytes = 8 * 1024;

  // Takes `p` (id, created/expires set here), records it and publishes approval.requested.
  // Returns the copy as registered, or the refusal (quota-exceeded: the tenant has
  // kMaxPendingPerTenant pending; invalid-request: the command is longer than kMaxCommandBytes).
  Result<PendingApproval> Register(PendingApproval p);
  // After a restart: `p` as an earlier run recorded it (id, created and expires kept; no
  // waiter). One already expired is resolved by the timer at once, as it would have been.
  void Restore(PendingApproval p);
  // A recorded pending approval that cannot be restored (`why`): recorded as dropped and
  // published as resolved, never silently lost.
  void Drop(config::ApprovalRecord record, const std::string& tenant, const std::string& why);

  // What a waiting call is handed once its approval is decided.
  struct Handoff {
    // Internal: the approval left pending_ and is being resolved (its waiter waits on).
    bool deciding = false;
    bool resolved = false;  // false: cancelled, unknown id, or the server stops
    bool approved = false;
    std::string decision;  // allow-once | allow-always | deny | timeout
    std::string command;   // when approved: what runs
    std::string text;      // the resolution's text ("Exec denied (...)")
  };
  // Blocks until approval `id` (registered with `wait`) is decided, `cancel` is set or the
  // broker stops. Once cancelled (or stopped) the approval no longer has a waiter: an approval
  // after that runs as a background session, as any other.
  Handoff Await(const std::string& id, const CancelToken* cancel);

  struct Answer {
    int status = 200;  // 200 decided; 400 bad decision; 404 unknown id; 409 ambiguous slug
    std::string json;  // {"id","decision","approved","sessionId"?,"text"} or {"error":{...}}
  };
  // Which agents' approvals a caller may see and answer (an operator token's --agents, an agent
  // token's own agent); empty: every agent of the tenant. Others' answer as unknown ids do.
  using AgentFilter = std::function<bool(const std::string& agent)>;

  // `decision`: allow-once | allow-always | always | deny. An id or its 8-character slug. `by`:
  // who answered (a token name, the local user), for the record.
  Answer Decide(const std::string& id_or_slug, const std::string& decision,
                const std::string& tenant, const std::string& by, const AgentFilter& agents = {});

  // {"pending":[{"id","slug","command","host","cwd","agentId","sessionKey","createdAtMs",
  //   "expiresAtMs","allowedDecisions","reason"}], "decided":[record, ... newest last]}
  std::string ListJson(const std::string& tenant, const AgentFilter& agents = {}) const;
  // GET /v1/approvals/{id}: the tenant's record of `id_or_slug` (pending or decided):
  // {"id","slug","status","command",...,"decision","decidedBy","decidedAtMs","sessionId","text"}.
  Answer Show(const std::string& id_or_slug, const std::string& tenant,
              const AgentFilter& agents = {}) const;
  size_t size() const;
  // Pending approvals by tenant (metrics).
  std::map<std::string, size_t> PendingByTenant() const;

  // Stops the timer and releases waiting calls; pending approvals stay recorded for the next run.
  void Shutdown();

 private:
  struct Notice {
    int64_t due_ms = 0;
    PendingApproval approval;
    std::string session_id;
    std::string command;
  };
  void TimerLoop();
  // Runs outside mu_: persists allow-always, starts the run (or hands it to the waiter),
  // records and publishes the resolution.
  Answer Resolve(const PendingApproval& p, const std::string& decision, bool approved,
                 const std::string& command, const std::string& reason, const std::string& by);
  void Record(const PendingApproval& p, const std::string& status, const std::string& decision,
              const std::string& by, const std::string& session_id, const std::string& text);
  void FireNotices();

  const std::string state_dir_;
  RunFn run_;
  PublishFn publish_;
  NowFn now_ms_;
  RunningFn running_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, PendingApproval> pending_;
  std::map<std::string, Handoff> handoffs_;  // decided, for the call that waits on it
  std::vector<Notice> notices_;              // approved runs to check on for "Exec running"
  std::thread timer_;                        // last: started after everything it uses exists
};

// The tenant's approvals as recorded on disk, in ListJson's shape: {"pending":[...],
// "decided":[...]} (the CLI without a server).
std::string RecordedApprovalsJson(const std::string& state_dir, const std::string& tenant);

}  // namespace sandrun::api

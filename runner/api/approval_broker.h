// Pending exec approvals in a running server (SPEC §6.5, reference §4.4): an exec that needs an
// approval is registered here and answered `approval-pending`; an operator decides it
// (`POST /v1/approvals/{id}`, `sandrun approvals approve ID DECISION`), or the timeout hands it
// to askFallback. Approved commands run as background sessions (their end is the session's
// exec.finished/exec.failed event); every request and resolution is an event too.
//
// Pattern of use (serve.cc):
//   ApprovalBroker broker(state_dir, run_fn, publish_fn);
//   std::string id = broker.Register(std::move(pending));   // from RunExecTool
//   ApprovalBroker::Answer a = broker.Decide(id_or_slug, "allow-once", tenant);
//   broker.Shutdown();                                       // pending ones are dropped
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "runner/policy/approval_flow.h"
#include "runner/policy/exec_request.h"
#include "runner/policy/gate.h"
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

  ApprovalBroker(std::string state_dir, RunFn run, PublishFn publish, NowFn now_ms = {});
  ~ApprovalBroker();
  ApprovalBroker(const ApprovalBroker&) = delete;
  ApprovalBroker& operator=(const ApprovalBroker&) = delete;

  // Takes `p` (id, created/expires set here) and publishes approval.requested. Returns the copy
  // as registered.
  PendingApproval Register(PendingApproval p);

  struct Answer {
    int status = 200;  // 200 decided; 400 bad decision; 404 unknown id; 409 ambiguous slug
    std::string json;  // {"id","decision","approved","sessionId"?,"text"} or {"error":{...}}
  };
  // `decision`: allow-once | allow-always | always | deny. An id or its 8-character slug.
  Answer Decide(const std::string& id_or_slug, const std::string& decision,
                const std::string& tenant);

  // {"pending":[{"id","slug","command","host","cwd","agentId","sessionKey","createdAtMs",
  //   "expiresAtMs","allowedDecisions","reason"}]}
  std::string ListJson(const std::string& tenant) const;
  size_t size() const;
  // Pending approvals by tenant (metrics).
  std::map<std::string, size_t> PendingByTenant() const;

  // Stops the timer; pending approvals are dropped (each published as resolved "shutdown").
  void Shutdown();

 private:
  void TimerLoop();
  // Runs outside mu_: persists allow-always, starts the run, publishes the resolution.
  Answer Resolve(const PendingApproval& p, const std::string& decision, bool approved,
                 const std::string& command, const std::string& reason);

  const std::string state_dir_;
  RunFn run_;
  PublishFn publish_;
  NowFn now_ms_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, PendingApproval> pending_;
  std::thread timer_;  // last: started after everything it uses exists
};

}  // namespace sandrun::api

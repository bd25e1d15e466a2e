// The transport-neutral runtime every front end adapts to (the unix-socket server and the
// one-shot CLI today; the TCP server, MCP and node hosts next): it owns the background sessions,
// the executors (one per plan target), the approval broker and the event hub, and takes a Principal
// per call. Front ends translate their transport (HTTP headers, MCP metadata, CLI flags) into a
// Principal and a tool call's JSON, and render the RuntimeReply; they include nothing of policy,
// sessions or the sandbox (a test checks serve.cc's includes).
//
// Pattern of use (serve.cc):
//   SANDRUN_ASSIGN_OR_RETURN(auto runtime, Runtime::Start(global, {socket, keep_host}));
//   RuntimeReply r = runtime->Exec(principal, body);      // {status, json}
//   auto sub = runtime->Subscribe(TenantFilter::Tenant(who.tenant), last_event_id);
//   runtime->NextEvent(sub, &event, 15000);              // event.id for the SSE id: line
//   std::string text = runtime->MetricsText(TenantFilter::All());
//   runtime->Reload();                                   // SIGHUP: config.json again
//   runtime->Shutdown();
// The one-shot CLI (no server answers):
//   auto runtime = Runtime::StartOneShot(global);
//   RuntimeReply r = runtime->Exec(CliPrincipal(global), body, &cancel);
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runner/api/apply_patch_tool.h"
#include "runner/api/cli_context.h"
#include "runner/api/event_ring.h"
#include "runner/api/exec_tool.h"
#include "runner/api/tenant_filter.h"
#include "runner/config/settings.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

// Who makes a call. Every call carries one; nothing about the caller is process-global.
struct Principal {
  // "" for the local server's own tenant (today's paths under $SANDRUN_HOME); a hosted tenant
  // (a token's) gets its own config layer, workspaces, approvals file, containers, events.
  std::string tenant;
  // "agent" | "operator" | "admin" (auth::RoleName). The local socket's peer of the server's uid
  // is the admin of tenant "".
  std::string role = "admin";
  std::string token_name;  // the bearer token's name ("" for the local socket's admin)
  std::string agent = "main";
  std::string session = "main";
  // The workspace the caller chose ("" = the agent's configured one). Front ends set it only
  // for callers allowed to choose (the local server: the server's own uid).
  std::string workspace_root;
  std::string provider = "api";  // tools.elevated.allowFrom key
  std::string sender;            // the caller's name for allowFrom (the local server: SO_PEERCRED)
  int64_t uid = -1;              // the caller's uid when known
  // The caller's working directory ("" = the server's): set only for callers allowed to
  // choose, as workspace_root.
  std::string cwd;
  // The agents a token may act for (its --agents globs; empty: any), which also bound the
  // approvals an operator of the tenant sees and answers.
  std::vector<std::string> agent_globs;
};

// What a front end renders: an HTTP status (200 handled, 400 refused before anything ran, 403 not
// allowed for the role, 404 unknown (or another tenant's), 409, 429 over a quota, 500 internal)
// and one JSON object.
struct RuntimeReply {
  int status = 200;
  std::string json;
  int retry_after_seconds = 0;  // a 429 (quota-exceeded): when to try again (Retry-After)
};

// The HTTP status of a call refused before anything ran, by its wire code: unauthorized 401,
// forbidden 403, not-found and session-not-found 404, conflict 409, quota-exceeded 429, else 400.
int RefusalStatus(const std::string& wire_code);

class Runtime {
 public:
  struct Options {
    std::string socket;                // the server's socket: hidden from host commands
    bool keep_host_processes = false;  // on Shutdown, leave gateway sessions running
    // A one-shot call (the CLI when no server answers) shares $SANDRUN_HOME with a server that
    // may start or run at any time, so it touches nothing of the server's there: no session
    // manager (it would recover, adopt or kill the server's sessions and rewrite their
    // records), no approval broker (askFallback decides), no socket, nothing persisted at
    // Shutdown. The config is read by each call (its warnings and errors are the call's), and
    // the state dir, instance id and approvals file are created only as a call needs them.
    bool one_shot = false;
    // The in-process MCP server (`sandrun mcp` when no server answers, issue 16): a long-running
    // runtime of its own that must not take the server's place either. Its background sessions
    // and events live in a directory private to this process (<state_dir>/mcp/<pid>, removed at
    // Shutdown, when every session still running is killed); it has no approval broker (no
    // operator can reach it: askFallback decides, as for the one-shot CLI) and recovers nothing.
    bool private_sessions = false;
  };
  struct Event {
    std::string type;  // "session.started", "exec.finished", "approval.requested", ...
    std::string json;
    uint64_t id = 0;     // the sequence id (SSE `id:`, Last-Event-ID); 0 on a one-shot runtime
    std::string tenant;  // whose event it is
  };
  using Subscription = EventHub::Subscription;

  // Loads the config (its tenants' quotas are kept), opens the event ring, recovers the sessions
  // of an earlier run and registers the executors (made on first use). One-shot: registers the
  // executors only.
  static Result<std::unique_ptr<Runtime>> Start(const GlobalOptions& global, Options options);
  // Start with Options::one_shot, which cannot fail (nothing is loaded or created).
  static std::unique_ptr<Runtime> StartOneShot(const GlobalOptions& global);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The tool calls, each a JSON body as the tool call's wire form. `cancel` (the CLI's signals;
  // may be null) kills a foreground run.
  RuntimeReply Exec(const Principal& who, std::string_view body,
                    const CancelToken* cancel = nullptr);
  // One exec call whose foreground run the front end drives (the CLI's exec stream): a run not
  // asked to yield goes to `run_foreground`; background and yielding runs become sessions.
  // `cancel` (the client went away) also ends a wait for an approval (`"wait": true`), which
  // `on_wait` hears of first with the approval-pending result.
  ExecToolResult ExecForeground(const Principal& who, const policy::ExecRequest& request,
                                ForegroundFn run_foreground, const CancelToken* cancel = nullptr,
                                std::function<void(const ExecToolResult&)> on_wait = {});
  // One exec call for a front end that follows its run (MCP): the request as the front end
  // parsed and shaped it (its yield window capped), the window watched by `watch` (progress,
  // cancel, long output kept). `result.session_id` names the session it left, if any.
  // `approval_cancel` ends a wait for an approval (`"wait": true`): the front end's deadline or
  // its caller's cancel; the approval stays pending.
  ExecToolResult ExecWatched(const Principal& who, const policy::ExecRequest& request,
                             const YieldWatch& watch, const CancelToken* approval_cancel);
  // The mcp.* settings of the config as it is now (the one in force when the file does not load).
  config::McpSettings McpSettings() const;
  RuntimeReply ApplyPatch(const Principal& who, std::string_view body);
  // The same call from a front end that built the request itself (`sandrun apply-patch`).
  ApplyPatchToolResult ApplyPatch(const Principal& who, const ApplyPatchRequest& request);
  // The tool policy first (every front end comes here): a denied process tool (tools.deny,
  // global or the agent's) refuses every action as tool-denied (HTTP 400), server or not. Then
  // one-shot: refused as server-required (background sessions live in a server).
  RuntimeReply Process(const Principal& who, std::string_view body);
  RuntimeReply PolicyCheck(const Principal& who, std::string_view body);
  // The verdict JSON for a request a front end built itself (`sandrun policy check`).
  std::string PolicyCheck(const Principal& who, const policy::ExecRequest& request);
  // Pending approvals of the principal's tenant, and an operator's decision on one (server only).
  RuntimeReply ListApprovals(const Principal& who);
  RuntimeReply DecideApproval(const Principal& who, const std::string& id, std::string_view body);
  // One approval of the principal's tenant, pending or decided (status, decision, who, when);
  // `own_agent_only` (an agent token): only the principal's agent's, others are unknown (404).
  RuntimeReply ShowApproval(const Principal& who, const std::string& id,
                            bool own_agent_only = false);
  // Per-session exec state (session_admin.h), one-shot too (on the state files, no event).
  // `action`: "patch" (body: the PATCH object), "clear", "directive" (body: {"text"}). A change
  // is a session.updated event and an audit line. The front end lets only operators and admins
  // call them.
  RuntimeReply ListSessionStates(const Principal& who, const std::string& agent);
  RuntimeReply ShowSessionState(const Principal& who, const std::string& agent,
                                const std::string& key);
  RuntimeReply ChangeSessionState(const Principal& who, const std::string& agent,
                                  const std::string& key, const std::string& action,
                                  std::string_view body);
  // The principal's tenant's sandbox containers, and removing one (sandbox_admin.h; server
  // only). The front end lets only operators and admins call them.
  RuntimeReply ListSandboxes(const Principal& who);
  RuntimeReply RemoveSandbox(const Principal& who, const std::string& name);

  // Re-reads config.json (SIGHUP): the tenants' quotas take effect at the next call. A config
  // that does not load keeps the one in force and returns why (invalid-config). Server only.
  Status Reload();

  // Events of the sessions and approvals of the tenants `filter` takes (bounded per subscriber:
  // a slow one loses old events). With `after` (Last-Event-ID), the events after that id still
  // in the ring are replayed first.
  std::shared_ptr<Subscription> Subscribe(const TenantFilter& filter,
                                          std::optional<uint64_t> after = std::nullopt);
  void Unsubscribe(const std::shared_ptr<Subscription>& s);
  // Waits up to `ms` for the next event; false on timeout or once the runtime stops.
  bool NextEvent(const std::shared_ptr<Subscription>& s, Event* out, int ms);

  // GET /metrics: Prometheus text of the tenants `filter` takes (tool calls by decision, exec
  // latency, running sessions, sandbox containers, pending approvals, quota rejections; the
  // server-wide series of before for TenantFilter::All only).
  std::string MetricsText(const TenantFilter& filter) const;

  const config::ServerSettings& server_settings() const;
  size_t session_count() const;
  uint64_t requests() const { return requests_.load(); }
  uint64_t refused() const { return refused_.load(); }
  int recovered_finished() const;
  int recovered_lost() const;
  const std::string& state_dir() const;

  // Ends every event stream's wait (the front end stops accepting next).
  void CloseEvents();
  // After the last call returned: drops pending approvals, persists the sessions, kills what
  // must not outlive the server.
  void Shutdown();

 private:
  struct Impl;
  explicit Runtime(std::unique_ptr<Impl> impl);
  RuntimeReply Count(RuntimeReply reply);  // counts requests and refusals
  std::unique_ptr<Impl> impl_;
  std::atomic<uint64_t> requests_{0}, refused_{0};
};

// The principal the CLI speaks for in-process: provider "cli", the OS user (its name is looked up
// only when allowFrom needs it), the agent, session, workspace and cwd of the global options.
Principal CliPrincipal(const GlobalOptions& global);

}  // namespace sandrun::api

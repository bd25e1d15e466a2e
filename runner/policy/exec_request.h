// A validated `exec` tool call (SPEC §2.1, reference §1.1) and who is asking. Parsing from JSON
// lives in runner/api/tool_call.h; this is the plain value the gate consumes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace sandrun::policy {

struct ExecRequest {
  std::string command;  // required, non-empty, no NUL, <= 1 MiB
  std::optional<std::string> workdir;
  std::map<std::string, std::string> env;  // overrides (keys validated by the gate)
  std::optional<int64_t> yield_ms;
  bool background = false;
  std::optional<double> timeout_seconds;  // `timeout` or `timeoutSeconds`; <= 0 means none
  bool pty = false;
  std::optional<bool> elevated;
  std::optional<std::string> host;      // raw value as given (validated by the gate)
  std::optional<std::string> security;  // accepted and ignored (SPEC §3.6)
  std::optional<std::string> ask;       // may only tighten
  std::optional<std::string> node;
  // sandrun's own: when the call needs an operator's approval, wait for the answer and run the
  // approved command as this call (the server only; see ApprovalBroker::Await).
  bool wait = false;
  // sandrun's own (issue 19): the call's sandbox choices, accepted only within sandbox.allow.*
  // (the gate refuses the rest, naming the key); a different choice is a different container.
  std::optional<std::string> image;
  std::optional<std::string> network;
  std::optional<int64_t> memory_bytes;  // "memory": bytes, or "512m"/"2g"
  std::optional<double> cpus;
  std::optional<int64_t> pids;
  // "rm": the call gets a scope of its own, removed with its container and scratch data when
  // the call ends (foreground calls only).
  bool rm = false;
};

// Who is calling (SPEC §3.5): provider "cli" with the OS user as sender, or "api" with the
// token's name; the agent and session the call belongs to.
struct Caller {
  std::string provider = "cli";
  std::string sender;
  // The CLI's user id, when `sender` is left for the caller of the gate to fill in only if an
  // elevated allowFrom list needs it (a passwd lookup costs a one-shot call ~0.5 ms). -1: none.
  int64_t uid = -1;
  std::string agent_id = "main";
  std::string session_key = "main";
  // The hosted tenant the call belongs to ("" = the local server's own, today's behaviour): it
  // names the tenant's scope keys, containers, workspaces and approvals file.
  std::string tenant;
  // tenants.<id>.hostExecution, filled in by the loader from the config: whether a non-empty
  // tenant may run on the gateway or a node, or ask for elevated (ignored for tenant "").
  bool host_execution = false;
  // The session's `/exec host=` override (config::SessionState, filled in by the loader): the
  // requested host of a call that names none, checked against tools.exec.host like one.
  std::optional<std::string> session_host;
  // The session's elevated level (off|on|ask|full) when one is set: a call whose gates refuse it
  // is told so (a warning), not moved silently.
  std::optional<std::string> session_elevated;
};

}  // namespace sandrun::policy

// `sandrun policy check` (SPEC §6.6) and `sandrun approvals ...` (the operator side of §6.5).
//
// policy check runs the exec path's own loader and decision (LoadExecInputs, policy::DecideExec)
// without running anything, writing anything or contacting the engine, and prints
// one JSON object, exit 0:
//   {"decision":"allow|ask|needs-review|deny","reason","host":{"requested","configured",
//    "effective"},"security","ask","analysis":{"ok","reason","segments":[{"argv",
//    "resolvedPath","satisfiedBy"}]},"inlineEval":[...],"rewritten",
//    ask/needs-review only: "askFallback":{"security","approved","command"|"reason"},
//    "allowedDecisions":[...],"allowAlways":[patterns allow-always would persist]}
#pragma once

#include <string>
#include <vector>

#include "runner/api/cli_context.h"
#include "runner/policy/exec_request.h"

namespace sandrun::api {

// The policy check object for `request` made by `caller` (the server's POST /v1/policy/check
// uses it too).
std::string PolicyCheckJson(const GlobalOptions& global, const policy::Caller& caller,
                            const policy::ExecRequest& request);

struct PolicyCheckFlags {
  std::string host;
  std::string cwd;                   // the command's workdir (relative to the workspace)
  std::vector<std::string> env;      // K=V
  std::vector<std::string> command;  // the words after "--", for CommandFromWords
  bool elevated = false;             // as an `elevated: true` call
};
int RunPolicyCheckCommand(const GlobalOptions& global, const PolicyCheckFlags& flags);

struct ApprovalsFlags {
  // list | approve | allowlist-add | allowlist-remove | allowlist-list
  std::string action;
  std::string id;        // approve: the id or its 8-character slug
  std::string decision;  // approve: allow-once | allow-always | deny
  std::string pattern;   // allowlist add/remove (remove also takes an entry id)
  bool json = false;
};
// approve and list's pending part go through the running server (approvals are pending only
// there); the allowlist is the approvals file, edited under its lock whether a server runs or not.
int RunApprovalsCommand(const GlobalOptions& global, const ApprovalsFlags& flags);

}  // namespace sandrun::api

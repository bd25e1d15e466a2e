// The apply_patch tool end to end (SPEC §6b): config -> tool policy and apply_patch gate (where it
// may write) -> patch parser -> all-or-nothing applier -> result JSON. In-process: it edits files,
// so it needs no sandbox container and no server; in a sandboxed session it edits the host side
// of the /workspace mount, so the container sees the change.
//
// Result: {"content":[{"type":"text","text":"Success. Updated the following files:\nA x\n..."}],
//          "details":{"status":"completed","added":[...],"updated":[...],"deleted":[...],
//                     "moved":[{"from","to"}],"cwd":"...","host":"sandbox|gateway",
//                     "durationMs":N}}
// Refusals before anything changed are {"error":{"code","message"}}: tool-denied,
// read-only-workspace, invalid-request, invalid-config, invalid-patch (the envelope),
// path-not-allowed (workspaceOnly), patch-failed (a hunk does not fit, a file is missing, binary,
// or already exists). apply-failed: writing failed and was rolled back (internal, exit 1).
#pragma once

#include <string>

#include "runner/api/cli_context.h"
#include "runner/api/tool_call.h"
#include "runner/patch/apply.h"
#include "runner/policy/exec_request.h"

namespace sandrun::api {

struct ApplyPatchToolResult {
  bool refused = false;   // refused, nothing changed (CLI exit 2)
  bool internal = false;  // writing failed (rolled back) or sandrun failed (CLI exit 1)
  Error error;            // when refused or internal: its wire code is the JSON's error code
  patch::ApplySummary summary;
  std::string text;  // the content text ("Success. Updated the following files: ...")
  std::string json;  // the one JSON object `sandrun call` prints
};

// Called by the Runtime (runner/api/runtime.h), whichever front end carries the call.
ApplyPatchToolResult RunApplyPatchTool(const GlobalOptions& global, const policy::Caller& caller,
                                       const ApplyPatchRequest& request);

struct ApplyPatchFlags {
  std::string file;  // "" or "-": stdin
  std::string workdir;
  std::string model;
  bool json = false;
};

// `sandrun apply-patch [FILE|-]`: prints the summary text (or, with --json, the result object).
// Exit 0 applied, 2 refused (nothing changed), 1 writing failed (rolled back) or internal.
int RunApplyPatchCommand(const GlobalOptions& global, const ApplyPatchFlags& flags);

}  // namespace sandrun::api

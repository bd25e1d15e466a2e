// Typed settings from config.json (OpenClaw-compatible keys), with sandrun's defaults. The
// loader (config.h) fills these; the gate reads them. Defaults here are the product defaults:
// an empty or missing config file means exactly these values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sandrun::config {

enum class SandboxMode { kOff, kNonMain, kAll };
enum class SandboxScope { kSession, kAgent, kShared };
enum class WorkspaceAccess { kNone, kRo, kRw };
enum class Security { kDeny, kAllowlist, kFull };  // ordered: deny < allowlist < full
enum class Ask { kOff, kOnMiss, kAlways };         // ordered: off < on-miss < always
enum class ExecMode { kDeny, kAllowlist, kAsk, kAuto, kFull };

struct DockerSettings {                                            // sandbox.docker.*
  std::string image = "sandrun-sandbox:bookworm";                  // image
  std::string container_prefix = "sandrun-sbx-";                   // containerPrefix
  std::string workdir = "/workspace";                              // workdir (container side)
  bool read_only_root = true;                                      // readOnlyRoot
  std::vector<std::string> tmpfs = {"/tmp", "/var/tmp", "/run"};   // tmpfs
  std::string network = "none";                                    // network
  std::vector<std::string> cap_drop = {"ALL"};                     // capDrop
  std::map<std::string, std::string> env = {{"LANG", "C.UTF-8"}};  // env (agent merged over global)
  std::string user;                                                // user ("" = image default)
  std::string setup_command;                // setupCommand (run once after create)
  int64_t pids_limit = 512;                 // pidsLimit (0 = unlimited)
  int64_t memory_bytes = int64_t{1} << 30;  // memory: number or "1g"/"512m"
  int64_t memory_swap_bytes = -1;           // memorySwap (-1 = same as memory)
  double cpus = 1.0;                        // cpus (0 = unlimited)
  std::string seccomp_profile = "default";  // seccompProfile: profiles/seccomp/<name>.json
  std::string apparmor_profile;             // apparmorProfile
  std::vector<std::string> binds;           // binds ("src:dst[:ro]"), global+agent concatenated
  bool exec_agent = true;  // execAgent: commands through the in-container agent where it can run
};

struct PruneSettings {      // sandbox.prune.*
  double idle_hours = 24;   // idleHours (0 disables)
  double max_age_days = 7;  // maxAgeDays (0 disables)
};

// sandbox.pool.*: started containers kept waiting for new scopes (a running server only;
// exec::PoolSettings). 0/0: none.
struct PoolSettings {
  int64_t min = 0;                      // min: kept ready once a kind of sandbox was asked for
  int64_t max = 0;                      // max: kept ready under demand
  int64_t idle_ttl_ms = 5 * 60 * 1000;  // idleTtlMs: how long one above min waits at most
};

// sandbox.allow.*: what a call may choose for its own sandbox (call fields image, network,
// memory, cpus, pids). Unset ceilings (0) leave the configured sandbox.docker value as the
// most a call may ask for; a tenant's quotas clamp the ceilings (TenantConfig::ForAgent).
struct SandboxAllowSettings {
  std::vector<std::string> images;   // images: image references a call may name
  std::vector<std::string> network;  // network: network modes a call may name ("none", ...)
  int64_t memory_bytes = 0;          // memory: ceiling, number or "2g"
  double cpus = 0;                   // cpus: ceiling
  int64_t pids = 0;                  // pids: ceiling
};

struct SandboxSettings {                      // sandbox.* / agents.<id>.sandbox.*
  SandboxMode mode = SandboxMode::kAll;       // mode: off | non-main | all (differs: all)
  SandboxScope scope = SandboxScope::kAgent;  // scope: session | agent | shared
  WorkspaceAccess workspace_access = WorkspaceAccess::kNone;  // workspaceAccess: none | ro | rw
  std::string workspace_root;  // workspaceRoot ("" = $SANDRUN_HOME/sandboxes)
  // scratchLimit: the size bound of each scope's scratch workspace (workspaceAccess none), "2g"
  // or a byte count; 0 = unbounded. Enforced by a per-scope ext4 image (a root runner).
  int64_t scratch_limit_bytes = int64_t{2} << 30;
  std::string main_session_key = "main";  // mainSessionKey (for non-main)
  DockerSettings docker;
  PruneSettings prune;
  PoolSettings pool;
  SandboxAllowSettings allow;
};

struct ElevatedSettings {  // tools.elevated.*
  bool enabled = false;    // enabled
  std::map<std::string, std::vector<std::string>>
      allow_from;                     // allowFrom.<provider>: [sender globs]
  std::string default_level = "off";  // defaultLevel: off | on | ask | full
  std::string host_profile;           // hostProfile ("" = tools.exec.hostProfile)
};

struct ApplyPatchSettings {               // tools.exec.applyPatch.*
  bool enabled = true;                    // enabled
  bool workspace_only = true;             // workspaceOnly: paths stay inside the workspace
  std::vector<std::string> allow_models;  // allowModels ([] = every model): "gpt-5.4" or
                                          // "openai/gpt-5.4"
};

struct SafeBinProfileSettings {                  // tools.exec.safeBinProfiles.<bin>
  int64_t min_positional = 0;                    // minPositional
  std::optional<int64_t> max_positional;         // maxPositional (unset: no limit)
  std::vector<std::string> allowed_value_flags;  // allowedValueFlags (take a value)
  std::vector<std::string> allowed_flags;        // allowedFlags (boolean; sandrun's extension)
  std::vector<std::string> denied_flags;         // deniedFlags
};

struct ReviewerSettings {            // tools.exec.reviewer.* (mode auto)
  std::vector<std::string> command;  // command: argv, or a string run by /bin/sh -c
  int64_t timeout_ms = 30000;        // timeoutMs
  std::string model;                 // model (OpenClaw's LLM reviewer; kept for compatibility)
};

struct ExecSettings {                         // tools.exec.*
  std::string host = "auto";                  // host: auto | sandbox | gateway | node
  std::optional<ExecMode> mode;               // mode
  std::optional<Security> security;           // security (overrides mode)
  std::optional<Ask> ask;                     // ask (overrides mode)
  int64_t timeout_seconds = 1800;             // timeoutSeconds (alias timeoutSec); 0 = none
  int64_t background_ms = 10000;              // backgroundMs (clamped 10..120000)
  int64_t max_output_chars = 200000;          // maxOutputChars
  int64_t pending_max_output_chars = 30000;   // pendingMaxOutputChars
  int64_t cleanup_ms = 1800000;               // cleanupMs
  bool notify_on_exit = true;                 // notifyOnExit
  bool notify_on_exit_empty_success = false;  // notifyOnExitEmptySuccess
  std::vector<std::string> path_prepend;      // pathPrepend
  bool login_shell_path = true;               // loginShellPath
  std::string node;                           // node
  std::string host_profile = "default";       // hostProfile
  std::string host_user;                      // hostUser ("" = nobody; only for a root runner)
  std::vector<std::string> env_passthrough;   // envPassthrough: kept despite profiles/env
  ApplyPatchSettings apply_patch;             // applyPatch
  // Allowlists (gateway/node, security=allowlist): SPEC §6.
  std::optional<std::vector<std::string>> safe_bins;  // safeBins (unset: cut uniq head tail tr wc)
  std::vector<std::string> safe_bin_trusted_dirs;     // safeBinTrustedDirs (after /bin, /usr/bin)
  std::map<std::string, SafeBinProfileSettings> safe_bin_profiles;  // safeBinProfiles
  bool strict_inline_eval = false;                                  // strictInlineEval
  std::vector<std::string> skill_bin_dirs;     // skillBinDirs: where autoAllowSkills trusts bins
  bool auto_allow_skills = false;              // autoAllowSkills (the approvals file's wins)
  int64_t approval_timeout_ms = 1800000;       // approvalTimeoutMs (30 min), then askFallback
  int64_t approval_running_notice_ms = 10000;  // approvalRunningNoticeMs (0: no notice)
  ReviewerSettings reviewer;                   // reviewer
};

struct ToolPolicy {  // tools.allow / tools.deny
  std::vector<std::string> allow;
  std::vector<std::string> deny;
};

// `sandrun serve` (server.*; the top level only): what one client may hold of the server.
struct ServerSettings {
  int64_t max_connections = 256;                    // maxConnections: more are refused at once
  int64_t header_timeout_ms = 10000;                // headerTimeoutMs: for a request's headers
  int64_t idle_timeout_ms = 60000;                  // idleTimeoutMs: keep-alive, body, each write
  int64_t max_body_bytes = int64_t{8} << 20;        // maxBodyBytes: larger bodies get 413
  int64_t max_buffered_bytes = int64_t{256} << 20;  // maxBufferedBytes: bodies in flight, in all
};

// mcp.* (top level only): the MCP front end (`sandrun mcp`, POST /mcp; issue 16).
struct McpSettings {
  // maxBlockMs: a tools/call never blocks longer; the command yields into a background session.
  int64_t max_block_ms = 50000;
  // maxOutputChars: a result's output beyond this keeps its head and tail (process log pages
  // the rest). MCP clients reject huge results.
  int64_t max_output_chars = 40000;
  // waitForApproval: an exec that needs an approval waits for the operator (within
  // maxBlockMs) instead of answering approval-pending at once.
  bool wait_for_approval = false;
  // allowedOrigins: browser origins POST /mcp accepts besides loopback ones ("http://localhost",
  // "http://127.0.0.1", "http://[::1]", any port, http or https); any other Origin gets 403.
  std::vector<std::string> allowed_origins;
};

// Everything that applies to one agent: the global settings with agents.<id> merged over them.
struct AgentSettings {
  ExecSettings exec;
  ElevatedSettings elevated;
  SandboxSettings sandbox;
  ToolPolicy tools;
  std::string workspace;  // agents.<id>.workspace ("" = the CLI's --workspace or cwd)
};

const char* ToString(SandboxMode v);
const char* ToString(SandboxScope v);
const char* ToString(WorkspaceAccess v);
const char* ToString(Security v);
const char* ToString(Ask v);
const char* ToString(ExecMode v);

}  // namespace sandrun::config

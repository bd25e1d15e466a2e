// The config file loader: config.json (OpenClaw-compatible keys, JSON with comments and trailing
// commas) into the typed settings of settings.h, validated in full at load time.
//
// Layout of the file:
//   {
//     "tools":   {"exec": {...}, "elevated": {...}, "allow": [...], "deny": [...]},
//     "sandbox": {"mode": ..., "scope": ..., "docker": {...}, "prune": {...}, ...},
//     "agents": {
//       "defaults": {"tools": ..., "sandbox": ..., "workspace": ...},  // alias of the global level
//       "<id>":     {"tools": ..., "sandbox": ..., "workspace": ...},  // per agent
//       "list":     [{"id": "<id>", ...}],  // OpenClaw's agents.list[] form, same content
//       "entries":  {"<id>": {...}}         // OpenClaw's agents.entries.<id> form
//     },
//     "server": {"maxConnections": ..., ...},  // sandrun serve's limits (top level only)
//     "mcp": {"maxBlockMs": ..., "maxOutputChars": ..., "waitForApproval": ...,
//             "allowedOrigins": [...]},          // the MCP front end (top level only)
//     "tenants": {"<tenant id>": {"tools": ..., "sandbox": ..., "agents": ...,
//                                 "quotas": {...}, "hostExecution": false}},
//     "$schema": ..., "version": ...         // accepted, ignored
//   }
// The global level is the built-in defaults, then agents.defaults.*, then the top-level tools /
// sandbox keys (the later wins key by key). An agent's settings are the global ones with the
// agent's keys replacing them key by key (objects merged recursively), except that
// sandbox.docker.env entries are merged over the global entries, sandbox.docker.binds are
// appended to the global ones, and under an effective sandbox.scope "shared" the agent's
// sandbox.docker and sandbox.prune are ignored (one container for everyone; a warning says so).
// At the global level sandbox.docker.env replaces the built-in {"LANG": "C.UTF-8"} (OpenClaw).
//
// Tenants (the multi-tenant server): tenants.<id> (id [a-z0-9][a-z0-9-]{0,31}) is a layer over
// the whole file for that tenant: its global level is the file's global level with the tenant's
// agents.defaults, tools and sandbox applied over it; its agents are the file's agents.<id>
// sections, then the tenant's own, applied over that tenant global level. quotas and
// hostExecution exist only there. A tenant the file does not name gets the file's settings,
// no host execution and no quotas (ForTenant).
//
// Normalisation: enum strings are trimmed and case-insensitive (host and defaultLevel are stored
// lowercase); paths starting with "~/" (workspaceRoot, workspace) are expanded with $HOME;
// backgroundMs, maxOutputChars, pendingMaxOutputChars and cleanupMs are clamped to OpenClaw's
// ranges (with a warning); memory sizes accept "512m", "1.5g" etc. (binary units).
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(config::Config cfg, config::LoadConfigFor(flags.config, state_dir));
//   for (const auto& w : cfg.warnings) std::cerr << "sandrun: " << w << "\n";
//   config::AgentSettings settings = cfg.ForAgent(flags.agent);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runner/config/settings.h"
#include "sandbox/base/result.h"

namespace sandrun::config {

// tenants.<id>.quotas: 0 means no limit. The ceilings clamp the tenant's sandbox settings.
struct TenantQuotas {
  int64_t max_concurrent_execs = 0;  // maxConcurrentExecs
  int64_t max_sessions = 0;          // maxSessions (background sessions held)
  int64_t max_containers = 0;        // maxContainers
  int64_t requests_per_minute = 0;   // requestsPerMinute
  int64_t max_log_bytes = 0;         // maxLogBytes (session logs kept)
  int64_t memory_bytes = 0;          // memory ceiling: number or "512m"/"2g"
  double cpus = 0;                   // cpus ceiling
  int64_t pids = 0;                  // pids ceiling
  bool operator==(const TenantQuotas&) const = default;
};

struct TenantConfig {
  bool host_execution = false;  // hostExecution: gateway/node execution and elevated allowed
  TenantQuotas quotas;
  AgentSettings global;
  std::map<std::string, AgentSettings> agents;

  // As Config::ForAgent, with the quota ceilings applied to the sandbox settings (a memory, cpus
  // or pids limit above the ceiling, or none, becomes the ceiling).
  AgentSettings ForAgent(const std::string& agent_id) const;
};

struct Config {
  std::string source_path;            // "" when no file was found (defaults only)
  std::vector<std::string> warnings;  // "config.json:12:5: unknown key tools.exec.foo (ignored)"

  ServerSettings server;                        // server.*
  McpSettings mcp;                              // mcp.*
  AgentSettings global;                         // defaults + agents.defaults + top-level keys
  std::map<std::string, AgentSettings> agents;  // agents.<id>, already merged over `global`

  // The global settings with agents.<agent_id> merged over them (`global` for an agent the file
  // does not mention).
  AgentSettings ForAgent(const std::string& agent_id) const;

  std::map<std::string, TenantConfig> tenants;  // tenants.<id>
  // The tenant's layer, or (for a tenant the file does not name) the file's settings with the
  // safe defaults: no host execution, no quotas.
  TenantConfig ForTenant(const std::string& tenant_id) const;
};

// Loads `path`. If `must_exist` is false and the file does not exist, returns the defaults
// (source_path ""). A file that is empty (or only whitespace and comments) means the defaults.
// Errors (code kInvalidArgument) name the file, the line and the column:
//   syntax:          "FILE:LINE:COL: <reason>"
//   wrong value:     "FILE:LINE:COL: tools.exec.timeoutSeconds: expected a non-negative integer,
//                     got \"abc\""
//   enum:            "FILE:LINE:COL: tools.exec.host: expected one of auto, sandbox, gateway, node,
//                     got \"spark\""
//   duplicate keys:  "FILE:LINE:COL: duplicate key tools.exec.host (first at line N)"
// A missing file with `must_exist` is kNotFound. Unknown keys are warnings, not errors.
Result<Config> LoadConfig(const std::string& path, bool must_exist);

// The config path: `explicit_path` (--config) if non-empty, and then it must exist; otherwise
// `state_dir`/config.json (optional). An empty `state_dir` means StateDirPath().
Result<Config> LoadConfigFor(const std::string& explicit_path, const std::string& state_dir);

// Parses a byte count: a non-negative integer, or a string "<number>[k|m|g|t][b]" (binary units,
// case-insensitive, fractions allowed: "1.5g"). Returns an error message on failure.
Result<int64_t> ParseByteSize(std::string_view text);

}  // namespace sandrun::config

// The approvals file, $SANDRUN_HOME/exec-approvals.json: per-agent exec policy (security, ask,
// askFallback, autoAllowSkills) and allowlists, in OpenClaw's version-1 format (reference §4.1).
//
//   { "version": 1,
//     "socket":   { "path": "...", "token": "..." },   // kept as-is; sandrun does not use it
//     "defaults": { "security": "deny|allowlist|full", "ask": "off|on-miss|always",
//                   "askFallback": "deny|allowlist|full", "autoAllowSkills": false },
//     "agents": { "*":    { ...same fields..., "allowlist": [ ... ] },
//                 "main": { ..., "allowlist": [ { "id": "<uuid>", "pattern": "~/bin/rg",
//                            "source": "allow-always", "argPattern": "<regex>",
//                            "lastUsedAt": 1737150000000, "lastUsedCommand": "rg -n TODO",
//                            "lastResolvedPath": "/home/u/bin/rg" } ] } } }
//
// Parsing is strict about the document and lenient about values, as OpenClaw's normalisation:
//   errors ("PATH:LINE:COL: reason", code kInvalidArgument): invalid JSON (comments and trailing
//     commas are accepted, as in config.json), duplicate keys, a root that is not an object, a
//     missing or wrong "version" (only 1 is known), and a structural member of the wrong type
//     ("socket", "defaults", "agents", an agent section: objects; "allowlist": an array;
//     socket.path / socket.token: strings). `null` for any of them means absent.
//   normalised, with a warning: a policy value that is not exactly one of the lowercase enum names
//     (or not a boolean for autoAllowSkills) is dropped but remembered as present-but-invalid
//     (ApprovalsPolicy::invalid), so that resolution still skips the wildcard and a rewrite keeps
//     it; allowlist items that are neither a non-empty string nor an object with a non-empty
//     string "pattern" are dropped; item fields of the wrong type are dropped (a bad or repeated
//     "id" is replaced by a new one); unknown keys (top level, socket, defaults, agents.<id>,
//     items) are dropped, and "defaults.allowlist" (never used by OpenClaw) too.
//   normalised silently: `null` policy values are unset; string items become {pattern}; patterns
//     are trimmed; a missing id gets a new UUID; "commandText" is stripped; "agents.default" is
//     merged into "agents.main" (main's fields win, allowlists concatenated main first and
//     deduplicated by lowercase(pattern) + argPattern).
// An empty file (only whitespace or comments) is an empty approvals file.
//
// **Differs from OpenClaw** (SPEC §6.7): a file that cannot be parsed is never treated as empty.
// LoadApprovals / UpdateApprovals move it aside to "<path>.corrupt-<unix ms>" (under the lock,
// content untouched) and return an error naming the file, line, column, reason and where the
// content was kept; the next write starts a fresh file. Writes are atomic and locked (see
// UpdateApprovals), so concurrent processes never lose each other's entries.
//
// Pattern of use:
//   std::string path = config::ApprovalsPath(state_dir);
//   SANDRUN_ASSIGN_OR_RETURN(config::LoadedApprovals loaded, config::LoadApprovals(path));
//   config::ResolvedApprovals r =
//       config::ResolveApprovals(loaded.file, agent_id, tool_security, tool_ask);
//   ...
//   SANDRUN_RETURN_IF_ERROR(config::UpdateApprovals(path, [&](config::ApprovalsFile& f) {
//     config::AddAllowlistEntry(f, agent_id, "/usr/bin/rg", "allow-always", now_ms);
//     return Ok();
//   }));
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runner/config/settings.h"
#include "runner/config/state_file.h"
#include "sandbox/base/result.h"

namespace sandrun::config {

struct AllowlistEntry {
  std::string id;           // a UUID; unique in the file
  std::string pattern;      // path glob, bare-name glob, or "=command:<hash16>"; trimmed, non-empty
  std::string source;       // "" (hand-written), "allow-always", "operator", ...
  std::string arg_pattern;  // argPattern: a regex over the arguments ("" = any)
  std::optional<int64_t> last_used_at;  // lastUsedAt, unix ms
  std::string last_used_command;        // lastUsedCommand
  std::string last_resolved_path;       // lastResolvedPath
  bool operator==(const AllowlistEntry&) const = default;
};

struct ApprovalsPolicy {
  std::optional<Security> security;
  std::optional<Ask> ask;
  std::optional<Security> ask_fallback;   // askFallback
  std::optional<bool> auto_allow_skills;  // autoAllowSkills
  std::vector<AllowlistEntry> allowlist;  // only used in agent sections
  // Fields present in the file with a value that is not valid: JSON key ("security", "ask",
  // "askFallback", "autoAllowSkills") -> the value as compact JSON. Such a field counts as set
  // for resolution (the wildcard is skipped) and is written back unchanged. Code that sets a
  // field should erase its key here.
  std::map<std::string, std::string> invalid;
  bool operator==(const ApprovalsPolicy&) const = default;
};

struct ApprovalsFile {
  ApprovalsPolicy defaults;
  std::map<std::string, ApprovalsPolicy> agents;  // "*" is the wildcard
  std::string socket_path;                        // socket.path ("" = absent)
  std::string socket_token;                       // socket.token ("" = absent)
  bool operator==(const ApprovalsFile&) const = default;
};

struct ResolvedApprovals {
  Security security = Security::kDeny;
  Ask ask = Ask::kOff;
  Security ask_fallback = Security::kFull;
  bool auto_allow_skills = false;
  std::vector<AllowlistEntry> allowlist;  // agents["*"] then agents[agent]
  // Where each field came from, by JSON key ("security", "ask", "askFallback",
  // "autoAllowSkills"): "agents.<id>.<key>", "agents.*.<key>", "defaults.<key>", or for the
  // fallbacks "tools.exec" (security, ask: the caller's) and "built-in" (askFallback full,
  // autoAllowSkills false).
  std::map<std::string, std::string> sources;
};

// Parses the file's text (see the top of this file for what is an error and what is
// normalised). Errors are "PATH:LINE:COL: reason" with `path` as given; normalisation warnings
// ("PATH:LINE:COL: agents.main.ask: ... (ignored)") are appended to `warnings` if non-null.
Result<ApprovalsFile> ParseApprovals(std::string_view text, const std::string& path,
                                     std::vector<std::string>* warnings = nullptr);

// The file as JSON: 2-space indented, "\n"-terminated, keys in a fixed order (version, socket,
// defaults, agents sorted by id; policy fields as in the format above), unset fields omitted.
// ParseApprovals(SerializeApprovals(f)) == f for any normalised `f`.
std::string SerializeApprovals(const ApprovalsFile& file);

// The effective policy of `agent_id` ("" means "main"), field by field (reference §4.1):
//   1. agents.<id>.<f> if valid; if present but invalid, skip to 3 (not the wildcard);
//   2. agents.*.<f> if valid (an invalid wildcard value falls through to 3);
//   3. defaults.<f> if valid;
//   4. the fallback: `fallback_security` / `fallback_ask` (the caller's tools.exec values),
//      askFallback full, autoAllowSkills false (OpenClaw's built-in fallbacks).
// The allowlist is agents["*"].allowlist followed by agents[agent_id].allowlist.
ResolvedApprovals ResolveApprovals(const ApprovalsFile& file, const std::string& agent_id,
                                   Security fallback_security, Ask fallback_ask);

// `state_dir` + "/exec-approvals.json".
std::string ApprovalsPath(const std::string& state_dir);
// A hosted tenant's own state: `state_dir` + "/tenants/<tenant>" (its workspaces, its approvals
// file). `tenant` must be a valid, non-empty tenant id (ids.h).
std::string TenantStateDir(const std::string& state_dir, const std::string& tenant);
// The approvals file of `tenant`: ApprovalsPath(state_dir) for "" (the local server's), else
// TenantStateDir(state_dir, tenant) + "/exec-approvals.json".
std::string ApprovalsPath(const std::string& state_dir, const std::string& tenant);

// existed = false: no file (an empty ApprovalsFile); warnings: normalisation, and a file that is
// not private (mode wider than 0600, or not owned by us).
using LoadedApprovals = LoadedState<ApprovalsFile>;

// Reads and parses `path`. A missing file is an empty one (existed = false). Errors: `path` or
// its directory is a symlink, or is not a regular file / directory (kInvalidArgument); read
// failures; a file that does not parse, which is first moved aside under the lock:
//   "PATH:3:7: Missing a comma or '}' after an object member.; the file was kept as
//    PATH.corrupt-1790000000000 and a fresh one will be started"  (kInvalidArgument)
Result<LoadedApprovals> LoadApprovals(const std::string& path);

// Read-modify-write under an exclusive advisory lock (flock on `path` + ".lock", created 0600;
// every writer of the file goes through here): creates the directory (0700) if missing, re-reads
// the file inside the lock (a corrupt one is moved aside and its error returned, as
// LoadApprovals; nothing is written), calls `mutate` (its error is returned and nothing is
// written), deletes temp files left by crashed writers and, unless the serialisation is
// byte-for-byte what is already on disk, writes it atomically (WriteFileAtomic: temp file in the
// same directory, O_CREAT|O_EXCL 0600, fsync, rename, fsync of the directory). Refuses a
// symlinked `path`, lock file or directory. Returns the file as written. Writes nothing when the
// file is unchanged, or absent and still empty after `mutate`.
Result<ApprovalsFile> UpdateApprovals(const std::string& path,
                                      const std::function<Status(ApprovalsFile&)>& mutate);

// A random UUID v4 ("xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx") from getrandom().
std::string NewEntryId();

// Adds {id: new, pattern: trimmed `pattern`, source, lastUsedAt: now_ms} to
// agents[agent].allowlist ("" means "main") and returns true, unless `pattern` is empty or an
// entry with the same lowercase(pattern) and an empty argPattern already exists there. Such an
// existing entry is left alone, except (reference §5.7) that when `source` is non-empty and
// differs from the entry's, the entry's source is set to `source` (returns false: nothing was
// added).
bool AddAllowlistEntry(ApprovalsFile& file, const std::string& agent, const std::string& pattern,
                       const std::string& source, int64_t now_ms);

// Removes from agents[agent].allowlist ("" means "main") every entry whose id equals
// `pattern_or_id` or whose pattern equals it case-insensitively (both trimmed); returns whether
// any was removed. The agent section itself stays.
bool RemoveAllowlistEntry(ApprovalsFile& file, const std::string& agent,
                          const std::string& pattern_or_id);

// Bookkeeping after a run the allowlist satisfied (reference §4.4 step 9): for each (id, resolved
// path), the entry with that id, in any agent section, gets lastUsedAt = now_ms,
// lastUsedCommand = `command` and lastResolvedPath = the path ("" removes it, as OpenClaw).
// Unknown ids are ignored (the entry may have been removed meanwhile).
void RecordAllowlistUse(ApprovalsFile& file,
                        const std::vector<std::pair<std::string, std::string>>& uses,
                        const std::string& command, int64_t now_ms);

// The exact-command pattern: "=command:" + the first 16 hex digits of sha256(trimmed command).
std::string ExactCommandPattern(std::string_view command);

}  // namespace sandrun::config

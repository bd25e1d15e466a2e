// Environment policy (reference §3.3, §2.4; SPEC §3.7): which env overrides a call may carry,
// which inherited keys the gateway child loses, and the PATH list helpers.
//
// Gateway/node: override keys must be portable (^[A-Za-z_][A-Za-z0-9_]*$) and not dangerous
// (PATH, blocked-everywhere keys, override-only keys, LD_/DYLD_/BASH_FUNC_ and the override
// prefixes); refusals use OpenClaw's `Security Violation: ...` texts. Sandbox: no blocking, but
// NUL values and non-portable keys are refused (they cannot be passed to the Engine API's Env
// safely). NUL values are refused on every host.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/policy/gate_types.h"

namespace sandrun::policy {

using EnvMap = std::map<std::string, std::string>;

// ^[A-Za-z_][A-Za-z0-9_]*$
bool IsPortableEnvKey(std::string_view key);

// The lists below take the upper-cased key.
bool IsBlockedEverywhereKey(std::string_view upper_key);    // blockedEverywhereKeys
bool IsBlockedOverrideOnlyKey(std::string_view upper_key);  // blockedOverrideOnlyKeys (+ families)
bool HasBlockedPrefix(std::string_view upper_key);          // DYLD_ LD_ BASH_FUNC_
bool HasBlockedOverridePrefix(std::string_view upper_key);  // GIT_CONFIG_ NPM_CONFIG_ ...
// PATH, blocked everywhere, override-only, or a blocked (override) prefix.
bool IsDangerousOverrideKey(std::string_view upper_key);
// Stripped from the inherited gateway env: blocked-everywhere keys and the blocked prefixes.
// Override-only keys (HOME, proxies, SSH_AUTH_SOCK, tokens, ...) are the operator's own and
// stay.
bool IsDangerousInheritedKey(std::string_view upper_key);

// Collation close to JavaScript's localeCompare in the root locale (what OpenClaw sorts the
// keys with): punctuation < digits < letters, letters case-insensitively first and lowercase
// before uppercase on a tie.
bool LocaleLess(std::string_view a, std::string_view b);

// The `Security Violation: ...` text for the refused override keys (deduped and sorted here):
//   only PATH                     Custom 'PATH' variable is forbidden during host execution.
//   one blocked key, no invalid   Environment variable '<K>' is forbidden during host execution.
//   PATH among several            Custom 'PATH' ... (blocked override keys: A, PATH[; invalid
//                                 non-portable override keys: X]).
//   otherwise                     blocked override keys: ...; invalid non-portable override
//                                 keys: ... (each part only when non-empty).
std::string FormatEnvViolation(std::vector<std::string> blocked_keys,
                               std::vector<std::string> invalid_keys);

// `Security Violation: Environment variable '<KEY>' contains a NUL byte.` for the first key (in
// map order) whose value holds a NUL byte; nullopt when there is none.
std::optional<Error> CheckEnvNul(const EnvMap& env);

// Gateway and node: the accepted overrides, or a security-violation. Blocked keys are reported
// upper-cased, invalid keys as given.
Result<EnvMap> ValidateHostEnvOverrides(const EnvMap& overrides);

// Sandbox: everything is accepted except NUL values and non-portable keys.
Result<EnvMap> ValidateSandboxEnvOverrides(const EnvMap& overrides);

// The base of the gateway child env: the runner's env without the dangerous inherited keys.
EnvMap SanitizeInheritedEnv(const EnvMap& host_env);

// PATH lists. Split drops empty entries; Dedupe keeps the first occurrence.
std::vector<std::string> SplitPathList(std::string_view path);
std::string JoinPathList(const std::vector<std::string>& entries);
std::vector<std::string> DedupePathEntries(const std::vector<std::string>& entries);

// tools.exec.pathPrepend entries: trimmed, empty ones dropped, a leading `~` or `~/` expanded
// against `home` (when non-empty), deduped.
std::vector<std::string> NormalizePathPrepend(const std::vector<std::string>& entries,
                                              const std::string& home);

// The gateway PATH (reference §3.2, SPEC §5): MergePath (shell_path.h) over the base PATH (the
// runner's own PATH; `/usr/local/bin:/usr/bin:/bin` when unset or empty): the prepend entries
// first, then the login shell's, then the base's, each kept once at its first position.
std::string MergeGatewayPath(std::string_view login_path, std::optional<std::string> base_path,
                             const std::vector<std::string>& prepend);

}  // namespace sandrun::policy

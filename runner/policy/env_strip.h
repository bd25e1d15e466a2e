// Secrets and runner-internal variables a host command does not inherit (SPEC §10
// "Identities"): the runner's GITHUB_TOKEN, AWS keys, DATABASE_URL, DOCKER_HOST, SANDRUN_HOME, ...
// are not the agent's. The list is data, profiles/env/<name>.json (one loader, below); an
// operator passes a variable through on purpose with tools.exec.envPassthrough.
//
// Pattern of use (the api gathers the inputs, the gate only reads the result):
//   SANDRUN_ASSIGN_OR_RETURN(EnvStripProfile p, LoadEnvStripProfile(DefaultProfilesDir()));
//   ctx.host_env = StripInheritedSecrets(HostEnv(), p.strip, settings.exec.env_passthrough);
//
// Profile schema: {"name", "description", "strip": ["PATTERN", ...]} where a pattern is a
// variable name with optional '*' wildcards ("*_TOKEN", "AWS_*"), matched case-insensitively
// against the whole name. Patterns must be non-empty, of [A-Za-z0-9_*], and not "*" alone.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::policy {

struct EnvStripProfile {
  std::string path;
  std::vector<std::string> strip;  // upper-cased patterns
};

Result<EnvStripProfile> LoadEnvStripProfile(const std::string& profiles_dir,
                                            const std::string& name = "default");
Result<EnvStripProfile> ParseEnvStripProfile(std::string_view text, const std::string& path,
                                             const std::string& expected_name);

// '*' matches any run of characters (also none); everything else matches itself, ignoring
// ASCII case.
bool EnvPatternMatches(std::string_view pattern, std::string_view key);

// Whether `value` holds a URL with a password (scheme://user:password@...).
bool ValueHoldsUrlCredentials(std::string_view value);

// `env` without the keys a `strip` pattern matches or whose value holds URL credentials, except
// those a `passthrough` pattern matches.
std::map<std::string, std::string> StripInheritedSecrets(
    const std::map<std::string, std::string>& env, const std::vector<std::string>& strip,
    const std::vector<std::string>& passthrough);

}  // namespace sandrun::policy

// The login shell's PATH on the host (OpenClaw's shell-env; reference §3.2): the probe the front
// end runs before the gate, with its per-process and on-disk caches. What the gate does with the
// result (policy::MergePath, policy::SelectShell) is in runner/policy/shell_path.h.
//
// Pattern of use (the front end):
//   Result<std::string> login = CachedLoginPath(shell_env, kDefaultLoginProbeTimeout, env);
//   ctx.login_path = login.value_or("");
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/executors/path_search.h"

namespace sandrun::exec {

inline constexpr std::chrono::milliseconds kDefaultLoginProbeTimeout{15000};
// The probe's output limit (OpenClaw's execFileSync maxBuffer).
inline constexpr size_t kLoginProbeMaxOutput = 2u << 20;

// Whether `shell` may be run as a login shell for the PATH probe: absolute, already normalised
// (no "//", "." or ".." parts) and listed in `etc_shells` (the text of /etc/shells).
bool IsTrustedLoginShell(std::string_view shell, std::string_view etc_shells);

// Runs `<shell> -l -c 'env -0'` and returns the PATH value the login shell ends with (possibly
// empty). The shell is `shell_env` ($SHELL) when IsTrustedLoginShell against /etc/shells, else
// /bin/sh. `env` is the probe's environment (the gate's sanitised host env); HOME is forced to
// the user's home directory and ZDOTDIR removed. Errors: the shell could not run, exited
// non-zero, was killed, timed out (kTimeout), printed more than kLoginProbeMaxOutput bytes, or
// printed no PATH (kNotFound).
Result<std::string> ProbeLoginPath(const std::string& shell_env, std::chrono::milliseconds timeout,
                                   std::map<std::string, std::string> env);

// ProbeLoginPath remembered in this process per key (the shell, the user, HOME, the base PATH
// and the size and mtime of every shell start-up file, as DiskCachedLoginPath keys it): a value
// or an error (OpenClaw caches a failed probe too). Another caller's shell or HOME, or a changed
// start-up file, probes again. Thread-safe.
Result<std::string> CachedLoginPath(const std::string& shell_env, std::chrono::milliseconds timeout,
                                    const std::map<std::string, std::string>& env);

// ProbeLoginPath with a cache on disk, for one-shot CLI calls that would otherwise start
// a login shell every time: `cache_file` holds the last probe's PATH under a key made of the
// shell, the user, HOME, the base PATH and the size and mtime of every shell start-up file
// (/etc/profile, /etc/profile.d, ~/.profile, ~/.bashrc, ~/.zshenv, ...). A key mismatch or an
// entry older than `max_age` probes again. A failed probe is remembered too, for 5 minutes (the
// same key: fixing a start-up file probes again at once), so a hung profile does not cost
// every call the whole timeout.
Result<std::string> DiskCachedLoginPath(const std::string& cache_file, const std::string& shell_env,
                                        std::chrono::milliseconds timeout,
                                        const std::map<std::string, std::string>& env,
                                        std::chrono::seconds max_age = std::chrono::hours(1));

}  // namespace sandrun::exec

// The shell a gateway exec runs and the PATH it runs with (OpenClaw's getShellConfig and
// shell-env; reference §3.1-3.2). Pure functions plus one probe; the gate calls them and puts
// the results in the Plan.
//
// Pattern of use (the gate):
//   std::string shell = SelectShell(std::getenv("SHELL"), PathLookupIn(runner_path));
//   Result<std::string> login = CachedLoginPath(shell_env, kDefaultLoginProbeTimeout, env);
//   env["PATH"] = MergePath(login.value_or(""), runner_path_or_minimal, config.path_prepend);
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::exec {

// The PATH of a daemon started without one (Linux).
inline constexpr std::string_view kMinimalDaemonPath = "/usr/local/bin:/usr/bin:/bin";
inline constexpr std::chrono::milliseconds kDefaultLoginProbeTimeout{15000};
// The probe's output limit (OpenClaw's execFileSync maxBuffer).
inline constexpr size_t kLoginProbeMaxOutput = 2u << 20;

// Resolves a bare program name ("bash") to an executable path; "" when there is none.
using PathLookup = std::function<std::string(std::string_view name)>;

// The first "<dir>/<name>" over the ':'-separated `path_value` that is an executable regular
// file; "" if none. Empty entries are skipped (they would mean the current directory).
std::string FindExecutable(std::string_view name, std::string_view path_value);

// A lookup over a fixed PATH value (FindExecutable).
PathLookup PathLookupIn(std::string path_value);

// The gateway shell from $SHELL (`shell_env`, may be null), as OpenClaw's getShellConfig: $SHELL
// trimmed; if its basename is "fish", the first `bash` from `lookup`, else the first `sh`, else
// $SHELL itself; with no $SHELL, `sh` from `lookup`, else "/bin/sh". A bare name in $SHELL is
// resolved through `lookup` when it can be (the executor runs the path with execve).
std::string SelectShell(const char* shell_env, const PathLookup& lookup);

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

// ProbeLoginPath once per process: the first call probes, every later call returns that first
// result (value or error, as OpenClaw caches a failed probe too), whatever its arguments.
// Thread-safe; concurrent first calls probe once.
Result<std::string> CachedLoginPath(const std::string& shell_env, std::chrono::milliseconds timeout,
                                    const std::map<std::string, std::string>& env);

// CachedLoginPath with a second level on disk, for one-shot CLI calls that would otherwise start
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

// The gateway PATH: `prepend_entries` first (each trimmed; empty ones dropped), then the login
// shell's entries, then `base_path`'s, each entry kept once at its first position (OpenClaw's
// applyShellPath then applyPathPrepend, reference §1.2 step 11-12). Entries are trimmed and empty
// entries dropped whenever something is merged; with nothing to merge (empty login PATH and no
// prepend entries) `base_path` is returned unchanged.
std::string MergePath(std::string_view login_path, std::string_view base_path,
                      const std::vector<std::string>& prepend_entries);

}  // namespace sandrun::exec

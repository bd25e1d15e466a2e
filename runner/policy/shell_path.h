// Which shell a gateway exec runs and the PATH it runs with (OpenClaw's getShellConfig and
// shell-env; reference §3.1-3.2): policy, pure functions the gate puts the results of in the
// Plan. The login shell's PATH comes from the host back-end's probe
// (sandbox/executors/host/login_path.h).
//
// Pattern of use (the gate):
//   std::string shell = SelectShell(std::getenv("SHELL"), PathLookupIn(runner_path));
//   env["PATH"] = MergePath(login_path, runner_path_or_minimal, config.path_prepend);
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sandrun::policy {

// Resolves a bare program name ("bash") to an executable path; "" when there is none.
using PathLookup = std::function<std::string(std::string_view name)>;

// A lookup over a fixed PATH value (exec::FindExecutable).
PathLookup PathLookupIn(std::string path_value);

// The gateway shell from $SHELL (`shell_env`, may be null), as OpenClaw's getShellConfig: $SHELL
// trimmed; if its basename is "fish", the first `bash` from `lookup`, else the first `sh`, else
// $SHELL itself; with no $SHELL, `sh` from `lookup`, else "/bin/sh". A bare name in $SHELL is
// resolved through `lookup` when it can be (the executor runs the path with execve).
std::string SelectShell(const char* shell_env, const PathLookup& lookup);

// The gateway PATH: `prepend_entries` first (each trimmed; empty ones dropped), then the login
// shell's entries, then `base_path`'s, each entry kept once at its first position (OpenClaw's
// applyShellPath then applyPathPrepend, reference §1.2 step 11-12). Entries are trimmed and empty
// entries dropped whenever something is merged; with nothing to merge (empty login PATH and no
// prepend entries) `base_path` is returned unchanged.
std::string MergePath(std::string_view login_path, std::string_view base_path,
                      const std::vector<std::string>& prepend_entries);

}  // namespace sandrun::policy

// Running a helper program to completion (image recipes and similar tools; not the hardened
// command path, which lives in sandbox/harden).
#pragma once

#include <string>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun {

struct RunOptions {
  bool stdout_to_stderr = false;      // keep our stdout clean for machine-readable output
  std::vector<std::string> env = {};  // KEY=VALUE entries set on top of this process's environment
};

// Spawns argv[0] (searched in PATH) and waits. Returns the exit status, or 128 + signal.
Result<int> RunToCompletion(const std::vector<std::string>& argv, const RunOptions& options = {});

}  // namespace sandrun

// The state directory: $SANDRUN_HOME, default ~/.sandrun. Holds config.json, approvals,
// sessions, the instance id and sandbox workspaces; private to its owner (0700).
#pragma once

#include <string>

#include "sandbox/base/result.h"

namespace sandrun::config {

// $SANDRUN_HOME if set and non-empty, else $HOME/.sandrun (the passwd entry's home without HOME).
Result<std::string> StateDirPath();

// Creates the directory (0700) if missing and checks it: a directory, owned by the caller, not
// accessible to group or others. The error says how to fix it.
Status EnsureStateDir(const std::string& path);

// The instance id in <state_dir>/instance-id (16 hex digits), created once with 0600. Two state
// dirs on one engine never share containers because container names carry it.
Result<std::string> LoadOrCreateInstanceId(const std::string& state_dir);

}  // namespace sandrun::config

// Loading seccomp profiles from profiles/seccomp/<name>.json (Docker/OCI format). The same file
// is sent inline to the engine for containers and compiled with libseccomp for host commands.
#pragma once

#include <string>

#include "sandbox/base/result.h"

namespace sandrun::harden {

// $SANDRUN_PROFILES_DIR, else the source tree's profiles/.
std::string DefaultProfilesDir();

// Reads and checks profiles/seccomp/<name>.json (name: [a-z0-9-]+; an object with a string
// defaultAction and a syscalls array) and returns it compacted, ready for
// HostConfig.SecurityOpt "seccomp=<json>". Errors name the file and the reason.
Result<std::string> LoadSeccompProfileJson(const std::string& profiles_dir,
                                           const std::string& name);

}  // namespace sandrun::harden

// Files whose content decides what runs (config, approvals, profiles) must be changeable only by
// the runner's own uid or root: a group- or world-writable config.json would let any local user
// turn another agent's next call into a host command.
//
// Pattern of use:
//   SANDRUN_RETURN_IF_ERROR(CheckTrustedFile(path, "config file"));
//   auto text = ReadFile(path);
#pragma once

#include <string>
#include <string_view>

#include "sandbox/base/result.h"

namespace sandrun {

// Ok when `path` (followed through symlinks) and the directory holding it are owned by this
// process's effective uid or by root, the file is not writable by group or others, and the
// directory is not writable by group or others unless it is sticky (like /tmp). A missing file
// is kNotFound (the caller decides whether that matters). Otherwise kInvalidArgument:
//   "refusing <what> <path>: it is writable by group or others (mode 0664); fix: chmod go-w
//   <path>"  (or the directory, or "it is owned by uid N, not by uid M or root; fix: chown M
//   <path>").
Status CheckTrustedFile(const std::string& path, std::string_view what);

}  // namespace sandrun

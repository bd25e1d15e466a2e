// Finding a program on a PATH value: how the host executor resolves the plan's shell, and what
// the gate's shell selection looks names up with (runner/policy/shell_path.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sandrun::exec {

// The PATH of a daemon started without one (Linux).
inline constexpr std::string_view kMinimalDaemonPath = "/usr/local/bin:/usr/bin:/bin";

// The ':'-separated entries of `path_value`, each trimmed of white space, empty ones dropped
// (an empty entry would mean the current directory).
std::vector<std::string_view> PathEntries(std::string_view path_value);

// The first "<dir>/<name>" over the ':'-separated `path_value` that is an executable regular
// file; "" if none. A name with a '/' is checked as it is.
std::string FindExecutable(std::string_view name, std::string_view path_value);

}  // namespace sandrun::exec

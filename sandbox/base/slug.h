// Scope keys to names: OpenClaw's slug rule for sandbox containers and scratch workspaces.
#pragma once

#include <string>
#include <string_view>

namespace sandrun {

// lowercase; runs of [^a-z0-9._-] become '-'; leading/trailing '-' trimmed; first 32 chars (or
// "session" if nothing is left); then '-' and the first 8 hex digits of sha256(trimmed key).
std::string SlugifyScopeKey(std::string_view key);

}  // namespace sandrun

// Scope keys to names: OpenClaw's slug rule for sandbox containers (readable, not unique), and
// the full hash that is a scope's identity wherever two scopes must never meet (container
// labels, the registry, scratch directories).
#pragma once

#include <string>
#include <string_view>

namespace sandrun {

// lowercase; runs of [^a-z0-9._-] become '-'; leading/trailing '-' trimmed; first 32 chars (or
// "session" if nothing is left); then '-' and the first 8 hex digits of sha256(trimmed key, or
// "session" when it is empty). Readability only: two keys can share a slug.
std::string SlugifyScopeKey(std::string_view key);

// The identity of a scope: sha256(key) in hex, all 64 digits (the key exactly as given).
std::string ScopeKeyHash(std::string_view key);

// The name of a scope's own directory: the readable part of its slug, '-', the full
// ScopeKeyHash. Unique per key; never "", "." or "..".
std::string ScopeDirName(std::string_view key);

}  // namespace sandrun

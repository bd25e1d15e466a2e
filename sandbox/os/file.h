// Small file helpers with errors as values.
#pragma once

#include <string>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun {

// Reads a whole file (at most `max_bytes`).
Result<std::string> ReadFile(const std::string& path, size_t max_bytes = 64u << 20);

// Regular files below `dir`, recursively, as paths relative to `dir`, sorted.
Result<std::vector<std::string>> ListFilesRecursive(const std::string& dir);

// Creates `path` (and parents) with `mode` if missing; if it exists it must be a directory.
Status EnsureDirectory(const std::string& path, unsigned mode);

}  // namespace sandrun

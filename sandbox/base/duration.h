// Durations as people type them on the command line: "30s", "15m", "12h", "7d", "2w".
#pragma once

#include <cstdint>
#include <string_view>

#include "sandbox/base/result.h"

namespace sandrun {

// One positive number and one unit (s, m, h, d, w) into milliseconds; anything else (no unit,
// a fraction, a sign, spaces, an overflow) is kInvalidArgument naming the text.
Result<int64_t> ParseDurationMs(std::string_view text);

}  // namespace sandrun

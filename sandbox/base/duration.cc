#include "sandbox/base/duration.h"

#include <limits>

namespace sandrun {

Result<int64_t> ParseDurationMs(std::string_view text) {
  auto bad = [&] {
    return Error(ErrorCode::kInvalidArgument,
                 "invalid duration \"" + std::string(text.substr(0, 40)) +
                     "\": a number and one unit of s, m, h, d or w (e.g. 30d)");
  };
  if (text.size() < 2 || text.size() > 12) return bad();
  int64_t unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1000;
      break;
    case 'm':
      unit = 60 * 1000;
      break;
    case 'h':
      unit = 3600 * 1000;
      break;
    case 'd':
      unit = 86400 * 1000;
      break;
    case 'w':
      unit = 7 * 86400 * 1000;
      break;
    default:
      return bad();
  }
  int64_t n = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9') return bad();
    n = n * 10 + (c - '0');
  }
  if (n <= 0 || n > std::numeric_limits<int64_t>::max() / unit / 1000) return bad();
  return n * unit;
}

}  // namespace sandrun

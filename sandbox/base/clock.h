// Wall-clock time as the files and results carry it: milliseconds since the Unix epoch.
#pragma once

#include <chrono>
#include <cstdint>

namespace sandrun {

inline int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace sandrun

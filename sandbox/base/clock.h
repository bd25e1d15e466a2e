// Wall-clock time as the files and results carry it: milliseconds since the Unix epoch.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>

namespace sandrun {

inline int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "2026-12-02T02:03:32Z" (UTC, seconds); "-" for 0 (never / unset).
inline std::string UtcTimestamp(int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace sandrun

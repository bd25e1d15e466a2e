// Timing helpers shared by the C++ benchmarks: wall time in ms, this process's CPU time, and
// a percentile of samples.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace sandrun::bench {

using Clock = std::chrono::steady_clock;

inline double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// User + system CPU time of this process so far, in ms.
inline double CpuMs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000.0) +
         (static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000.0);
}

// The `p` (0..1) percentile of `v` (nearest rank below); 0 for no samples.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace sandrun::bench

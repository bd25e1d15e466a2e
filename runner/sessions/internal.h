// What sessions share with their manager (not part of the public API).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "runner/sessions/manager.h"

namespace sandrun::sessions::internal {

struct Hub {
  Options options;       // normalised: clock set, TTL clamped
  std::string root;      // <state_dir>/sessions
  std::mutex events_mu;  // guards `events`
  std::function<void(const Event&)> events;
  // maxLogBytes by tenant, and the manager's enforcement (called with log_budget_mu held, so the
  // manager's destructor, which unsets it under the lock, never races a call).
  std::mutex log_budget_mu;
  std::map<std::string, uint64_t> log_budgets;
  std::function<void(const std::string& tenant, uint64_t budget)> enforce_log_budget;
  // After a session of `tenant` logged output (no session lock held).
  void LogGrew(const std::string& tenant);

  int64_t Now() const { return options.now_ms(); }
  void Emit(const Event& event);
};

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or "" if the process is
// gone: with the pid it names one process for good.
std::string ProcessStartTime(int64_t pid);

inline constexpr const char* kMetaFile = "meta.json";
inline constexpr const char* kStatusFile = "status.json";
inline constexpr const char* kLogFile = "output.log";

}  // namespace sandrun::sessions::internal

// The runtime's Prometheus counters by tenant (GET /metrics, issue 14): tool calls by decision,
// the exec latency histogram, quota rejections; the gauges (running sessions, sandbox containers,
// pending approvals) are read by the runtime at scrape time and passed in. Thread-safe.
//
// Pattern of use (runtime.cc):
//   metrics.Call(tenant, "exec", "allow"); metrics.ExecLatency(tenant, seconds);
//   std::string text = metrics.Text(TenantFilter::Tenant("acme"), gauges);
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "runner/api/tenant_filter.h"

namespace sandrun::api {

class RuntimeMetrics {
 public:
  // Upper bounds (seconds) of the exec latency histogram's buckets (then +Inf).
  static constexpr std::array<double, 11> kLatencyBuckets = {0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                                             2.5,  5,    10,  30,   60};

  // `decision`: allow | deny | ask | error.
  void Call(const std::string& tenant, const std::string& tool, const std::string& decision);
  // An exec call that ran (its whole call, foreground or until it became a session).
  void ExecLatency(const std::string& tenant, double seconds);
  void QuotaRejection(const std::string& tenant, const std::string& quota);

  struct Gauges {
    std::map<std::string, size_t> running_sessions;   // by tenant
    std::map<std::string, size_t> pending_approvals;  // by tenant
    // by tenant; nullopt when the engine could not be asked (the series is left out)
    std::optional<std::map<std::string, size_t>> containers;
    // The server-wide series of before (sandrun_requests_total etc.), for the all filter only:
    // they count every tenant.
    uint64_t requests = 0, refused = 0;
    size_t sessions = 0;
  };
  // Prometheus text format 0.0.4: every series with a tenant label, the filter's tenants only
  // (one tenant: its gauges even when zero).
  std::string Text(const TenantFilter& filter, const Gauges& gauges) const;

 private:
  struct Histogram {
    std::array<uint64_t, kLatencyBuckets.size()> buckets{};  // non-cumulative
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> calls_;  // tenant,tool,d
  std::map<std::string, Histogram> latency_;
  std::map<std::pair<std::string, std::string>, uint64_t> quota_rejections_;  // tenant, quota
};

}  // namespace sandrun::api

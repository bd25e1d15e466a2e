#include "runner/api/metrics.h"

#include <cstdio>
#include <set>

namespace sandrun::api {
namespace {

// A label value: backslash, quote and newline escaped (tenant ids never need it; be safe).
std::string Label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void Header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

void RuntimeMetrics::Call(const std::string& tenant, const std::string& tool,
                          const std::string& decision) {
  std::lock_guard<std::mutex> lock(mu_);
  ++calls_[{tenant, tool, decision}];
}

void RuntimeMetrics::ExecLatency(const std::string& tenant, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  Histogram& h = latency_[tenant];
  ++h.count;
  h.sum += seconds;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (seconds <= kLatencyBuckets[i]) {
      ++h.buckets[i];
      break;
    }
  }
}

void RuntimeMetrics::QuotaRejection(const std::string& tenant, const std::string& quota) {
  std::lock_guard<std::mutex> lock(mu_);
  ++quota_rejections_[{tenant, quota}];
}

std::string RuntimeMetrics::Text(const TenantFilter& filter, const Gauges& gauges) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  if (filter.all) {
    Header(out, "sandrun_requests_total", "counter", "Tool calls handled.");
    out += "sandrun_requests_total " + std::to_string(gauges.requests) + "\n";
    Header(out, "sandrun_refused_total", "counter", "Tool calls refused before anything ran.");
    out += "sandrun_refused_total " + std::to_string(gauges.refused) + "\n";
    Header(out, "sandrun_sessions", "gauge", "Background sessions held.");
    out += "sandrun_sessions " + std::to_string(gauges.sessions) + "\n";
  }

  Header(out, "sandrun_tool_calls_total", "counter",
         "Tool calls by tenant, tool and decision (allow, deny, ask, error).");
  for (const auto& [key, n] : calls_) {
    const auto& [tenant, tool, decision] = key;
    if (!filter.Takes(tenant)) continue;
    out += "sandrun_tool_calls_total{tenant=\"" + Label(tenant) + "\",tool=\"" + Label(tool) +
           "\",decision=\"" + Label(decision) + "\"} " + std::to_string(n) + "\n";
  }

  Header(out, "sandrun_exec_duration_seconds", "histogram",
         "Exec calls that ran: seconds until they ended or became a background session.");
  for (const auto& [tenant, h] : latency_) {
    if (!filter.Takes(tenant)) continue;
    const std::string t = "tenant=\"" + Label(tenant) + "\"";
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
      cumulative += h.buckets[i];
      out += "sandrun_exec_duration_seconds_bucket{" + t + ",le=\"" + Number(kLatencyBuckets[i]) +
             "\"} " + std::to_string(cumulative) + "\n";
    }
    out += "sandrun_exec_duration_seconds_bucket{" + t + ",le=\"+Inf\"} " +
           std::to_string(h.count) + "\n";
    out += "sandrun_exec_duration_seconds_sum{" + t + "} " + Number(h.sum) + "\n";
    out += "sandrun_exec_duration_seconds_count{" + t + "} " + std::to_string(h.count) + "\n";
  }

  Header(out, "sandrun_quota_rejections_total", "counter",
         "Calls refused with 429 quota-exceeded, by tenant and quota.");
  for (const auto& [key, n] : quota_rejections_) {
    if (!filter.Takes(key.first)) continue;
    out += "sandrun_quota_rejections_total{tenant=\"" + Label(key.first) + "\",quota=\"" +
           Label(key.second) + "\"} " + std::to_string(n) + "\n";
  }

  auto gauge = [&](const char* name, const char* help, const std::map<std::string, size_t>& by) {
    Header(out, name, "gauge", help);
    std::map<std::string, size_t> shown;
    if (!filter.all) shown[filter.tenant] = 0;  // the caller's own series, even at zero
    for (const auto& [tenant, n] : by) {
      if (filter.Takes(tenant)) shown[tenant] = n;
    }
    for (const auto& [tenant, n] : shown) {
      out += std::string(name) + "{tenant=\"" + Label(tenant) + "\"} " + std::to_string(n) + "\n";
    }
  };
  gauge("sandrun_running_sessions", "Background sessions still running.", gauges.running_sessions);
  gauge("sandrun_pending_approvals", "Approvals waiting for an operator.",
        gauges.pending_approvals);
  if (gauges.containers) {
    gauge("sandrun_sandbox_containers", "Sandbox containers of this server.", *gauges.containers);
  }
  return out;
}

}  // namespace sandrun::api

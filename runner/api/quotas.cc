#include "runner/api/quotas.h"

#include <chrono>

namespace sandrun::api {
namespace {

constexpr int64_t kWindowMs = 60 * 1000;
// A slot held by a call or a session has no known release time: the client retries soon.
constexpr int kBusyRetrySeconds = 1;

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

QuotaRefusal Over(const std::string& tenant, const char* quota, int64_t limit, int retry_after,
                  const std::string& what) {
  return {Error::Refusal("quota-exceeded", "tenant " + tenant + " is over its quota " + quota +
                                               " (" + std::to_string(limit) + "): " + what +
                                               "; nothing was run"),
          retry_after, quota};
}

}  // namespace

Quotas::Quotas(NowFn now_ms) : now_ms_(now_ms ? std::move(now_ms) : NowFn(SteadyNowMs)) {}

void Quotas::SetLimits(std::map<std::string, config::TenantQuotas> limits) {
  std::lock_guard<std::mutex> lock(mu_);
  limits.erase("");  // the local server's own tenant has none
  limits_ = std::move(limits);
}

config::TenantQuotas Quotas::LimitsFor(const std::string& tenant) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = limits_.find(tenant);
  return it == limits_.end() ? config::TenantQuotas{} : it->second;
}

std::optional<QuotaRefusal> Quotas::AdmitCall(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = limits_.find(tenant);
  if (it == limits_.end() || it->second.requests_per_minute <= 0) return std::nullopt;
  const int64_t limit = it->second.requests_per_minute;
  const int64_t now = now_ms_();
  std::deque<int64_t>& calls = state_[tenant].calls;
  while (!calls.empty() && calls.front() <= now - kWindowMs) calls.pop_front();
  if (static_cast<int64_t>(calls.size()) >= limit) {
    // The window frees a slot when its oldest call leaves it (rounded up: never too early).
    const int64_t wait_ms = calls.front() + kWindowMs - now;
    const int retry = static_cast<int>(std::max<int64_t>(1, (wait_ms + 999) / 1000));
    return Over(tenant, "requestsPerMinute", limit, retry,
                std::to_string(calls.size()) + " calls in the last minute");
  }
  calls.push_back(now);
  return std::nullopt;
}

std::variant<Quotas::ExecSlot, QuotaRefusal> Quotas::AdmitExec(
    const std::string& tenant, bool may_background,
    const std::function<TenantSessionUsage()>& usage) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = limits_.find(tenant);
  if (it != limits_.end() &&
      (it->second.max_concurrent_execs > 0 || (may_background && it->second.max_sessions > 0))) {
    const config::TenantQuotas& q = it->second;
    const TenantState& st = state_[tenant];
    const TenantSessionUsage used = usage ? usage() : TenantSessionUsage{};
    const size_t execs = st.execs + used.running;
    if (q.max_concurrent_execs > 0 && static_cast<int64_t>(execs) >= q.max_concurrent_execs) {
      return Over(tenant, "maxConcurrentExecs", q.max_concurrent_execs, kBusyRetrySeconds,
                  std::to_string(st.execs) + " exec calls in progress and " +
                      std::to_string(used.running) + " background sessions running");
    }
    const size_t sessions = st.may_background + used.held;
    if (may_background && q.max_sessions > 0 && static_cast<int64_t>(sessions) >= q.max_sessions) {
      return Over(tenant, "maxSessions", q.max_sessions, kBusyRetrySeconds,
                  std::to_string(used.held) + " background sessions held and " +
                      std::to_string(st.may_background) +
                      " exec calls in progress that may become one (remove finished ones with "
                      "process remove)");
    }
  }
  TenantState& st = state_[tenant];
  ++st.execs;
  if (may_background) ++st.may_background;
  return ExecSlot(this, tenant, may_background);
}

void Quotas::Released(const std::string& tenant, bool may_background) {
  std::lock_guard<std::mutex> lock(mu_);
  TenantState& st = state_[tenant];
  if (st.execs > 0) --st.execs;
  if (may_background && st.may_background > 0) --st.may_background;
}

}  // namespace sandrun::api

// The per-tenant quotas of the runtime (issue 14, tenants.<id>.quotas): admission of a call
// before anything runs. A call over a quota gets a quota-exceeded refusal with a Retry-After;
// the caller (the runtime) audits and counts it and runs nothing.
//
//   requestsPerMinute   every tool call of the tenant (exec, process, apply_patch, policy check):
//                       a sliding 60 s window; Retry-After = when its oldest call leaves it.
//   maxConcurrentExecs  exec calls of the tenant in progress (admitted, not yet returned) plus its
//                       background sessions still running.
//   maxSessions         background sessions the tenant holds (running or finished, not removed)
//                       plus its exec calls in progress that may become one (every server exec
//                       with a yield window): a run cannot be refused once it started, so a call
//                       is counted from its admission (a conservative count, never over).
// Tenant "" (the local server) has no quotas: "" is not a tenant id a config can name.
// Thread-safe.
//
// Pattern of use (runtime.cc):
//   quotas.SetLimits(limits_from_config);                 // at Start and on each Reload
//   if (auto over = quotas.AdmitCall(tenant)) return Refuse(*over);
//   auto slot = quotas.AdmitExec(tenant, may_background, [&] { return manager.UsageOf(tenant); });
//   if (auto* over = std::get_if<QuotaRefusal>(&slot)) return Refuse(*over);
//   ... run; the ExecSlot releases the tenant's in-flight count when it goes out of scope ...
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "runner/config/config.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

struct QuotaRefusal {
  Error error;  // wire quota-exceeded, the message names the quota and its limit
  int retry_after_seconds = 1;
  std::string quota;  // "requestsPerMinute", "maxConcurrentExecs", "maxSessions" (metrics label)
};

// What the session manager holds of a tenant, for the session quotas.
struct TenantSessionUsage {
  size_t held = 0;     // background sessions not removed
  size_t running = 0;  // of those, still running
};

class Quotas {
 public:
  using NowFn = std::function<int64_t()>;  // monotonic milliseconds (the seam for tests)
  explicit Quotas(NowFn now_ms = nullptr);

  // The limits by tenant id (a tenant not named has none).
  void SetLimits(std::map<std::string, config::TenantQuotas> limits);
  config::TenantQuotas LimitsFor(const std::string& tenant) const;

  // requestsPerMinute: records the call when admitted.
  std::optional<QuotaRefusal> AdmitCall(const std::string& tenant);

  // Holds one exec call of a tenant in progress; released when destroyed.
  class ExecSlot {
   public:
    ExecSlot(const ExecSlot&) = delete;
    ExecSlot& operator=(const ExecSlot&) = delete;
    ExecSlot(ExecSlot&& other) noexcept
        : quotas_(std::exchange(other.quotas_, nullptr)),
          tenant_(std::move(other.tenant_)),
          may_background_(other.may_background_) {}
    ExecSlot& operator=(ExecSlot&&) = delete;
    ~ExecSlot() {
      if (quotas_ != nullptr) quotas_->Released(tenant_, may_background_);
    }

   private:
    friend class Quotas;
    ExecSlot(Quotas* quotas, std::string tenant, bool may_background)
        : quotas_(quotas), tenant_(std::move(tenant)), may_background_(may_background) {}
    Quotas* quotas_;  // nullptr once moved from
    std::string tenant_;
    bool may_background_ = false;
  };
  // maxConcurrentExecs and maxSessions for one exec call. `may_background`: the call can become
  // a background session (counted against maxSessions while in progress). `usage` is asked
  // under this object's lock, so concurrent admissions never both take the last slot.
  std::variant<ExecSlot, QuotaRefusal> AdmitExec(const std::string& tenant, bool may_background,
                                                 const std::function<TenantSessionUsage()>& usage);

 private:
  struct TenantState {
    std::deque<int64_t> calls;  // admission times inside the window (at most the limit)
    size_t execs = 0;           // exec calls in progress
    size_t may_background = 0;  // of those, ones that may become a session
  };
  void Released(const std::string& tenant, bool may_background);

  NowFn now_ms_;
  mutable std::mutex mu_;
  std::map<std::string, config::TenantQuotas> limits_;
  std::map<std::string, TenantState> state_;
};

}  // namespace sandrun::api

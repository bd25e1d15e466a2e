#include "sandbox/executors/docker/warm_pool.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "sandbox/executors/docker/sandbox_registry.h"

namespace sandrun::exec {
namespace {

constexpr int64_t kRetryAfterFailureMs = 30 * 1000;
constexpr int64_t kForgetAfterMs = 60 * 60 * 1000;
constexpr size_t kMaxKindsPerTenant = 4;
constexpr int64_t kMaxReadyAgeMs = 60 * 60 * 1000;

int64_t TargetOf(const PoolSettings& s, size_t recent_claims) {
  const int64_t most = std::max(s.min, s.max);
  return std::clamp(static_cast<int64_t>(recent_claims), s.min, most);
}

}  // namespace

WarmPool::WarmPool(Maker make, Remover remove)
    : make_(std::move(make)), remove_(std::move(remove)) {}

WarmPool::~WarmPool() { Drain(); }

std::optional<PooledContainer> WarmPool::Take(const std::string& key,
                                              const SandboxSpec& pool_spec) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return std::nullopt;
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  const int64_t now = NowMs();
  if (pools_.count(key) == 0) {
    // A tenant's calls can ask for many kinds (images, limits): its pools are bounded, the
    // kind asked for least recently is dropped (its containers go with the next refill pass).
    std::vector<std::map<std::string, Pool>::iterator> same_tenant;
    for (auto it = pools_.begin(); it != pools_.end(); ++it) {
      if (it->second.spec.tenant == pool_spec.tenant && it->second.spec.pool.enabled()) {
        same_tenant.push_back(it);
      }
    }
    if (same_tenant.size() >= kMaxKindsPerTenant) {
      auto oldest = *std::min_element(same_tenant.begin(), same_tenant.end(), [](auto a, auto b) {
        return a->second.asked_at_ms < b->second.asked_at_ms;
      });
      oldest->second.spec.pool = PoolSettings{};  // not enabled: drained by Loop
    }
  }
  Pool& pool = pools_[key];
  pool.spec = pool_spec;  // the newest settings (min, max, TTL) of this kind
  pool.asked_at_ms = now;
  pool.claimed_at.push_back(now);
  wake_.notify_all();
  if (pool.ready.empty()) return std::nullopt;
  PooledContainer taken = std::move(pool.ready.front());
  pool.ready.pop_front();
  return taken;
}

void WarmPool::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const int64_t now = NowMs();
    std::vector<std::pair<SandboxSpec, PooledContainer>> surplus;
    std::string make_key;
    for (auto it = pools_.begin(); it != pools_.end();) {
      Pool& pool = it->second;
      const PoolSettings& s = pool.spec.pool;
      while (!pool.claimed_at.empty() && now - pool.claimed_at.front() > s.idle_ttl_ms) {
        pool.claimed_at.pop_front();
      }
      const bool forgotten = now - pool.asked_at_ms > kForgetAfterMs || !s.enabled();
      const int64_t target = forgotten ? 0 : TargetOf(s, pool.claimed_at.size());
      while (static_cast<int64_t>(pool.ready.size()) > target &&
             (forgotten || now - pool.ready.front().ready_at_ms > s.idle_ttl_ms)) {
        surplus.emplace_back(pool.spec, std::move(pool.ready.front()));
        pool.ready.pop_front();
      }
      // None waits longer than an hour (the image or the agent may have been updated): the
      // oldest goes, and is made again below.
      if (!pool.ready.empty() && now - pool.ready.front().ready_at_ms > kMaxReadyAgeMs) {
        surplus.emplace_back(pool.spec, std::move(pool.ready.front()));
        pool.ready.pop_front();
      }
      if (forgotten && pool.ready.empty() && !pool.making) {
        it = pools_.erase(it);
        continue;
      }
      // Round robin: of the pools below target, the one served longest ago (one tenant's
      // stream of new scopes does not starve the others' pools).
      if (!pool.making && now >= pool.retry_at_ms &&
          static_cast<int64_t>(pool.ready.size()) < target &&
          (make_key.empty() || pool.served_at_ms < pools_[make_key].served_at_ms)) {
        make_key = it->first;
      }
      ++it;
    }
    if (surplus.empty() && make_key.empty()) {
      wake_.wait_for(lock, std::chrono::seconds(1));
      continue;
    }
    SandboxSpec spec;
    if (!make_key.empty()) {
      pools_[make_key].making = true;
      pools_[make_key].served_at_ms = now;
      spec = pools_[make_key].spec;
    }
    lock.unlock();
    for (const auto& [pool_spec, c] : surplus) remove_(pool_spec, c);
    std::optional<Result<PooledContainer>> made;
    if (!make_key.empty()) made.emplace(make_(spec, make_key));
    lock.lock();
    if (!made) continue;
    auto it = pools_.find(make_key);
    if (it == pools_.end() || stopping_) {
      // Drained (or forgotten) meanwhile: it goes at once.
      if (*made) {
        lock.unlock();
        remove_(spec, **made);
        lock.lock();
      }
      if (it != pools_.end()) it->second.making = false;
      continue;
    }
    it->second.making = false;
    if (*made) {
      it->second.ready.push_back(std::move(**made));
      last_error_.clear();
    } else {
      it->second.retry_at_ms = NowMs() + kRetryAfterFailureMs;
      last_error_ = made->error().ToString();
    }
  }
}

void WarmPool::Drain() {
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    wake_.notify_all();
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
  std::map<std::string, Pool> pools;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pools.swap(pools_);
  }
  for (auto& [key, pool] : pools) {
    for (const PooledContainer& c : pool.ready) remove_(pool.spec, c);
  }
}

WarmPool::Stats WarmPool::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  s.pools = pools_.size();
  for (const auto& [key, pool] : pools_) {
    s.ready += pool.ready.size();
    for (const PooledContainer& c : pool.ready) s.ready_ids.insert(c.id);
  }
  s.last_error = last_error_;
  return s;
}

}  // namespace sandrun::exec

// The warm pool's inventory (warm_pool.h) with a maker and remover that only count: it fills to
// min once a kind was asked for, grows with demand up to max, trims back after the TTL, retries
// a failing maker only later, bounds a tenant's kinds, and drains everything.
#include "sandbox/executors/docker/warm_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "sandbox/executors/docker/sandbox_registry.h"

namespace sandrun::exec {
namespace {

class WarmPoolUnit : public ::testing::Test {
 protected:
  WarmPool::Maker Maker() {
    return [this](const SandboxSpec& spec, const std::string& key) -> Result<PooledContainer> {
      std::lock_guard<std::mutex> lock(mu_);
      ++made_calls_;
      if (fail_) return Error(ErrorCode::kIo, "engine down");
      const std::string id = spec.tenant + "/" + key + "/" + std::to_string(++counter_);
      live_.insert(id);
      return PooledContainer{id, id, "", NowMs()};
    };
  }
  WarmPool::Remover Remover() {
    return [this](const SandboxSpec&, const PooledContainer& c) {
      std::lock_guard<std::mutex> lock(mu_);
      live_.erase(c.id);
      removed_.insert(c.id);
    };
  }
  static SandboxSpec Kind(int64_t min, int64_t max, int64_t ttl_ms = 60000,
                          const std::string& tenant = "") {
    SandboxSpec spec;
    spec.tenant = tenant;
    spec.pool = PoolSettings{min, max, ttl_ms};
    return spec;
  }
  // Waits up to 10 s for `done`.
  bool Eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 1000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  size_t Live() {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.size();
  }

  std::mutex mu_;
  std::set<std::string> live_, removed_;
  int counter_ = 0;
  int made_calls_ = 0;
  bool fail_ = false;
};

TEST_F(WarmPoolUnit, FillsToMinOnceAskedAndHandsEachContainerOutOnce) {
  WarmPool pool(Maker(), Remover());
  EXPECT_EQ(pool.stats().ready, 0u);
  EXPECT_FALSE(pool.Take("k", Kind(2, 0)));  // learnt now; nothing was ready
  ASSERT_TRUE(Eventually([&] { return pool.stats().ready == 2; }));
  auto a = pool.Take("k", Kind(2, 0));
  auto b = pool.Take("k", Kind(2, 0));
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->id, b->id);
  // Another kind is another pool: nothing of k's.
  auto other = pool.Take("other", Kind(2, 0));
  EXPECT_TRUE(!other || other->id.find("/k/") == std::string::npos);
  ASSERT_TRUE(Eventually([&] { return pool.stats().ready == 4; }));
  EXPECT_EQ(pool.stats().pools, 2u);
}

TEST_F(WarmPoolUnit, GrowsWithDemandUpToMaxAndTrimsBackAfterTheTtl) {
  WarmPool pool(Maker(), Remover());
  const SandboxSpec kind = Kind(1, 3, /*ttl_ms=*/1500);
  // 5 claims within the TTL (the refiller may already hand some of them a container).
  std::set<std::string> taken;
  for (int i = 0; i < 5; ++i) {
    if (auto c = pool.Take("k", kind)) taken.insert(c->id);
  }
  ASSERT_TRUE(Eventually([&] { return pool.stats().ready == 3; }));  // grown to max
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LE(pool.stats().ready, 3u);  // never beyond it
  // The claims age out: back to min, the surplus removed (what was handed out is not the
  // pool's any more).
  ASSERT_TRUE(Eventually([&] { return pool.stats().ready == 1; }));
  EXPECT_TRUE(Eventually([&] { return Live() == taken.size() + 1; }))
      << Live() << " live, " << taken.size() << " handed out";
}

TEST_F(WarmPoolUnit, AFailingMakerIsRetriedLaterNotInALoop) {
  fail_ = true;
  WarmPool pool(Maker(), Remover());
  (void)pool.Take("k", Kind(2, 0));
  ASSERT_TRUE(Eventually([&] { return !pool.stats().last_error.empty(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(made_calls_, 1);
  EXPECT_NE(pool.stats().last_error.find("engine down"), std::string::npos);
}

TEST_F(WarmPoolUnit, ATenantHasAtMostFourKindsTheOldestIsDropped) {
  WarmPool pool(Maker(), Remover());
  for (int k = 0; k < 4; ++k) {
    (void)pool.Take("acme-" + std::to_string(k), Kind(1, 0, 60000, "acme"));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  (void)pool.Take("beta-0", Kind(1, 0, 60000, "beta"));  // another tenant's: not counted
  ASSERT_TRUE(Eventually([&] { return pool.stats().ready == 5; }));
  (void)pool.Take("acme-4", Kind(1, 0, 60000, "acme"));
  // acme-0 (asked for first) goes; the others and beta's stay.
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu_);
    return removed_.size() == 1 && removed_.begin()->find("/acme-0/") != std::string::npos;
  }));
  ASSERT_TRUE(Eventually([&] { return pool.stats().ready == 5; }));
  EXPECT_EQ(pool.stats().pools, 5u);
}

TEST_F(WarmPoolUnit, DrainRemovesEveryReadyContainerAndTakesNoMore) {
  WarmPool pool(Maker(), Remover());
  (void)pool.Take("k", Kind(3, 0));
  ASSERT_TRUE(Eventually([&] { return pool.stats().ready == 3; }));
  pool.Drain();
  EXPECT_EQ(Live(), 0u);
  EXPECT_FALSE(pool.Take("k", Kind(3, 0)));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(Live(), 0u);
}

}  // namespace
}  // namespace sandrun::exec

#include "sandbox/executors/registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace sandrun::exec {
namespace {

// Runs nothing: the registry only hands executors out, it never calls them.
class NullExecutor : public Executor {
 public:
  Result<ExecOutcome> Run(const Plan&, const LiveSink&, const CancelToken*) override {
    return Error(ErrorCode::kInternal, "not used");
  }
  Result<std::unique_ptr<RunningProcess>> Start(const Plan&, LiveSink) override {
    return Error(ErrorCode::kInternal, "not used");
  }
};

ExecutorRegistry::Factory Counting(std::atomic<int>* made) {
  return [made]() -> Result<std::shared_ptr<Executor>> {
    ++*made;
    return std::shared_ptr<Executor>(std::make_shared<NullExecutor>());
  };
}

TEST(ExecutorRegistryTest, MakesTheExecutorOnFirstUseThenSharesIt) {
  ExecutorRegistry registry;
  std::atomic<int> made{0};
  registry.Register(Target::kSandbox, Counting(&made));
  EXPECT_EQ(made.load(), 0) << "registering must not create the executor (lazy, as the engine)";
  auto first = registry.For(Target::kSandbox);
  ASSERT_TRUE(first) << first.error().ToString();
  auto second = registry.For(Target::kSandbox);
  ASSERT_TRUE(second);
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ(made.load(), 1);
}

TEST(ExecutorRegistryTest, ConcurrentFirstCallsMakeOneExecutor) {
  ExecutorRegistry registry;
  std::atomic<int> made{0};
  registry.Register(Target::kGateway, Counting(&made));
  std::vector<Executor*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] {
      auto e = registry.For(Target::kGateway);
      if (e) seen[i] = e->get();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(made.load(), 1);
  for (Executor* e : seen) EXPECT_EQ(e, seen[0]);
  EXPECT_NE(seen[0], nullptr);
}

TEST(ExecutorRegistryTest, UnregisteredSandboxFailsClosedAsSandboxUnavailable) {
  ExecutorRegistry registry;
  std::atomic<int> made{0};
  registry.Register(Target::kGateway, Counting(&made));  // the other target does not stand in
  auto e = registry.For(Target::kSandbox);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().WireCode(), "sandbox-unavailable");
  EXPECT_EQ(e.error().ToString(), "no executor is registered for sandbox: nothing was run");
  EXPECT_EQ(made.load(), 0);
}

TEST(ExecutorRegistryTest, UnregisteredGatewayIsASpawnFailure) {
  ExecutorRegistry registry;
  auto e = registry.For(Target::kGateway);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().WireCode(), "spawn-failed");
  EXPECT_EQ(e.error().ToString(), "no executor is registered for gateway: nothing was run");
}

TEST(ExecutorRegistryTest, UnknownTargetValueIsNamedAndFailsClosed) {
  ExecutorRegistry registry;
  auto e = registry.For(static_cast<Target>(7));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().ToString(), "no executor is registered for target 7: nothing was run");
  EXPECT_NE(e.error().WireCode(), "internal");
}

TEST(ExecutorRegistryTest, AFailedCreationSaysWhyAndIsRetriedNextTime) {
  ExecutorRegistry registry;
  int calls = 0;
  registry.Register(Target::kSandbox, [&]() -> Result<std::shared_ptr<Executor>> {
    if (++calls == 1) return Error(ErrorCode::kInvalidArgument, "DOCKER_HOST \"ftp://x\" is bad");
    return std::shared_ptr<Executor>(std::make_shared<NullExecutor>());
  });
  auto failed = registry.For(Target::kSandbox);
  ASSERT_FALSE(failed);
  // The engine client's own code (invalid-argument) must not leak out as invalid-request: the
  // call was valid, the sandbox is not there.
  EXPECT_EQ(failed.error().WireCode(), "sandbox-unavailable");
  EXPECT_EQ(failed.error().ToString(),
            "sandbox unavailable, nothing was run: DOCKER_HOST \"ftp://x\" is bad");
  auto retried = registry.For(Target::kSandbox);
  ASSERT_TRUE(retried) << retried.error().ToString();
  EXPECT_EQ(calls, 2);
}

TEST(ExecutorRegistryTest, AFactoryThatMakesNothingIsAnError) {
  ExecutorRegistry registry;
  registry.Register(Target::kSandbox, []() -> Result<std::shared_ptr<Executor>> {
    return std::shared_ptr<Executor>();
  });
  auto e = registry.For(Target::kSandbox);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().WireCode(), "sandbox-unavailable");
}

TEST(ExecutorRegistryTest, RegisterReplacesTheFactoryAndWhatItMade) {
  ExecutorRegistry registry;
  std::atomic<int> first{0}, second{0};
  registry.Register(Target::kGateway, Counting(&first));
  auto a = registry.For(Target::kGateway);
  ASSERT_TRUE(a);
  registry.Register(Target::kGateway, Counting(&second));
  auto b = registry.For(Target::kGateway);
  ASSERT_TRUE(b);
  EXPECT_NE(a->get(), b->get());
  EXPECT_EQ(first.load(), 1);
  EXPECT_EQ(second.load(), 1);
}

TEST(ExecutorRegistryTest, ForKindFindsTheExecutorOfThatKindOfProcess) {
  ExecutorRegistry registry;
  std::atomic<int> made{0};
  registry.Register(Target::kSandbox, Counting(&made));
  Executor* container = registry.ForKind(ProcessKind::kContainer);
  ASSERT_NE(container, nullptr);
  EXPECT_EQ(container, registry.For(Target::kSandbox)->get());
  EXPECT_EQ(registry.ForKind(ProcessKind::kHost), nullptr) << "no gateway executor registered";
}

TEST(ExecutorRegistryTest, TargetNamesAreTheWireHostNames) {
  EXPECT_EQ(TargetName(Target::kSandbox), "sandbox");
  EXPECT_EQ(TargetName(Target::kGateway), "gateway");
  EXPECT_EQ(TargetOfKind(ProcessKind::kContainer), Target::kSandbox);
  EXPECT_EQ(TargetOfKind(ProcessKind::kHost), Target::kGateway);
}

}  // namespace
}  // namespace sandrun::exec

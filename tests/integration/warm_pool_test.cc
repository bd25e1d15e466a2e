// The warm pool (warm_pool.h, container_claim.cc) against the real engine: a new scope claims a
// started container and its workspace arrives through mount propagation with the flags it
// would have had (nosuid,nodev; read-only when asked); a claimed container is its scope's for
// good and its claim record is its identity; tenants never share a pool, and ready containers
// count against no quota until claimed; a ready container that died is not claimed; drain and
// the orphan sweep leave nothing behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "sandbox/base/slug.h"
#include "sandbox/executors/docker/docker_executor.h"
#include "sandbox/os/host_path.h"
#include "tests/support/docker_env.h"
#include "tests/support/mounts.h"
#include "tests/support/process.h"

namespace sandrun::testing {
namespace {

class WarmPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SANDRUN_REQUIRE_DOCKER(c);
    client_ = std::shared_ptr<docker::Client>(std::move(c));
    char tmpl[] = "/tmp/sandrun-e2e-pool-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    state_dir_ = tmpl;
    base_ = TestSandboxSpec("pool", "", state_dir_);
    base_.user = "1000:1000";
    base_.workdir = "/workspace";
    base_.pool.min = 1;
    executor_ = MakeExecutor();
  }

  void TearDown() override {
    if (executor_) executor_->pool().DrainWarmPool();
    RemoveTestSandboxes(client_.get(), base_.instance_id, state_dir_);
  }

  std::shared_ptr<exec::DockerExecutor> MakeExecutor() {
    exec::ExecWrapper agent = exec::CheckBundledBinary(SANDRUN_AGENT_BINARY, "sandbox agent");
    EXPECT_TRUE(agent.usable()) << agent.reason;
    auto executor = std::make_shared<exec::DockerExecutor>(
        client_, exec::CheckExecWrapper(SANDRUN_EXEC_WRAPPER), agent);
    executor->pool().EnableWarmPool();
    return executor;
  }

  // A scope with its own scratch workspace (bounded: an ext4 image, as a root runner has).
  exec::SandboxSpec Scope(const std::string& key, const std::string& tenant = "") {
    exec::SandboxSpec spec = base_;
    spec.tenant = tenant;
    spec.scope_key = tenant.empty() ? key : tenant + "/" + key;
    spec.scratch = true;
    spec.scratch_limit_bytes = int64_t{64} << 20;
    spec.workspace_host_dir = state_dir_ + "/sandboxes/" + ScopeDirName(spec.scope_key);
    return spec;
  }

  exec::EnsuredContainer Ensure(const exec::SandboxSpec& spec) {
    std::vector<std::string> warnings;
    auto ensured = executor_->EnsureContainer(spec, &warnings);
    EXPECT_TRUE(ensured) << ensured.error().ToString();
    return ensured ? *ensured : exec::EnsuredContainer{};
  }

  // The pool's ready containers, by the engine (unclaimed: the registry has no claim).
  std::set<std::string> ReadyIds() {
    std::set<std::string> ids;
    auto list = client_->ListContainers(
        {std::string(exec::kInstanceLabel) + "=" + base_.instance_id, exec::kPoolLabel}, true);
    auto registry = exec::SandboxRegistry(state_dir_).Load().value_or(exec::RegistryState{});
    if (!list) return ids;
    for (const auto& c : *list) {
      if (exec::IsUnclaimedPoolContainer(c.id, c.names.front(), c.labels, registry))
        ids.insert(c.id);
    }
    return ids;
  }

  // Waits (up to 60 s) until the pool has `n` ready containers.
  bool WaitReady(size_t n) {
    for (int i = 0; i < 1200; ++i) {
      if (executor_->pool().WarmPoolStats().ready >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // A pool container as a runner that died left it (its owner is no process), named
  // `name_stem` + this test's pid + `suffix`; its id.
  std::string DeadRunnersContainer(const std::string& name_stem, const std::string& suffix = "") {
    docker::ContainerSpec spec;
    spec.image = base_.image;
    spec.cmd = {"sleep", "infinity"};
    spec.labels = {{exec::kSandboxLabel, "1"},
                   {exec::kInstanceLabel, base_.instance_id},
                   {exec::kPoolLabel, "0123"},
                   {exec::kPoolOwnerLabel, "999999999:1"}};
    spec.host.network_mode = "none";
    auto made = client_->CreateContainer(name_stem + std::to_string(::getpid()) + suffix, spec);
    EXPECT_TRUE(made) << made.error().ToString();
    return made ? *made : std::string();
  }

  exec::ExecOutcome Run(const exec::SandboxSpec& spec, const std::string& command) {
    exec::Plan plan;
    plan.target = exec::Target::kSandbox;
    plan.command = command;
    plan.sandbox = spec;
    plan.cwd = "/workspace";
    plan.timeout_ms = 20000;
    auto o = executor_->Run(plan, nullptr, nullptr);
    EXPECT_TRUE(o) << o.error().ToString();
    return o ? *o : exec::ExecOutcome{};
  }

  std::shared_ptr<docker::Client> client_;
  std::string state_dir_;
  exec::SandboxSpec base_;
  std::shared_ptr<exec::DockerExecutor> executor_;
};

TEST_F(WarmPoolTest, NewScopeClaimsAReadyContainerWithItsOwnWorkspace) {
  const exec::SandboxSpec a = Scope("a"), b = Scope("b");
  exec::EnsuredContainer first = Ensure(a);  // the pool's kind is learnt; nothing was ready
  EXPECT_EQ(first.name, exec::ContainerName(a));
  ASSERT_TRUE(WaitReady(1));
  const std::set<std::string> ready = ReadyIds();
  ASSERT_EQ(ready.size(), 1u);
  exec::EnsuredContainer claimed = Ensure(b);
  EXPECT_EQ(claimed.id, *ready.begin()) << "b did not get the ready container";
  EXPECT_EQ(claimed.name, exec::ContainerName(b));
  EXPECT_FALSE(claimed.agent_dir.empty());

  auto o = Run(b, "id -u; echo from-b > /workspace/mine; grep ' /workspace ' /proc/self/mountinfo");
  EXPECT_EQ(o.exit_code, 0) << o.aggregated;
  EXPECT_EQ(o.aggregated.substr(0, 5), "1000\n") << o.aggregated;
  // The top mount at /workspace is b's scratch image, nosuid,nodev like any workspace.
  const std::string mounts = o.aggregated.substr(o.aggregated.find('\n') + 1);
  const std::string top = mounts.substr(mounts.rfind('\n', mounts.size() - 2) + 1);
  EXPECT_NE(top.find("nosuid"), std::string::npos) << mounts;
  EXPECT_NE(top.find("nodev"), std::string::npos) << mounts;
  EXPECT_NE(top.find("/dev/loop"), std::string::npos) << mounts;
  std::ifstream written(b.workspace_host_dir + "/mine");
  std::string text;
  std::getline(written, text);
  EXPECT_EQ(text, "from-b");
  EXPECT_FALSE(std::filesystem::exists(a.workspace_host_dir + "/mine"));
  EXPECT_EQ(Run(a, "cat /workspace/mine 2>&1 || echo none").aggregated.find("from-b"),
            std::string::npos);

  // Its identity is the claim record: b's, in full.
  auto registry = exec::SandboxRegistry(state_dir_).Load();
  ASSERT_TRUE(registry);
  auto info = client_->InspectContainer(claimed.id);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->labels.count(exec::kScopeLabel), 0u);
  auto owner = exec::ScopeOf(claimed.id, info->labels, *registry);
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->scope_key, "b");
  EXPECT_EQ(owner->reach_hash, exec::ReachHash(b));
}

TEST_F(WarmPoolTest, AClaimedContainerIsItsScopesForGoodAndThePoolRefills) {
  const exec::SandboxSpec a = Scope("a"), b = Scope("b");
  Ensure(a);
  ASSERT_TRUE(WaitReady(1));
  exec::EnsuredContainer claimed = Ensure(b);
  ASSERT_TRUE(WaitReady(1));  // refilled with another one
  EXPECT_EQ(ReadyIds().count(claimed.id), 0u);
  exec::EnsuredContainer again = Ensure(b);
  EXPECT_EQ(again.id, claimed.id);
  EXPECT_FALSE(again.created);
  // A new executor (a restarted server) finds it by its claim record, not the pool.
  executor_->pool().DrainWarmPool();
  executor_ = MakeExecutor();
  EXPECT_EQ(Ensure(b).id, claimed.id);
  // Removing the scope removes the claimed container, its slot and its claim.
  auto removed = executor_->pool().RemoveScope(base_.instance_id, state_dir_, "", "b",
                                               b.workspace_host_dir, false);
  ASSERT_TRUE(removed) << removed.error().ToString();
  EXPECT_EQ(*removed, std::vector<std::string>{claimed.name});
  EXPECT_FALSE(std::filesystem::exists(exec::WorkspaceSlotPath(
      state_dir_, claimed.agent_dir.substr(claimed.agent_dir.rfind('/') + 1))));
  EXPECT_EQ(exec::SandboxRegistry(state_dir_).Load()->claims.count(claimed.id), 0u);
}

TEST_F(WarmPoolTest, AReadOnlyWorkspaceArrivesReadOnly) {
  const std::string ws = state_dir_ + "-ws";
  std::filesystem::create_directories(ws);
  std::ofstream(ws + "/f") << "host file\n";
  auto scope = [&](const std::string& key) {
    exec::SandboxSpec spec = base_;
    spec.scope_key = key;
    spec.workspace_host_dir = ws;
    spec.workspace_read_only = true;
    auto info = InspectHostPath(ws);
    EXPECT_TRUE(info);
    spec.workspace_id = info->id;
    return spec;
  };
  Ensure(scope("ro-a"));
  ASSERT_TRUE(WaitReady(1));
  const std::set<std::string> ready = ReadyIds();
  exec::SandboxSpec b = scope("ro-b");
  EXPECT_EQ(ready.count(Ensure(b).id), 1u);
  auto o = Run(b, "cat /workspace/f; touch /workspace/g 2>&1; echo rc=$?");
  EXPECT_NE(o.aggregated.find("host file"), std::string::npos) << o.aggregated;
  EXPECT_NE(o.aggregated.find("Read-only file system"), std::string::npos) << o.aggregated;
  EXPECT_FALSE(std::filesystem::exists(ws + "/g"));
  std::filesystem::remove_all(ws);
}

TEST_F(WarmPoolTest, TenantsNeverShareAPool) {
  Ensure(Scope("one", "acme"));
  ASSERT_TRUE(WaitReady(1));
  const std::set<std::string> acme_ready = ReadyIds();
  exec::EnsuredContainer beta = Ensure(Scope("one", "beta"));
  EXPECT_EQ(acme_ready.count(beta.id), 0u) << "beta got acme's ready container";
  auto info = client_->InspectContainer(beta.id);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->labels[exec::kTenantLabel], "beta");
  // acme's ready container is still acme's and still unclaimed.
  for (const std::string& id : acme_ready) EXPECT_EQ(ReadyIds().count(id), 1u);
}

TEST_F(WarmPoolTest, ReadyContainersCountAgainstNoQuotaUntilClaimed) {
  base_.pool.min = 2;
  auto scope = [&](const std::string& key) {
    exec::SandboxSpec spec = Scope(key, "acme");
    spec.max_containers = 2;
    return spec;
  };
  Ensure(scope("s1"));
  ASSERT_TRUE(WaitReady(2));  // 3 containers of acme's, 1 of them counted
  const std::set<std::string> ready = ReadyIds();
  EXPECT_EQ(ready.count(Ensure(scope("s2")).id), 1u);
  std::vector<std::string> warnings;
  auto third = executor_->EnsureContainer(scope("s3"), &warnings);
  ASSERT_FALSE(third);
  EXPECT_NE(third.error().ToString().find("already has 2 of its 2"), std::string::npos)
      << third.error().ToString();
  // At its quota the tenant could claim none: the pool is not refilled (the ready one stays).
  bool refused = false;
  for (int i = 0; i < 1200 && !refused; ++i) {
    refused =
        executor_->pool().WarmPoolStats().last_error.find("maxContainers") != std::string::npos;
    if (!refused) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(refused) << executor_->pool().WarmPoolStats().last_error;
  EXPECT_EQ(ReadyIds().size(), 1u);
}

TEST_F(WarmPoolTest, AContainerWithoutAClaimIsNobodysWhateverItsName) {
  Ensure(Scope("a"));
  ASSERT_TRUE(WaitReady(1));
  const std::string id = *ReadyIds().begin();
  // Named as scope c's container behind sandrun's back: no claim record, so it is not c's by
  // its name (c gets its other name; the pool may still hand it over through a claim).
  exec::SandboxSpec c = Scope("c");
  ASSERT_TRUE(client_->RenameContainer(id, exec::ContainerName(c)));
  exec::EnsuredContainer got = Ensure(c);
  EXPECT_EQ(got.name, exec::CollisionFreeContainerName(c));
  auto info = client_->InspectContainer(got.id);
  ASSERT_TRUE(info);
  auto owner =
      exec::ScopeOf(got.id, info->labels,
                    exec::SandboxRegistry(state_dir_).Load().value_or(exec::RegistryState{}));
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->scope_key, "c");
  // A rename to a name that is taken fails with kConflict, and changes nothing.
  auto clash = client_->RenameContainer(got.id, exec::ContainerName(Scope("a")));
  ASSERT_FALSE(clash);
  EXPECT_EQ(clash.error().code, ErrorCode::kConflict) << clash.error().ToString();
}

TEST_F(WarmPoolTest, ADeadReadyContainerIsNotClaimed) {
  Ensure(Scope("a"));
  ASSERT_TRUE(WaitReady(1));
  const std::string id = *ReadyIds().begin();
  ASSERT_TRUE(client_->KillContainer(id));
  exec::SandboxSpec b = Scope("b");
  exec::EnsuredContainer got = Ensure(b);
  EXPECT_NE(got.id, id);
  EXPECT_EQ(got.name, exec::ContainerName(b));
  EXPECT_EQ(Run(b, "echo ok").aggregated, "ok\n");
  EXPECT_FALSE(client_->InspectContainer(id)) << "the dead one was left behind";
}

TEST_F(WarmPoolTest, DrainAndTheOrphanSweepLeaveNothing) {
  Ensure(Scope("a"));
  ASSERT_TRUE(WaitReady(1));
  const std::string id = *ReadyIds().begin();
  auto info = client_->InspectContainer(id);
  ASSERT_TRUE(info);
  const std::string agent_dir = info->labels[exec::kAgentDirLabel];
  const std::string slot =
      exec::WorkspaceSlotPath(state_dir_, agent_dir.substr(agent_dir.rfind('/') + 1));
  EXPECT_TRUE(std::filesystem::exists(slot));
  executor_->pool().DrainWarmPool();
  EXPECT_TRUE(ReadyIds().empty());
  EXPECT_FALSE(std::filesystem::exists(slot));
  EXPECT_FALSE(std::filesystem::exists(agent_dir));
  // The last slot gone, <state>/pool is no mount any more.
  EXPECT_TRUE(MountPointsBelow(state_dir_ + "/pool").empty());

  // A ready container whose runner died (its owner is no process) goes at the next claim. One
  // that got a scope's name is never taken for unclaimed, even without its claim record (a
  // registry set aside as corrupt): it stays.
  const std::string orphan = DeadRunnersContainer("sandrun-test-orphan-", "-pool-0123456789ab");
  const std::string renamed = DeadRunnersContainer("sandrun-test-renamed-", "-scope-0123abcd");
  ASSERT_FALSE(orphan.empty());
  executor_ = MakeExecutor();
  Ensure(Scope("b"));
  EXPECT_FALSE(client_->InspectContainer(orphan)) << "the orphan was left behind";
  EXPECT_TRUE(client_->InspectContainer(renamed)) << "a renamed one was taken for unclaimed";
}

TEST_F(WarmPoolTest, AMountWithinTheWorkdirMeansNoPool) {
  exec::SandboxSpec tmpfs = Scope("t");
  tmpfs.tmpfs.push_back("/workspace/secrets");
  tmpfs.tmpfs_options["/workspace/secrets"] = "rw,nosuid,nodev,size=1m";
  EXPECT_EQ(executor_->pool().WarmPoolReason(tmpfs),
            "a tmpfs (/workspace/secrets) is mounted within the workdir");
  exec::SandboxSpec bind = Scope("b");
  bind.binds.push_back(exec::HostMountSpec{state_dir_, "/workspace/data", true, {}, ""});
  EXPECT_EQ(executor_->pool().WarmPoolReason(bind),
            "a bind (/workspace/data) is mounted within the workdir");
  exec::SandboxSpec root = Scope("r");
  root.workdir = "/";
  EXPECT_NE(executor_->pool().WarmPoolReason(root), "");
  EXPECT_EQ(executor_->pool().WarmPoolReason(Scope("ok")), "");
  // Such scopes get containers made for them: their tmpfs is on top of the workspace.
  Ensure(tmpfs);
  exec::SandboxSpec second = tmpfs;
  second.scope_key = "t2";
  second.workspace_host_dir = state_dir_ + "/sandboxes/" + ScopeDirName("t2");
  std::filesystem::create_directories(second.workspace_host_dir + "/secrets");
  auto info = client_->InspectContainer(Ensure(second).id);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->labels[exec::kScopeLabel], "t2") << "a pooled container was used";
  EXPECT_EQ(Run(second, "grep -c ' /workspace/secrets tmpfs' /proc/mounts").aggregated, "1\n");
}

TEST_F(WarmPoolTest, AReadyContainerOfAnImageTheTagNoLongerNamesIsNotClaimed) {
  const std::string tag = "sandrun-pooltest:" + std::to_string(::getpid());
  // The engine's own API through curl (the client has no tag call: sandrun never tags).
  const char* host = std::getenv("DOCKER_HOST");
  const std::string socket = host != nullptr && std::string(host).rfind("unix://", 0) == 0
                                 ? std::string(host).substr(7)
                                 : "/var/run/docker.sock";
  auto engine = [&](const std::string& method, const std::string& path) {
    return RunProcess({"/usr/bin/curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                       "--unix-socket", socket, "-X", method, "http://engine" + path})
        .out;
  };
  auto retag = [&](const std::string& image) {
    return engine("POST", "/images/" + image + "/tag?repo=sandrun-pooltest&tag=" +
                              std::to_string(::getpid())) == "201";
  };
  ASSERT_TRUE(retag("sandrun-sandbox:minimal"));
  base_.image = tag;
  Ensure(Scope("a"));
  ASSERT_TRUE(WaitReady(1));
  const std::string stale = *ReadyIds().begin();
  ASSERT_TRUE(retag("sandrun-sandbox:bookworm"));  // a rebuilt image under the same tag
  exec::EnsuredContainer got = Ensure(Scope("b"));
  auto bookworm = client_->InspectImage("sandrun-sandbox:bookworm");
  auto info = client_->InspectContainer(got.id);
  (void)engine("DELETE", "/images/" + tag);
  ASSERT_TRUE(bookworm && info);
  EXPECT_NE(got.id, stale);
  EXPECT_EQ(info->image, bookworm->id);
  EXPECT_FALSE(client_->InspectContainer(stale)) << "the stale one was left behind";
}

TEST_F(WarmPoolTest, PoolOwnersAreKnownByPidAndStartTime) {
  std::ifstream in("/proc/self/stat");
  std::string stat;
  std::getline(in, stat);
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) fields >> field;
  const std::string me = std::to_string(::getpid());
  EXPECT_TRUE(exec::PoolOwnerAlive({{exec::kPoolOwnerLabel, me + ":" + field}}));
  // The same pid with another start time is another process (a reused pid).
  EXPECT_FALSE(exec::PoolOwnerAlive({{exec::kPoolOwnerLabel, me + ":1"}}));
  EXPECT_FALSE(exec::PoolOwnerAlive({{exec::kPoolOwnerLabel, me}}));
  EXPECT_FALSE(exec::PoolOwnerAlive({{exec::kPoolOwnerLabel, "999999999:1"}}));
  EXPECT_FALSE(exec::PoolOwnerAlive({}));
}

TEST_F(WarmPoolTest, AClaimItsRunnerNeverFinishedIsSweptAFinishedOneStays) {
  // Two containers of a dead runner's pool, both claimed: one renamed to its scope's name (the
  // claim finished), one not (the runner died between the record and the rename).
  const std::string tag = std::to_string(::getpid());
  const std::string finished = DeadRunnersContainer("sandrun-test-finished-");
  const std::string half = DeadRunnersContainer("sandrun-test-pool-half-");
  ASSERT_TRUE(exec::SandboxRegistry(state_dir_).Update([&](exec::RegistryState& s) {
    s.claims[finished] = exec::PoolClaim{"",  "done",        ScopeKeyHash("done"),          "r",
                                         "c", exec::NowMs(), "sandrun-test-finished-" + tag};
    s.claims[half] = exec::PoolClaim{"",  "half",        ScopeKeyHash("half"), "r",
                                     "c", exec::NowMs(), "sandrun-sbx-half"};
  }));
  Ensure(Scope("b"));  // the first claim sweeps
  EXPECT_TRUE(client_->InspectContainer(finished));
  EXPECT_FALSE(client_->InspectContainer(half)) << "the half-claimed one was left behind";
  auto registry = exec::SandboxRegistry(state_dir_).Load();
  ASSERT_TRUE(registry);
  EXPECT_EQ(registry->claims.count(half), 0u);
  EXPECT_EQ(registry->claims.count(finished), 1u);
}

}  // namespace
}  // namespace sandrun::testing

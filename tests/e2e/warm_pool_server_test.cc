// The warm pool through the binary (sandbox.pool): a running server hands a new session a
// pooled container and drains its pool when it stops; the one-shot CLI keeps none; a crashed
// server's pool is removed by the next one. (The claim itself: tests/integration/warm_pool_test.)
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "tests/e2e/session_home.h"

namespace sandrun::testing {
namespace {

class WarmPoolServer : public SessionHome {
 protected:
  void SetUp() override {
    SessionHome::SetUp();
    SANDRUN_REQUIRE_DOCKER(client);
    Config(R"({"sandbox": {"scope": "session", "docker": {"image": "sandrun-sandbox:minimal",
               "user": "1000:1000"}, "pool": {"min": 1}}})");
  }

  // The pool's unclaimed containers that run: named ...-pool-..., labelled sandrun.pool.
  std::set<std::string> PooledIds() {
    std::set<std::string> ids;
    std::string why;
    auto client = ConnectToDocker(&why);
    if (!client || InstanceId().empty()) return ids;
    auto list = client->ListContainers({"sandrun.instance=" + InstanceId(), "sandrun.pool"}, true);
    if (!list) return ids;
    for (const auto& c : *list) {
      const std::string name = c.names.empty() ? "" : c.names.front();
      if (name.find("-pool-") != std::string::npos && c.state == "running") ids.insert(c.id);
    }
    return ids;
  }

  // Waits (up to 60 s) for a pooled container whose agent listens (its socket exists), then
  // 300 ms for the pool to list it.
  std::string WaitPooled() {
    for (int i = 0; i < 1200; ++i) {
      for (const std::string& id : PooledIds()) {
        std::string why;
        auto info = ConnectToDocker(&why)->InspectContainer(id);
        if (info && std::filesystem::exists(info->labels["sandrun.agentDir"] + "/sock")) {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          return id;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "no pooled container came up";
    return "";
  }

  std::string Hostname(const std::string& session) {
    auto r = Sandrun({"--session", session, "exec", "--", "hostname"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
};

TEST_F(WarmPoolServer, ANewSessionGetsAPooledContainerAndStopDrainsThePool) {
  StartServer();
  Hostname("first");  // the pool's kind is learnt (nothing was ready)
  const std::string pooled = WaitPooled();
  ASSERT_FALSE(pooled.empty());
  EXPECT_EQ(Hostname("second"), pooled.substr(0, 12)) << "the new session was not given it";
  auto list = Sandrun({"sandbox", "list"});
  EXPECT_NE(list.out.find("second"), std::string::npos) << list.out;
  // Its workspace is its own scratch dir, writable by the sandbox user.
  auto wrote = Sandrun({"--session", "second", "exec", "--", "echo x > /workspace/f && id -u"});
  EXPECT_EQ(wrote.out, "1000\n") << wrote.err;
  WaitPooled();  // refilled
  StopServer();
  EXPECT_TRUE(PooledIds().empty()) << "the pool was not drained";
  // The sessions' containers stay; the claimed one is still the second session's.
  EXPECT_EQ(ContainerCount(), 2u);
  StartServer();
  EXPECT_EQ(Hostname("second"), pooled.substr(0, 12));
}

TEST_F(WarmPoolServer, TheOneShotCliKeepsNoPool) {
  auto r = Sandrun({"--session", "solo", "exec", "--", "echo ok"});
  EXPECT_EQ(r.out, "ok\n") << r.err;
  EXPECT_EQ(ContainerCount(), 1u);
  EXPECT_TRUE(PooledIds().empty());
}

TEST_F(WarmPoolServer, ACrashedServersPoolIsRemovedByTheNextOneOrAPrune) {
  StartServer();
  Hostname("first");
  const std::string orphan = WaitPooled();
  ASSERT_FALSE(orphan.empty());
  CrashServer();
  EXPECT_EQ(PooledIds().count(orphan), 1u);
  StartServer();
  EXPECT_NE(Hostname("second"), orphan.substr(0, 12));
  std::string why;
  EXPECT_FALSE(ConnectToDocker(&why)->InspectContainer(orphan)) << "the orphan was left behind";
  // Without a new scope: `sandbox prune` removes a dead server's ready containers too.
  const std::string next = WaitPooled();
  ASSERT_FALSE(next.empty());
  CrashServer();
  auto pruned = Sandrun({"sandbox", "prune"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_FALSE(ConnectToDocker(&why)->InspectContainer(next)) << "prune left it behind";
  EXPECT_TRUE(MountPointsBelow(home_ + "/pool").empty());
}

TEST_F(WarmPoolServer, AReloadDrainsThePoolOfTheOldConfig) {
  StartServer();
  Hostname("first");
  ASSERT_FALSE(WaitPooled().empty());
  Config(R"({"sandbox": {"scope": "session", "docker": {"image": "sandrun-sandbox:minimal",
             "user": "1000:1000"}}})");
  ::kill(server_pid_, SIGHUP);
  bool drained = false;
  for (int i = 0; i < 400 && !drained; ++i) {
    drained = PooledIds().empty();
    if (!drained) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(drained) << "the pool of the old config stayed";
  // Without sandbox.pool nothing is kept warm any more.
  Hostname("second");
  EXPECT_TRUE(PooledIds().empty());
}

TEST_F(WarmPoolServer, DoctorSaysWhetherContainersAreKeptWarm) {
  auto on = Sandrun({"doctor"});
  EXPECT_NE(on.out.find("ok    warm-pool    a running server keeps 1 (up to 1 under demand)"),
            std::string::npos)
      << on.out;
  // Without the agent there is no pool: said, not silently ignored.
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal", "execAgent": false},
             "pool": {"min": 2}}})");
  auto off = Sandrun({"doctor"});
  EXPECT_NE(off.out.find("warn  warm-pool    sandbox.pool is set but no container is kept warm: "
                         "no sandbox agent"),
            std::string::npos)
      << off.out;
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}}})");
  EXPECT_NE(Sandrun({"doctor"}).out.find("ok    warm-pool    no warm pool (sandbox.pool not set)"),
            std::string::npos);
}

}  // namespace
}  // namespace sandrun::testing

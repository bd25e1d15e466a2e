// A sandbox exec's process tree dies whole on a timeout or a kill (container_kill.h), against
// the real engine and the minimal (busybox) image, as a non-root user without capabilities:
// children that called setsid, double forks adopted by the container's init, processes that
// cleared their environment, and a process disguised as the container's keeper; while the
// keeper, processes older than the exec and another active exec's tree are left alone.
// What is left is read from the container's /proc in a separate docker exec (the bookworm image
// has no ps), polled for a bounded time; the minimal image is the default, bookworm (dash, GNU
// grep) runs the killer too.
//
// Each "sleep 30N" is a unique command line, so a pid the kernel reuses is never mistaken for
// a survivor. Containers carry the executor's labels, and a state dir under /tmp/sandrun-e2e-*
// so that the suite's cleanup recognises them; TearDown removes them by instance.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "sandbox/docker/transport.h"
#include "sandbox/executors/docker/docker_executor.h"
#include "tests/integration/tcp_proxy.h"
#include "tests/support/docker_env.h"

namespace sandrun::testing {
namespace {

using exec::ExecOutcome;
using std::chrono::milliseconds;

// A shell function that prints every process's command line (busybox and Debian alike).
constexpr char kListArgs[] =
    "list_args() { for f in /proc/[0-9]*/cmdline; do a=$(tr '\\0' ' ' < \"$f\" 2>/dev/null); "
    "[ -z \"$a\" ] || echo \"${a% }\"; done; }";

class ContainerTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SANDRUN_REQUIRE_DOCKER(c);
    client_ = std::shared_ptr<docker::Client>(std::move(c));
    char tmpl[] = "/tmp/sandrun-e2e-trees-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    state_dir_ = tmpl;
    spec_ = TestSandboxSpec("trees", "agent:trees", state_dir_);
    executor_ = std::make_shared<exec::DockerExecutor>(client_, Wrapper());
  }

  static exec::ExecWrapper Wrapper() {
    exec::ExecWrapper w = exec::CheckExecWrapper(SANDRUN_EXEC_WRAPPER);
    EXPECT_TRUE(w.usable()) << w.reason;
    return w;
  }

  // A client of the engine through `proxy`: a tcp:// endpoint (null on failure).
  static std::shared_ptr<docker::Client> TcpClient(const TcpProxy& proxy) {
    EXPECT_NE(proxy.port(), 0);
    auto endpoint =
        docker::ParseEndpoint("tcp://127.0.0.1:" + std::to_string(proxy.port()), "", "");
    EXPECT_TRUE(endpoint) << endpoint.error().ToString();
    if (!endpoint) return nullptr;
    auto transport = docker::CurlTransport::Create(*endpoint);
    EXPECT_TRUE(transport) << transport.error().ToString();
    if (!transport) return nullptr;
    return std::make_shared<docker::Client>(
        std::shared_ptr<docker::Transport>(std::move(transport).value()));
  }

  // Waits up to 20 s until a process runs `args`.
  bool Runs(const std::string& args) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (Count(args) == 0) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return true;
  }

  void TearDown() override { RemoveTestSandboxes(client_.get(), spec_.instance_id, state_dir_); }

  exec::Plan Plan(const std::string& command, int64_t timeout_ms) {
    exec::Plan plan;
    plan.target = exec::Target::kSandbox;
    plan.command = command;
    plan.sandbox = spec_;
    plan.cwd = "/tmp";
    plan.timeout_ms = timeout_ms;
    plan.kill_grace_ms = 500;
    return plan;
  }

  ExecOutcome Run(const std::string& command, int64_t timeout_ms) {
    auto o = executor_->Run(Plan(command, timeout_ms), nullptr, nullptr);
    EXPECT_TRUE(o) << o.error().ToString();
    return o ? std::move(o).value() : ExecOutcome{};
  }

  // Every process's command line in the scope's container, one a line, through its own exec.
  std::string Ps() {
    auto list = client_->ListContainers(
        {std::string(exec::kInstanceLabel) + "=" + spec_.instance_id}, false);
    if (!list || list->empty()) return "(no running container)";
    docker::ExecSpec ps;
    ps.cmd = {"/bin/sh", "-c", std::string(kListArgs) + "; list_args"};
    std::string out;
    auto code = client_->RunExec(list->front().id, ps,
                                 [&](docker::StreamKind, std::string_view b) { out.append(b); });
    return code ? out : code.error().ToString();
  }

  // Processes whose command line is exactly `args`.
  size_t Count(const std::string& args) {
    std::istringstream lines(Ps());
    size_t n = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line == args) ++n;
    }
    return n;
  }

  // Polls `ps` until no process runs `args`, for up to 5 s. True if none is left.
  bool Gone(const std::string& args) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (Count(args) != 0) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(milliseconds(100));
    }
    return true;
  }

  std::shared_ptr<docker::Client> client_;
  std::shared_ptr<exec::DockerExecutor> executor_;
  exec::SandboxSpec spec_;
  std::string state_dir_;
};

// The shell waits until every named sleep runs, says so, then does `rest`.
std::string StartThen(const std::string& start, const std::vector<std::string>& sleeps,
                      const std::string& rest) {
  std::string wait;
  for (const auto& s : sleeps) wait += "list_args | grep -qx '" + s + "' || continue; ";
  return std::string(kListArgs) + "\n" + start + "\nwhile :; do sleep 0.05; " + wait +
         "break; done; echo started; " + rest;
}

TEST_F(ContainerTreeTest, TimeoutKillsASetsidChildAfterTheExecsShellExited) {
  // The shell exits at once; the child holds the output open, so the call runs into its
  // timeout with the exec's own process already gone. (Before: nothing was killed.)
  ExecOutcome o = Run(StartThen("setsid sh -c 'sleep 301' &", {"sleep 301"}, "exit 0"), 1500);
  EXPECT_EQ(o.status, ExecOutcome::Status::kTimedOut) << o.aggregated;
  EXPECT_EQ(o.aggregated, "started\n");
  EXPECT_TRUE(Gone("sleep 301")) << Ps();
  EXPECT_EQ(Count("sleep infinity"), 1u) << "the keeper runs on\n" << Ps();
}

TEST_F(ContainerTreeTest, TimeoutKillsADoubleForkedSetsidChild) {
  // Adopted by the container's init, so no descendant of the exec's shell. (Before: survived.)
  ExecOutcome o = Run(StartThen("(setsid sleep 302 &)", {"sleep 302"}, "sleep 100"), 1000);
  EXPECT_EQ(o.status, ExecOutcome::Status::kTimedOut);
  EXPECT_TRUE(Gone("sleep 302")) << Ps();
}

TEST_F(ContainerTreeTest, TimeoutKillsWhatClearedItsEnvironmentAndADisguisedKeeper) {
  ASSERT_EQ(Run("(setsid sleep 304 &); echo earlier", 10000).aggregated, "earlier\n");
  // No marker, no lineage, no session: taken because no other exec runs and it is younger
  // than the exec; the second one looks exactly like the keeper.
  ExecOutcome o = Run(StartThen("(env -i setsid sleep 303 &); (env -i setsid sleep infinity &)",
                                {"sleep 303"}, "sleep 100"),
                      1500);
  EXPECT_EQ(o.status, ExecOutcome::Status::kTimedOut);
  EXPECT_TRUE(Gone("sleep 303")) << Ps();
  EXPECT_EQ(Count("sleep infinity"), 1u) << "the keeper only\n" << Ps();
  EXPECT_EQ(Count("sleep 304"), 1u) << "what an earlier call left running stays\n" << Ps();
  // The container still works.
  EXPECT_EQ(Run("echo alive", 10000).aggregated, "alive\n");
}

TEST_F(ContainerTreeTest, AnotherActiveExecIsLeftAloneAndItsKillTakesItsWholeTree) {
  std::string bg_out;
  auto bg = executor_->Start(Plan(StartThen("(setsid sleep 305 &); setsid sh -c 'sleep 306' &",
                                            {"sleep 305", "sleep 306"}, "exec sleep 307"),
                                  0),
                             [&](exec::Stream, std::string_view b) { bg_out.append(b); });
  ASSERT_TRUE(bg) << bg.error().ToString();
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (Count("sleep 307") == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_EQ(Count("sleep 307"), 1u) << Ps();

  ExecOutcome o = Run(StartThen("(setsid sleep 308 &)", {"sleep 308"}, "sleep 100"), 1000);
  EXPECT_EQ(o.status, ExecOutcome::Status::kTimedOut);
  EXPECT_TRUE(Gone("sleep 308")) << Ps();
  for (const char* other : {"sleep 305", "sleep 306", "sleep 307"}) {
    EXPECT_EQ(Count(other), 1u) << other << " belongs to the other exec\n" << Ps();
  }

  // `process kill`: the background exec's whole tree, its adopted orphan included.
  // (Before: only the exec's own process and its descendants; sleep 305 survived.)
  ASSERT_TRUE((*bg)->Kill(SIGKILL));
  ExecOutcome killed = (*bg)->Wait();
  EXPECT_EQ(killed.status, ExecOutcome::Status::kSignaled) << "the wrapper's record says so";
  EXPECT_EQ(killed.signal, SIGKILL);
  for (const char* gone : {"sleep 305", "sleep 306", "sleep 307"}) {
    EXPECT_TRUE(Gone(gone)) << gone << "\n" << Ps();
  }
}

TEST_F(ContainerTreeTest, DestroyingARunningBackgroundExecKillsItsTree) {
  // A server shutting down destroys its sessions' processes.
  auto bg = executor_->Start(
      Plan(StartThen("(setsid sleep 309 &)", {"sleep 309"}, "exec sleep 310"), 0), nullptr);
  ASSERT_TRUE(bg) << bg.error().ToString();
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (Count("sleep 310") == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_EQ(Count("sleep 309"), 1u) << Ps();
  bg->reset();
  EXPECT_TRUE(Gone("sleep 309")) << Ps();
  EXPECT_TRUE(Gone("sleep 310")) << Ps();
}

TEST_F(ContainerTreeTest, WhatIgnoresTermIsKilledAfterTheGrace) {
  // SIG_IGN survives execve: this sleep ignores the timeout's SIGTERM. (Before: survived.)
  auto started = std::chrono::steady_clock::now();
  ExecOutcome o = Run(
      StartThen("(setsid sh -c \"trap '' TERM; exec sleep 312\" &)", {"sleep 312"}, "sleep 100"),
      1000);
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(o.status, ExecOutcome::Status::kTimedOut);
  EXPECT_TRUE(Gone("sleep 312")) << Ps();
  EXPECT_GE(took, milliseconds(1000 + 500)) << "the timeout, then the grace";
}

TEST_F(ContainerTreeTest, TheKillerWorksWithDashAndGnuGrepToo) {
  spec_.image = "sandrun-sandbox:bookworm";
  // No other exec: everything the exec started goes.
  ExecOutcome o = Run(StartThen("(env -i setsid sleep 313 &)", {"sleep 313"}, "sleep 100"), 1000);
  EXPECT_EQ(o.status, ExecOutcome::Status::kTimedOut) << o.aggregated;
  EXPECT_TRUE(Gone("sleep 313")) << Ps();
  // Another exec active: the marker and the lineage decide.
  auto bg = executor_->Start(Plan(StartThen("", {}, "exec sleep 314"), 0), nullptr);
  ASSERT_TRUE(bg) << bg.error().ToString();
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (Count("sleep 314") == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_EQ(Count("sleep 314"), 1u) << Ps();
  o = Run(StartThen("(setsid sleep 315 &)", {"sleep 315"}, "sleep 100"), 1000);
  EXPECT_EQ(o.status, ExecOutcome::Status::kTimedOut) << o.aggregated;
  EXPECT_TRUE(Gone("sleep 315")) << Ps();
  EXPECT_EQ(Count("sleep 314"), 1u) << "the other exec's\n" << Ps();
  ASSERT_TRUE((*bg)->Kill(SIGKILL));
  (*bg)->Wait();
  EXPECT_TRUE(Gone("sleep 314")) << Ps();
}

// A tcp:// engine (a loopback proxy to the local socket): the runner has no host pid it could
// map, so the exec's own process is known only from the exec wrapper's record in the container.
// Another exec is active (no sweep by start time): the exec's shell replaced itself by a process
// without the marker (`exec env -i`), its child too, and a setsid double fork kept the marker.
// (Without the wrapper: sleep 341 and 342 survived.)
TEST_F(ContainerTreeTest, OverATcpEngineTheTreeIsKilledThroughTheWrappersPid) {
  TcpProxy proxy;
  auto tcp = TcpClient(proxy);
  ASSERT_TRUE(tcp);
  ASSERT_EQ(tcp->endpoint().kind, docker::Endpoint::Kind::kTcp);
  auto remote = std::make_shared<exec::DockerExecutor>(tcp, Wrapper());

  auto bg = remote->Start(Plan("exec sleep 340", 0), nullptr);
  ASSERT_TRUE(bg) << bg.error().ToString();
  ASSERT_TRUE(Runs("sleep 340")) << Ps();
  auto run = remote->Run(Plan(StartThen("(setsid sleep 343 &)", {"sleep 343"},
                                        "exec env -i /bin/sh -c 'sleep 341 & exec sleep 342'"),
                              1500),
                         nullptr, nullptr);
  ASSERT_TRUE(run) << run.error().ToString();
  EXPECT_EQ(run->status, ExecOutcome::Status::kTimedOut) << run->aggregated;
  for (const char* gone : {"sleep 341", "sleep 342", "sleep 343"}) {
    EXPECT_TRUE(Gone(gone)) << gone << "\n" << Ps();
  }
  EXPECT_EQ(Count("sleep 340"), 1u) << "the other exec's\n" << Ps();
  // `process kill` over tcp: SIGTERM reaches the command (not the wrapper, which would forward
  // it a second time), and the wrapper reports the signal.
  ASSERT_TRUE((*bg)->Kill(SIGTERM));
  ExecOutcome killed = (*bg)->Wait();
  EXPECT_EQ(killed.status, ExecOutcome::Status::kSignaled) << killed.aggregated;
  EXPECT_EQ(killed.signal, SIGTERM);
  EXPECT_TRUE(Gone("sleep 340")) << Ps();
}

// Without the wrapper (a remote engine, where nothing can be bind-mounted from here) the exit
// code is all there is, and the killer still takes the tree by its marker and start time.
TEST_F(ContainerTreeTest, OverATcpEngineWithoutTheWrapperSignalsStayExitCodes) {
  TcpProxy proxy;
  auto tcp = TcpClient(proxy);
  ASSERT_TRUE(tcp);
  auto remote = std::make_shared<exec::DockerExecutor>(tcp);
  EXPECT_FALSE(remote->pool().exec_wrapper().usable()) << "a tcp engine gets no bind from here";

  auto o = remote->Run(Plan("kill -SEGV $$", 10000), nullptr, nullptr);
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->status, ExecOutcome::Status::kExited);
  EXPECT_EQ(o->exit_code, 128 + 11);
  o = remote->Run(Plan(StartThen("(setsid sleep 344 &)", {"sleep 344"}, "sleep 100"), 1000),
                  nullptr, nullptr);
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->status, ExecOutcome::Status::kTimedOut);
  EXPECT_TRUE(Gone("sleep 344")) << Ps();
}

}  // namespace
}  // namespace sandrun::testing

// The sandbox agent's protocol against a real container (agent/protocol.h): what a client that
// reached the socket (or a runner bug) may send, and what must hold: a wrong secret gets
// nothing, a command never starts as root or as the agent, malformed or oversized frames only
// cost their own connection, a command that does not read its input stalls no other command
// and is still killed, an unknown command cannot be attached to; the agent serves on.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "sandbox/executors/docker/agent_exec.h"
#include "sandbox/executors/docker/agent_link.h"
#include "sandbox/executors/docker/docker_executor.h"
#include "sandbox/os/host_path.h"
#include "tests/support/docker_env.h"

namespace sandrun::testing {
namespace {

using std::chrono::seconds;

class AgentProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SANDRUN_REQUIRE_DOCKER(c);
    client_ = std::shared_ptr<docker::Client>(std::move(c));
    char tmpl[] = "/tmp/sandrun-e2e-agent-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    state_dir_ = tmpl;
    spec_ = TestSandboxSpec("agent", "agent:protocol", state_dir_);
    exec::ExecWrapper agent = exec::CheckBundledBinary(SANDRUN_AGENT_BINARY, "sandbox agent");
    ASSERT_TRUE(agent.usable()) << agent.reason;
    executor_ = std::make_shared<exec::DockerExecutor>(
        client_, exec::CheckExecWrapper(SANDRUN_EXEC_WRAPPER), agent);
    std::vector<std::string> warnings;
    auto ensured = executor_->EnsureContainer(spec_, &warnings);
    ASSERT_TRUE(ensured) << ensured.error().ToString();
    ASSERT_FALSE(ensured->agent_dir.empty()) << (warnings.empty() ? "" : warnings.front());
    dir_ = ensured->agent_dir;
  }

  void TearDown() override { RemoveTestSandboxes(client_.get(), spec_.instance_id, state_dir_); }

  exec::Plan Plan(const std::string& command) {
    exec::Plan plan;
    plan.target = exec::Target::kSandbox;
    plan.command = command;
    plan.sandbox = spec_;
    plan.cwd = "/tmp";
    plan.timeout_ms = 20000;
    plan.kill_grace_ms = 500;
    return plan;
  }

  // The agent still runs commands: `echo ok` through the executor.
  void ExpectServing() {
    auto o = executor_->Run(Plan("echo ok"), nullptr, nullptr);
    ASSERT_TRUE(o) << o.error().ToString();
    EXPECT_EQ(o->aggregated, "ok\n");
    EXPECT_TRUE(o->warnings.empty()) << o->warnings.front();
  }

  // A raw connection to the agent's socket (the test runs as root, as the runner does).
  int RawConnect() {
    auto dir = OpenNoSymlinks(dir_);
    EXPECT_TRUE(dir) << dir.error().ToString();
    const std::string path = ProcFdPath(dir->get()) + "/sock";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  }

  // Whether the agent closes `fd` (EOF) within 5 s, whatever it sends first.
  static bool ClosedByAgent(int fd) {
    char buf[4096];
    auto until = std::chrono::steady_clock::now() + seconds(5);
    timeval tv{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (std::chrono::steady_clock::now() < until) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n == 0) return true;
      if (n < 0 && errno != EAGAIN && errno != EINTR) return true;
    }
    return false;
  }

  Result<exec::AgentLink> Link() {
    return exec::AgentLink::Connect(dir_, Deadline::After(seconds(5)));
  }

  exec::AgentStart StartOf(const std::string& command, uint32_t uid, uint32_t gid) {
    exec::AgentStart s;
    s.id = std::string(32, 'a');
    s.id[31] = static_cast<char>('0' + (counter_++ % 10));
    s.uid = uid;
    s.gid = gid;
    s.cwd = "/tmp";
    s.argv = {"/bin/sh", "-c", command};
    s.timeout_ms = 20000;
    return s;
  }

  std::shared_ptr<docker::Client> client_;
  std::shared_ptr<exec::DockerExecutor> executor_;
  exec::SandboxSpec spec_;
  std::string state_dir_;
  std::string dir_;
  int counter_ = 0;
};

TEST_F(AgentProtocolTest, AWrongSecretGetsNoAnswerAndTheConnectionCloses) {
  const int fd = RawConnect();
  const std::string hello =
      agent::FrameWriter(agent::Op::kHello).Str(std::string(64, '0')).Finish();
  ASSERT_EQ(::write(fd, hello.data(), hello.size()), static_cast<ssize_t>(hello.size()));
  char buf[64];
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(::read(fd, buf, sizeof buf), 0) << "no READY for a wrong secret";
  ::close(fd);
  // Nothing but HELLO first: a START without it is refused.
  const int fd2 = RawConnect();
  const std::string start =
      agent::FrameWriter(agent::Op::kStart).Str(std::string(32, 'b')).Finish();
  ASSERT_EQ(::write(fd2, start.data(), start.size()), static_cast<ssize_t>(start.size()));
  EXPECT_TRUE(ClosedByAgent(fd2));
  ::close(fd2);
  ExpectServing();
}

TEST_F(AgentProtocolTest, CommandsNeverStartAsRootOrAsTheAgent) {
  for (auto [uid, gid] : std::vector<std::pair<uint32_t, uint32_t>>{
           {0, 0},
           {65534, 0},
           {0, 65534},
           {agent::kAgentUid, 65534},
           {65534, agent::kAgentGid},
           {UINT32_MAX, UINT32_MAX},  // setresuid(-1): "unchanged", the agent's own
           {65534, UINT32_MAX}}) {
    auto link = Link();
    ASSERT_TRUE(link) << link.error().ToString();
    auto started = link->Start(StartOf("touch /tmp/ran", uid, gid), Deadline::After(seconds(5)));
    EXPECT_FALSE(started) << uid << ":" << gid;
    if (!started) {
      EXPECT_NE(started.error().message.find("refused"), std::string::npos);
    }
  }
  auto check = executor_->Run(Plan("ls /tmp/ran 2>&1; true"), nullptr, nullptr);
  ASSERT_TRUE(check);
  EXPECT_NE(check->aggregated.find("No such file"), std::string::npos) << check->aggregated;
}

// A START of `argv0` as nobody, id `id`, nothing else set.
std::string StartFrame(const std::string& id, const std::string& argv0) {
  return agent::FrameWriter(agent::Op::kStart)
      .Str(id)
      .U32(65534)
      .U32(65534)
      .U8(0)
      .U16(0)
      .U16(0)
      .U64(0)
      .U64(0)
      .Str("/")
      .U32(1)
      .Str(argv0)
      .U32(0)
      .Finish();
}

TEST_F(AgentProtocolTest, MalformedAndOversizedFramesCostOnlyTheirConnection) {
  // A length beyond the frame limit, a zero length, an unknown op after HELLO, a START whose
  // fields run past its frame, a relative argv[0], a bad command id.
  std::string secret;
  {
    FILE* f = std::fopen((dir_ + "/secret").c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[128] = {};
    ASSERT_NE(std::fgets(buf, sizeof buf, f), nullptr);
    std::fclose(f);
    secret.assign(buf, 64);
  }
  const std::string hello = agent::FrameWriter(agent::Op::kHello).Str(secret).Finish();
  std::vector<std::string> bad = {
      std::string("\xff\xff\xff\x7f\x02", 5),
      std::string("\0\0\0\0", 4),
      hello + agent::FrameWriter(static_cast<agent::Op>(0x42)).Finish(),
      hello + agent::FrameWriter(agent::Op::kStart).Str(std::string(32, 'c')).U32(65534).Finish(),
      hello + StartFrame(std::string(32, 'd'), "sh"),  // a relative argv[0]
      hello + StartFrame("../../etc", "/bin/true"),    // not a command id
      hello + agent::FrameWriter(agent::Op::kAttach).Str(std::string(32, 'e')).U64(0).Finish(),
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    const int fd = RawConnect();
    ASSERT_EQ(::write(fd, bad[i].data(), bad[i].size()), static_cast<ssize_t>(bad[i].size()));
    EXPECT_TRUE(ClosedByAgent(fd)) << "case " << i;
    ::close(fd);
  }
  ExpectServing();
}

TEST_F(AgentProtocolTest, ACommandThatDoesNotReadItsInputStallsNothingAndIsStillKilled) {
  std::string out;
  auto proc = exec::StartOnAgent(
      dir_, Plan("echo up; sleep 300"), [&](exec::Stream, std::string_view b) { out.append(b); },
      nullptr);
  ASSERT_TRUE(proc) << proc.error().ToString();
  // 4 MiB of input it never reads, from another thread (it blocks once the agent stops reading).
  std::thread writer([&] { (void)(*proc)->WriteStdin(std::string(4u << 20, 'x')); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto before = std::chrono::steady_clock::now();
  ExpectServing();
  EXPECT_LT(std::chrono::steady_clock::now() - before, seconds(5)) << "another command waited";
  EXPECT_TRUE((*proc)->Kill(SIGKILL));
  exec::ExecOutcome o = (*proc)->Wait();
  EXPECT_EQ(o.status, exec::ExecOutcome::Status::kSignaled);
  EXPECT_EQ(o.signal, SIGKILL);
  writer.join();  // the input is dropped once the command is gone
  EXPECT_EQ(out, "up\n");
}

TEST_F(AgentProtocolTest, ManyConnectionsAtOnceAreServedAndLeaveNothing) {
  std::vector<exec::AgentLink> idle;
  for (int i = 0; i < 200; ++i) {
    auto link = Link();
    ASSERT_TRUE(link) << i << ": " << link.error().ToString();
    idle.push_back(std::move(link).value());
  }
  ExpectServing();
  idle.clear();
  ExpectServing();
}

// The executor remembers a scope's container for a few seconds (no engine call per command);
// a container removed meanwhile is found missing through its agent and replaced, and another
// scope never gets it.
TEST_F(AgentProtocolTest, ARememberedContainerRemovedMeanwhileIsReplacedAndNeverShared) {
  ExpectServing();
  auto list =
      client_->ListContainers({std::string(exec::kInstanceLabel) + "=" + spec_.instance_id}, true);
  ASSERT_TRUE(list && list->size() == 1u);
  const std::string first = list->front().id;
  ASSERT_TRUE(client_->RemoveContainer(first, true));
  auto o = executor_->Run(Plan("echo again"), nullptr, nullptr);
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->aggregated, "again\n");
  for (const auto& w : o->warnings) {
    EXPECT_EQ(w.find("did not answer"), std::string::npos) << w;
  }
  list =
      client_->ListContainers({std::string(exec::kInstanceLabel) + "=" + spec_.instance_id}, true);
  ASSERT_TRUE(list && list->size() == 1u);
  EXPECT_NE(list->front().id, first);

  exec::Plan other = Plan("echo other");
  other.sandbox.scope_key = "agent:protocol-other";
  auto p = executor_->Run(other, nullptr, nullptr);
  ASSERT_TRUE(p) << p.error().ToString();
  list =
      client_->ListContainers({std::string(exec::kInstanceLabel) + "=" + spec_.instance_id}, true);
  ASSERT_TRUE(list);
  EXPECT_EQ(list->size(), 2u) << "another scope gets a container of its own";
}

// An ATTACH that asks for output already acknowledged is refused and changes nothing: the
// command's own connection keeps it (before: it was taken over first, then refused).
TEST_F(AgentProtocolTest, ARefusedAttachLeavesTheCommandWithItsConnection) {
  auto link = Link();
  ASSERT_TRUE(link) << link.error().ToString();
  exec::AgentStart start = StartOf("echo abc; sleep 1; echo def", 65534, 65534);
  ASSERT_TRUE(link->Start(start, Deadline::After(seconds(5))));
  auto first = link->Next({Deadline::After(seconds(5)), nullptr});
  ASSERT_TRUE(first) << first.error().ToString();
  ASSERT_TRUE(link->Ack(first->offset + first->data.size(), false));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto other = Link();
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->Attach(start.id, 0, Deadline::After(seconds(5))));
  std::string rest;
  for (;;) {
    auto e = link->Next({Deadline::After(seconds(10)), nullptr});
    ASSERT_TRUE(e) << e.error().ToString();
    if (e->kind == exec::AgentEvent::Kind::kExit) {
      EXPECT_EQ(e->exit_code, 0);
      break;
    }
    rest += e->data;
  }
  EXPECT_EQ(rest, "def\n");
  ExpectServing();
}

// What the agent's uid could plant in its directory never reaches the root runner: a link in
// place of the socket is not followed (nothing is sent to what it names), and a FIFO in place
// of the secret is never read (the runner keeps its own copy).
TEST_F(AgentProtocolTest, WhatIsPlantedInTheAgentDirectoryDoesNotReachTheRunner) {
  ExpectServing();
  const std::string sock = dir_ + "/sock";
  ASSERT_EQ(::mkfifo((dir_ + "/secret.fifo").c_str(), 0600), 0);
  ASSERT_EQ(::rename((dir_ + "/secret").c_str(), (dir_ + "/secret.real").c_str()), 0);
  ASSERT_EQ(::rename((dir_ + "/secret.fifo").c_str(), (dir_ + "/secret").c_str()), 0);
  const auto before = std::chrono::steady_clock::now();
  ExpectServing();  // the runner does not read the agent's copy
  EXPECT_LT(std::chrono::steady_clock::now() - before, seconds(3));

  // A listener of the host's, and the socket's name pointing at it.
  const std::string decoy = state_dir_ + "/decoy.sock";
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", decoy.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  ASSERT_EQ(::rename(sock.c_str(), (dir_ + "/sock.real").c_str()), 0);
  ASSERT_EQ(::symlink(decoy.c_str(), sock.c_str()), 0);
  auto link = Link();
  EXPECT_FALSE(link) << "connected through a planted link";
  const int accepted = ::accept(listener, nullptr, nullptr);
  EXPECT_LT(accepted, 0) << "the runner connected to the decoy";
  if (accepted >= 0) ::close(accepted);
  ::close(listener);
}

// Removing a container removes its agent directory whole, whatever the agent's uid put in it,
// and the runner's key with it.
TEST_F(AgentProtocolTest, RemovingTheScopeRemovesTheAgentDirectoryWhole) {
  ASSERT_EQ(::mkdir((dir_ + "/junk").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir_ + "/junk/deep").c_str(), 0700), 0);
  std::ofstream(dir_ + "/junk/deep/blob") << std::string(4096, 'x');
  ASSERT_EQ(::symlink("/etc", (dir_ + "/junk/etc").c_str()), 0);
  auto removed = executor_->pool().RemoveScope(spec_.instance_id, state_dir_, spec_.tenant,
                                               spec_.scope_key, "", false);
  ASSERT_TRUE(removed) << removed.error().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir_));
  EXPECT_FALSE(std::filesystem::exists(dir_ + ".key"));
  EXPECT_TRUE(std::filesystem::exists("/etc/passwd")) << "the link was not followed";
}

}  // namespace
}  // namespace sandrun::testing

// Exec streams against the real dockerd: demuxing, large output, exit codes, stdin, TTY,
// killing (the sandbox's in-container tree killer), deadlines.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include "sandbox/executors/docker/container_kill.h"
#include "tests/integration/docker_fixture.h"

namespace sandrun::testing {
namespace {

using DockerExec = DockerContainerTest;

// An exec marked for the in-container tree killer (container_kill.h): `spec` gets the marker,
// the returned tree is completed by Created().
exec::ExecTree Marked(const std::string& container, docker::ExecSpec& spec) {
  auto tree = exec::MarkExec(spec);
  EXPECT_TRUE(tree) << tree.error().ToString();
  exec::ExecTree t = tree ? std::move(tree).value() : exec::ExecTree{};
  t.container = container;
  return t;
}

// SIGKILL to the exec's whole tree, inside the container: no host /proc needed.
Status KillTree(docker::Client& client, exec::ExecTree tree, const std::string& exec_id) {
  tree.exec_id = exec_id;
  return exec::KillContainerExecTree(client, tree, SIGKILL, 0);
}

// Peak resident set of this process, in KiB (VmHWM).
long PeakRssKib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

TEST_F(DockerExec, StdoutAndStderrStaySeparateAndInOrder) {
  Output o;
  auto code = client_->RunExec(
      id_,
      Shell("echo out1; sleep 0.05; echo err1 >&2; sleep 0.05; echo out2; sleep 0.05; "
            "echo err2 >&2"),
      o.Sink());
  ASSERT_TRUE(code) << code.error().ToString();
  EXPECT_EQ(*code, 0);
  EXPECT_EQ(o.out, "out1\nout2\n");
  EXPECT_EQ(o.err, "err1\nerr2\n");
  EXPECT_EQ(o.sequence, "oeoe");
}

TEST_F(DockerExec, TenMebibytesStreamWithBoundedMemory) {
  const size_t kBytes = 10u << 20;
  size_t total = 0, largest = 0, pieces = 0;
  bool all_zero = true;
  long rss_before = PeakRssKib();
  auto code = client_->RunExec(id_, Shell("head -c 10485760 /dev/zero"),
                               [&](docker::StreamKind kind, std::string_view bytes) {
                                 EXPECT_EQ(kind, docker::StreamKind::kStdout);
                                 total += bytes.size();
                                 largest = std::max(largest, bytes.size());
                                 ++pieces;
                                 for (char c : bytes) all_zero &= (c == 0);
                               });
  long rss_after = PeakRssKib();
  ASSERT_TRUE(code) << code.error().ToString();
  EXPECT_EQ(*code, 0);
  EXPECT_EQ(total, kBytes);
  EXPECT_TRUE(all_zero);
  EXPECT_GT(pieces, 10u) << "delivered as it arrives, not at the end";
  EXPECT_LE(largest, 1u << 20);
  EXPECT_LT(rss_after - rss_before, 6 * 1024)
      << "peak RSS grew by " << rss_after - rss_before << " KiB";
}

class DockerExitCode : public DockerContainerTest,
                       public ::testing::WithParamInterface<std::pair<const char*, int>> {};

TEST_P(DockerExitCode, ComesFromExecInspect) {
  Output o;
  auto code = client_->RunExec(id_, Shell(GetParam().first), o.Sink());
  ASSERT_TRUE(code) << code.error().ToString();
  EXPECT_EQ(*code, GetParam().second) << o.err;
}

INSTANTIATE_TEST_SUITE_P(Codes, DockerExitCode,
                         ::testing::Values(std::make_pair("true", 0), std::make_pair("exit 1", 1),
                                           std::make_pair("sandrun-no-such-command", 127),
                                           std::make_pair("exit 42", 42),
                                           std::make_pair("kill -TERM $$", 143)),
                         [](const auto& test_case) {
                           return "Exit" + std::to_string(test_case.param.second);
                         });

TEST_F(DockerExec, StdinRoundTripEndsAtEof) {
  docker::ExecSpec spec;
  spec.cmd = {"cat"};
  spec.attach_stdin = true;
  auto exec_id = client_->CreateExec(id_, spec);
  ASSERT_TRUE(exec_id) << exec_id.error().ToString();
  auto stream = client_->AttachExec(*exec_id, spec);
  ASSERT_TRUE(stream) << stream.error().ToString();
  std::string input;
  for (int i = 0; i < 2000; ++i) input += "line " + std::to_string(i) + "\n";  // ~20 KiB
  Output o;
  std::thread writer([&] {
    EXPECT_TRUE((*stream)->WriteStdin(input));
    EXPECT_TRUE((*stream)->CloseStdin());
  });
  CallOptions opts{Deadline::After(std::chrono::seconds(20)), nullptr};
  auto pumped = (*stream)->PumpToEnd(o.Sink(), opts);
  writer.join();
  ASSERT_TRUE(pumped) << pumped.error().ToString();
  EXPECT_EQ(o.out, input);
  auto code = client_->WaitExecExit(*exec_id);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 0);
}

TEST_F(DockerExec, TtyExecSeesItsSizeAndResizes) {
  docker::ExecSpec spec;
  spec.cmd = {"/bin/sh", "-c", "read a; stty size; read line; stty size; echo got:$line"};
  spec.tty = true;
  spec.attach_stdin = true;
  spec.console_size = std::make_pair(30u, 100u);
  exec::ExecTree tree = Marked(id_, spec);
  auto exec_id = client_->CreateExec(id_, spec);
  ASSERT_TRUE(exec_id) << exec_id.error().ToString();
  auto stream = client_->AttachExec(*exec_id, spec);
  ASSERT_TRUE(stream) << stream.error().ToString();

  std::mutex mu;
  std::condition_variable cv;
  std::string screen;
  auto sink = [&](docker::StreamKind kind, std::string_view bytes) {
    EXPECT_EQ(kind, docker::StreamKind::kStdout) << "a TTY merges everything";
    std::lock_guard<std::mutex> lock(mu);
    screen.append(bytes);
    cv.notify_all();
  };
  std::thread reader([&] {
    auto done = (*stream)->PumpToEnd(sink, {Deadline::After(std::chrono::seconds(20)), nullptr});
    EXPECT_TRUE(done) << done.error().ToString();
  });
  ASSERT_TRUE((*stream)->WriteStdin("first\r"));
  {
    std::unique_lock<std::mutex> lock(mu);
    bool sized = cv.wait_for(lock, std::chrono::seconds(10),
                             [&] { return screen.find("30 100") != std::string::npos; });
    if (!sized) (void)KillTree(*client_, tree, *exec_id);
    lock.unlock();
    if (!sized) reader.join();
    ASSERT_TRUE(sized) << screen;
  }
  ASSERT_TRUE(client_->ResizeExec(*exec_id, 40, 120));
  ASSERT_TRUE((*stream)->WriteStdin("hello\r"));
  reader.join();
  EXPECT_NE(screen.find("40 120"), std::string::npos) << screen;
  EXPECT_NE(screen.find("got:hello"), std::string::npos) << screen;
  EXPECT_NE(screen.find("\r\n"), std::string::npos) << "the TTY translates newlines";
  auto code = client_->WaitExecExit(*exec_id);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 0);
}

TEST_F(DockerExec, KilledMidStream) {
  docker::ExecSpec spec = Shell("i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.05; done");
  exec::ExecTree tree = Marked(id_, spec);
  auto exec_id = client_->CreateExec(id_, spec);
  ASSERT_TRUE(exec_id);
  std::atomic<int> ticks{0};
  Status streamed = Ok();
  auto start = std::chrono::steady_clock::now();
  std::thread runner([&] {
    streamed =
        client_->StartExec(*exec_id, false, [&](docker::StreamKind, std::string_view) { ++ticks; },
                           {Deadline::After(std::chrono::seconds(30)), nullptr});
  });
  while (ticks < 3 && std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(ticks.load(), 3);
  auto killed = KillTree(*client_, tree, *exec_id);
  ASSERT_TRUE(killed) << killed.error().ToString();
  runner.join();
  EXPECT_TRUE(streamed) << streamed.error().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  auto code = client_->WaitExecExit(*exec_id);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 137);
  // Nothing of it is left in the container.
  Output ps;
  ASSERT_TRUE(client_->RunExec(id_, Shell("ps -o args | grep -c '[t]ick' || true"), ps.Sink()));
  EXPECT_EQ(ps.out, "0\n");
}

TEST_F(DockerExec, DeadlineEndsAStreamThatWouldRunLong) {
  docker::ExecSpec spec = Shell("sleep 30");
  exec::ExecTree tree = Marked(id_, spec);
  auto exec_id = client_->CreateExec(id_, spec);
  ASSERT_TRUE(exec_id);
  auto start = std::chrono::steady_clock::now();
  auto streamed = client_->StartExec(*exec_id, false, nullptr,
                                     {Deadline::After(std::chrono::milliseconds(500)), nullptr});
  ASSERT_FALSE(streamed);
  EXPECT_EQ(streamed.error().code, sandrun::ErrorCode::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  ASSERT_TRUE(KillTree(*client_, tree, *exec_id));
}

TEST_F(DockerExec, ConcurrentExecsLoseNoOutput) {
  constexpr int kExecs = 8;
  std::vector<std::thread> threads;
  std::vector<std::string> outs(kExecs);
  std::vector<int64_t> codes(kExecs, -1);
  for (int i = 0; i < kExecs; ++i) {
    threads.emplace_back([&, i] {
      auto code = client_->RunExec(id_, Shell("seq 1 2000 | sed 's/^/" + std::to_string(i) + ":/'"),
                                   [&, i](docker::StreamKind, std::string_view b) {
                                     outs[static_cast<size_t>(i)].append(b);
                                   });
      if (code) codes[static_cast<size_t>(i)] = *code;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kExecs; ++i) {
    std::string expected;
    for (int n = 1; n <= 2000; ++n) expected += std::to_string(i) + ":" + std::to_string(n) + "\n";
    EXPECT_EQ(codes[static_cast<size_t>(i)], 0);
    EXPECT_EQ(outs[static_cast<size_t>(i)], expected) << "exec " << i;
  }
}

}  // namespace
}  // namespace sandrun::testing

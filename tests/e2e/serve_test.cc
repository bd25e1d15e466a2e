// `sandrun serve` with the real binary and dockerd: background sessions, the process tool, PTY
// sessions in the sandbox, scoping, restarts, events.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

class Serve : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    SANDRUN_REQUIRE_DOCKER(client);
    MinimalSandboxConfig();
    StartServer();
  }
  void TearDown() override {
    StopServer();
    SandrunHome::TearDown();
  }

  rapidjson::Document Process(std::vector<std::string> args, int expect_exit = 0) {
    args.insert(args.begin(), "process");
    auto r = Sandrun(args);
    EXPECT_EQ(r.exit_code, expect_exit) << r.out << r.err;
    return Parsed(r.out);
  }

  std::string Text(const rapidjson::Document& doc) {
    const auto* content = JsonMember(doc, "content");
    return content && content->IsArray() && !content->Empty() ? JsonString((*content)[0], "text")
                                                              : "";
  }

  // Starts a background exec; returns its session id.
  std::string Background(std::vector<std::string> flags, const std::string& command) {
    flags.insert(flags.begin(), {"--background", "--json"});
    auto r = Exec(flags, command);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto doc = Parsed(r.out);
    EXPECT_EQ(Details(doc, "status"), "running") << r.out;
    return Details(doc, "sessionId");
  }

  // Polls until the session's output holds `marker` (or 20 s): the command got that far.
  void WaitForOutput(const std::string& id, const std::string& marker) {
    std::string seen;
    for (int i = 0; i < 40 && seen.find(marker) == std::string::npos; ++i) {
      seen += Text(Process({"poll", "--session-id", id, "--timeout", "500"}));
    }
    ASSERT_NE(seen.find(marker), std::string::npos) << "session " << id << " printed: " << seen;
  }

  // GET /v1/events on the server's socket, read until the stream said "ready": the server
  // subscribes before that, so no later event is missed. The fd (10 s read timeout), or -1.
  int OpenEvents(std::string* got) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::string path = home_ + "/sandrun.sock";
    path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    const std::string req = "GET /v1/events HTTP/1.1\r\nHost: x\r\n\r\n";
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size()) ||
        !ReadUntil(fd, got, "event: ready")) {
      close(fd);
      return -1;
    }
    return fd;
  }
  // Appends what `fd` sends to `got` until it holds `marker`; false on EOF or the timeout.
  static bool ReadUntil(int fd, std::string* got, const std::string& marker) {
    char buf[4096];
    while (got->find(marker) == std::string::npos) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) return false;
      got->append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  // Polls until the session finished (or 20 s); returns the final poll. `seen`: every poll's
  // text, appended.
  rapidjson::Document PollUntilDone(const std::string& id, std::string* seen = nullptr) {
    for (int i = 0; i < 40; ++i) {
      auto doc = Process({"poll", "--session-id", id, "--timeout", "500"});
      if (seen != nullptr) *seen += Text(doc);
      if (Details(doc, "status") != "running") return doc;
    }
    ADD_FAILURE() << "session " << id << " did not finish";
    return Process({"poll", "--session-id", id});
  }
};

TEST_F(Serve, BackgroundSandboxCommandPollAndLogPaging) {
  std::string id = Background({}, "for i in $(seq 1 300); do echo line$i; done; sleep 0.3");
  EXPECT_NE(id.find('-'), std::string::npos) << "adjective-noun id: " << id;
  auto done = PollUntilDone(id);
  EXPECT_EQ(Details(done, "status"), "completed");
  EXPECT_NE(Text(done).find("Process exited with code 0."), std::string::npos) << Text(done);

  auto last = Process({"log", "--session-id", id});
  EXPECT_NE(Text(last).find("line300"), std::string::npos);
  EXPECT_EQ(Text(last).find("line100\n"), std::string::npos) << "only the last 200 lines";
  EXPECT_NE(Text(last).find("[showing last 200 of 300 lines; pass offset/limit to page]"),
            std::string::npos)
      << Text(last);
  auto page = Process({"log", "--session-id", id, "--offset", "10", "--limit", "3"});
  EXPECT_EQ(Text(page), "line11\nline12\nline13");
}

TEST_F(Serve, YieldMsBackgroundsSlowRunsAndNotFastOnes) {
  auto fast = Exec({"--json", "--yield-ms", "5000"}, "echo quick");
  auto fast_doc = Parsed(fast.out);
  EXPECT_EQ(Details(fast_doc, "status"), "completed") << fast.out;
  EXPECT_EQ(Details(fast_doc, "aggregated"), "quick");

  auto slow = Exec({"--json", "--yield-ms", "200"}, "sleep 1.5; echo late");
  auto slow_doc = Parsed(slow.out);
  ASSERT_EQ(Details(slow_doc, "status"), "running") << slow.out;
  EXPECT_NE(Text(slow_doc).find("Command still running (session " + Details(slow_doc, "sessionId")),
            std::string::npos);
  // Output can arrive in a poll that still says "running": collect every poll's text.
  std::string seen;
  auto done = PollUntilDone(Details(slow_doc, "sessionId"), &seen);
  EXPECT_EQ(Details(done, "status"), "completed");
  EXPECT_NE(seen.find("late"), std::string::npos) << seen;
}

TEST_F(Serve, PtySessionInTheSandboxDrivenBySendKeys) {
  std::string id = Background({"--pty"}, "echo ready; read line; echo got:$line; cat -v");
  WaitForOutput(id, "ready");
  Process({"send-keys", "--session-id", id, "--literal", "hello", "--keys", "Enter"});
  Process({"send-keys", "--session-id", id, "--keys", "Up", "--keys", "Enter"});
  Process({"paste", "--session-id", id, "--text", "pasted"});
  Process({"send-keys", "--session-id", id, "--keys", "Enter"});
  std::string seen;
  for (int i = 0; i < 20 && seen.find("201~") == std::string::npos; ++i) {
    seen += Text(Process({"poll", "--session-id", id, "--timeout", "300"}));
  }
  EXPECT_NE(seen.find("got:hello"), std::string::npos) << seen;
  EXPECT_NE(seen.find("^[[A"), std::string::npos) << "cat -v shows the Up arrow: " << seen;
  EXPECT_NE(seen.find("^[[200~pasted^[[201~"), std::string::npos) << "bracketed paste: " << seen;
  auto killed = Process({"kill", "--session-id", id});
  EXPECT_EQ(Text(killed), "Killed session " + id + ".");
}

TEST_F(Serve, WriteWithEofEndsCat) {
  std::string id = Background({}, "cat; echo after-eof");
  Process({"write", "--session-id", id, "--data", "abc\n", "--eof"});
  auto done = PollUntilDone(id);
  EXPECT_EQ(Details(done, "status"), "completed");
  // The whole output (a poll shows only what is new since the last one).
  auto log = Process({"log", "--session-id", id});
  EXPECT_NE(Text(log).find("abc\nafter-eof"), std::string::npos) << Text(log);
}

TEST_F(Serve, KillLeavesNoProcessInTheContainer) {
  std::string id = Background({}, "sleep 71.5 & echo started; sleep 71.5");
  WaitForOutput(id, "started");
  auto killed = Process({"kill", "--session-id", id});
  EXPECT_EQ(Details(killed, "status"), "failed");
  auto ps = Exec({}, "ps -o args | grep -c '[s]leep 71.5' || true");
  EXPECT_EQ(ps.out, "0\n") << "nothing of the killed session is left";
}

TEST_F(Serve, KillLeavesNoProcessOnTheHost) {
  StopServer();
  Config(R"({"sandbox": {"mode": "off"}})");
  StartServer();
  std::string id = Background({}, "sleep 72.5 & echo started; sleep 72.5");
  WaitForOutput(id, "started");
  ASSERT_EQ(RunProcess({"/usr/bin/pgrep", "-f", "sleep 72.5"}).exit_code, 0) << "it runs";
  Process({"kill", "--session-id", id});
  auto pgrep = RunProcess({"/usr/bin/pgrep", "-f", "sleep 72.5"});
  EXPECT_EQ(pgrep.exit_code, 1) << "pgrep found: " << pgrep.out;
}

TEST_F(Serve, AgentsCannotSeeEachOthersSessions) {
  std::string id = Background({}, "sleep 0.2; echo mine");
  auto other = Sandrun({"--agent", "intruder", "process", "poll", "--session-id", id});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.out.find("No session found for " + id), std::string::npos) << other.out;
  auto list = Sandrun({"--agent", "intruder", "process", "list"});
  EXPECT_NE(list.out.find("No running or recent sessions."), std::string::npos) << list.out;
}

TEST_F(Serve, FinishedSessionSurvivesARestart) {
  std::string id = Background({}, "echo before-restart; echo second line");
  PollUntilDone(id);
  StopServer();
  StartServer();
  auto log = Process({"log", "--session-id", id});
  EXPECT_EQ(Text(log), "before-restart\nsecond line") << Text(log);
  auto list = Process({"list"});
  EXPECT_NE(Text(list).find(id), std::string::npos);
}

TEST_F(Serve, TwentyConcurrentSessionsAllFinishWithCompleteOutput) {
  std::vector<std::string> ids(20);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ids.size(); ++i) {
    threads.emplace_back([&, i] {
      ids[i] = Background({}, "for n in $(seq 1 500); do echo s" + std::to_string(i) + "-$n; done");
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_FALSE(ids[i].empty());
    PollUntilDone(ids[i]);
    auto log = Process({"log", "--session-id", ids[i], "--offset", "0", "--limit", "1000"});
    std::string expected;
    for (int n = 1; n <= 500; ++n) {
      expected += "s" + std::to_string(i) + "-" + std::to_string(n) + (n < 500 ? "\n" : "");
    }
    EXPECT_EQ(Text(log), expected) << "session " << ids[i];
  }
}

TEST_F(Serve, BadProcessCallsGetOpenClawErrors) {
  auto unknown = Process({"frobnicate", "--session-id", "x"}, 2);
  EXPECT_NE(ToJson(unknown).find("Unknown action frobnicate"), std::string::npos);
  auto missing = Process({"poll"}, 2);
  EXPECT_NE(ToJson(missing).find("sessionId is required for this action."), std::string::npos);
  auto no_such = Process({"poll", "--session-id", "no-such"}, 2);
  EXPECT_NE(ToJson(no_such).find("No session found for no-such"), std::string::npos);
  auto bad = Call(R"({"tool":"process","action":"poll","sessionId":5})");
  EXPECT_EQ(bad.exit_code, 2);
}

TEST_F(Serve, EventsStreamReportsFinishedSessions) {
  std::string got;
  int fd = OpenEvents(&got);
  ASSERT_GE(fd, 0) << got;
  std::string id = Background({}, "echo event-tail");
  ReadUntil(fd, &got, "exec.finished");
  close(fd);
  EXPECT_NE(got.find("text/event-stream"), std::string::npos);
  EXPECT_NE(got.find("event: exec.finished"), std::string::npos) << got;
  EXPECT_NE(got.find("Exec completed (" + id.substr(0, 8)), std::string::npos) << got;
  EXPECT_NE(got.find("event-tail"), std::string::npos) << got;
}

// A background sandbox session that died from a signal says so in its poll and its event, as
// on the gateway; ^C in a PTY session reaches the command through the exec wrapper.
// (Before: "Process exited with code 139." / 130, status completed.)
TEST_F(Serve, SandboxSessionsEndedBySignalsSaySo) {
  std::string got;
  int fd = OpenEvents(&got);
  ASSERT_GE(fd, 0) << got;
  std::string id = Background({}, "echo segv-tail; kill -SEGV $$");
  auto done = PollUntilDone(id);
  EXPECT_EQ(Details(done, "status"), "failed") << ToJson(done);
  EXPECT_EQ(Details(done, "exitSignal"), "SIGSEGV") << ToJson(done);
  EXPECT_NE(Text(done).find("Command aborted by signal SIGSEGV"), std::string::npos) << Text(done);
  // The failure event itself (its session.started event names the command, tail and all).
  ReadUntil(fd, &got, "by signal SIGSEGV");
  close(fd);
  EXPECT_NE(got.find("Exec failed (" + id.substr(0, 8) +
                     ", signal SIGSEGV) :: Command aborted "
                     "by signal SIGSEGV"),
            std::string::npos)
      << got;

  std::string pty = Background({"--pty"}, "echo ready; sleep 300");
  WaitForOutput(pty, "ready");
  Process({"send-keys", "--session-id", pty, "--keys", "C-c"});
  auto interrupted = PollUntilDone(pty);
  EXPECT_EQ(Details(interrupted, "exitSignal"), "SIGINT") << ToJson(interrupted);
  EXPECT_NE(Text(interrupted).find("Command aborted by signal SIGINT"), std::string::npos)
      << Text(interrupted);
}

TEST(ProcessWithoutServer, IsRefusedWithAClearError) {
  char templ[] = "/tmp/sandrun-noserver-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  auto r = RunSandrun({"process", "list"}, {{"SANDRUN_HOME", templ}});
  rmdir(templ);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("sandrun serve"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sandrun::testing

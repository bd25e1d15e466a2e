// Approvals an operator answers and a caller waits on, through the binary and the local server
// (issue 15): `exec --wait` returns the approved command's output and exit code (122 without
// --wait, 122 with a hint without a server), a pending approval survives a restart, the
// "Exec running" notice arrives, `approvals list` renders the decision record, `approvals
// watch` answers through a PTY, and `policy check --elevated --session` sees the session's level.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "sandbox/os/pty.h"
#include "tests/e2e/tenant_server.h"

namespace sandrun::testing {
namespace {

using namespace std::chrono_literals;

size_t Occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A sandrun child with stdout and stderr in files; Wait gives its exit code.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
        const std::string& out, const std::string& err)
      : out_(out), err_(err) {
    pid_ = fork();
    if (pid_ == 0) {
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      int devnull = ::open("/dev/null", O_RDONLY);
      int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(devnull, 0);
      dup2(o, 1);
      dup2(e, 2);
      std::vector<const char*> argv = {SANDRUN_BINARY};
      for (const auto& a : args) argv.push_back(a.c_str());
      argv.push_back(nullptr);
      execv(SANDRUN_BINARY, const_cast<char* const*>(argv.data()));
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // The exit code, or -1 when it did not exit within `timeout`.
  int Wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(10ms);
    }
    return -1;
  }
  void Signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  std::string Out() const { return ReadWhole(out_); }
  std::string Err() const { return ReadWhole(err_); }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
};

class OperatorApprovalsTest : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    SANDRUN_REQUIRE_DOCKER(client);
    Config(R"({"sandbox": {"mode": "all", "docker": {"image": "sandrun-sandbox:minimal"}},)"
           R"( "tools": {"exec": {"loginShellPath": false, "approvalRunningNoticeMs": 300},)"
           R"( "elevated": {"enabled": true, "allowFrom": {"cli": ["*"], "api": ["*"]}}}})");
  }
  void TearDown() override {
    StopServer();
    SandrunHome::TearDown();
  }
  // Session B leaves the sandbox and asks for every command.
  void AskingSession() {
    auto set = Sandrun({"session", "set", "B", "--elevated", "on", "--ask", "always"});
    ASSERT_EQ(set.exit_code, 0) << set.out << set.err;
  }
  // The pending approvals as `approvals list --json` prints them.
  rapidjson::Document Listed() {
    auto list = Sandrun({"approvals", "list", "--json"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    return Parsed(list.out);
  }
  // Waits for `n` pending approvals; the first one's id.
  std::string AwaitPending(size_t n = 1) {
    for (int i = 0; i < 500; ++i) {
      auto doc = Listed();
      const auto* pending = JsonMember(doc, "pending");
      if (pending != nullptr && pending->IsArray() && pending->Size() >= n) {
        return JsonString((*pending)[0], "id");
      }
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << "no pending approval appeared";
    return "";
  }
  std::string Show(const std::string& id) {
    auto shown = Sandrun({"approvals", "show", id});
    EXPECT_EQ(shown.exit_code, 0) << shown.out << shown.err;
    return shown.out;
  }
};

TEST_F(OperatorApprovalsTest, ExecWaitReturnsTheApprovedCommandsOutputAndExitCode) {
  StartServer();
  AskingSession();
  Child waiting({"--workspace", workspace_, "--session", "B", "exec", "--wait", "--",
                 "echo approved-out; exit 7"},
                Env(), home_ + "/wait.out", home_ + "/wait.err");
  const std::string id = AwaitPending();
  ASSERT_FALSE(id.empty());
  // It waits: nothing ran yet and it did not exit.
  EXPECT_EQ(waiting.Wait(300ms), -1) << waiting.Err();
  auto approved = Sandrun({"approvals", "approve", id.substr(0, 8), "allow-once"});
  ASSERT_EQ(approved.exit_code, 0) << approved.out << approved.err;
  EXPECT_NE(approved.out.find("run by the waiting call"), std::string::npos) << approved.out;
  EXPECT_EQ(waiting.Wait(30s), 7) << waiting.Err();
  EXPECT_EQ(waiting.Out(), "approved-out\n");
  EXPECT_NE(waiting.Err().find("waiting for an operator to approve " + id), std::string::npos)
      << waiting.Err();
  EXPECT_NE(Show(id).find(R"("status":"approved")"), std::string::npos);

  // A denied wait is refused (125), nothing ran.
  Child denied({"--workspace", workspace_, "--session", "B", "exec", "--wait", "--",
                "touch " + marks_ + "/denied-ran"},
               Env(), home_ + "/deny.out", home_ + "/deny.err");
  const std::string second = AwaitPending();
  ASSERT_EQ(Sandrun({"approvals", "approve", second, "deny"}).exit_code, 0);
  EXPECT_EQ(denied.Wait(30s), 125) << denied.Err();
  EXPECT_NE(denied.Err().find("user-denied"), std::string::npos) << denied.Err();
  EXPECT_FALSE(std::filesystem::exists(marks_ + "/denied-ran"));
}

TEST_F(OperatorApprovalsTest, ACallWithWaitTrueAnswersWithTheApprovedRunsResult) {
  StartServer();
  AskingSession();
  Child call({"--workspace", workspace_, "--session", "B", "call",
              R"({"tool":"exec","command":"echo approved-call","wait":true})"},
             Env(), home_ + "/call.out", home_ + "/call.err");
  const std::string id = AwaitPending();
  ASSERT_EQ(Sandrun({"approvals", "approve", id, "allow-once"}).exit_code, 0);
  ASSERT_EQ(call.Wait(30s), 0) << call.Err();
  auto doc = Parsed(call.Out());
  EXPECT_EQ(Details(doc, "status"), "completed") << call.Out();
  EXPECT_NE(call.Out().find("approved-call"), std::string::npos) << call.Out();
}

TEST_F(OperatorApprovalsTest, AWaiterThatLeavesLeavesItPendingAndItRunsOnceInTheBackground) {
  StartServer();
  AskingSession();
  Child waiting({"--workspace", workspace_, "--session", "B", "exec", "--wait", "--",
                 "echo run >> " + marks_ + "/runs"},
                Env(), home_ + "/left.out", home_ + "/left.err");
  const std::string id = AwaitPending();
  for (int i = 0; i < 500 && ReadWhole(home_ + "/left.err").find("waiting") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(10ms);
  }
  waiting.Signal(SIGINT);  // Ctrl-C: it stops waiting, the approval stays
  EXPECT_EQ(waiting.Wait(10s), 122) << waiting.Err();
  EXPECT_NE(Show(id).find(R"("status":"pending")"), std::string::npos);
  auto approved = Sandrun({"approvals", "approve", id, "allow-once"});
  ASSERT_EQ(approved.exit_code, 0) << approved.out;
  EXPECT_NE(approved.out.find(R"("sessionId":")"), std::string::npos) << approved.out;
  for (int i = 0; i < 500 && ReadWhole(marks_ + "/runs").empty(); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(ReadWhole(marks_ + "/runs"), "run\n");
  // Once: one background session of the session's scope ran it, nothing else did.
  auto sessions = Sandrun({"--session", "B", "process", "list"});
  ASSERT_EQ(sessions.exit_code, 0) << sessions.err;
  EXPECT_EQ(Occurrences(sessions.out, "echo run >>"), 1u) << sessions.out << approved.out;
}

TEST_F(OperatorApprovalsTest, APlainWaitingCallWhoseClientLeavesLeavesItPending) {
  StartServer();
  AskingSession();
  // curl gives up after a second: the server notices, the approval stays pending.
  auto gone =
      RunProcess({Program("curl"), "-sS", "-m", "1", "--unix-socket", home_ + "/sandrun.sock", "-H",
                  "X-Sandrun-Session: B", "--data-binary",
                  R"({"tool":"exec","command":"echo run >> )" + marks_ + R"(/plain","wait":true})",
                  "http://sandrun/v1/tools/exec"});
  EXPECT_NE(gone.exit_code, 0);
  const std::string id = AwaitPending();
  // The server noticed: the call returned (it is counted once it has), nobody waits any more.
  const std::string returned =
      R"(sandrun_tool_calls_total{tenant="",tool="exec",decision="ask"} 1)";
  std::string metrics;
  for (int i = 0; i < 500 && metrics.find(returned) == std::string::npos; ++i) {
    metrics = RunProcess({Program("curl"), "-sS", "--unix-socket", home_ + "/sandrun.sock",
                          "http://sandrun/metrics"})
                  .out;
    if (metrics.find(returned) == std::string::npos) std::this_thread::sleep_for(10ms);
  }
  ASSERT_NE(metrics.find(returned), std::string::npos) << metrics;
  auto approved = Sandrun({"approvals", "approve", id, "allow-once"});
  ASSERT_EQ(approved.exit_code, 0) << approved.out;
  // Nobody waits for it any more: it ran as a background session, once.
  EXPECT_NE(approved.out.find(R"("sessionId":")"), std::string::npos) << approved.out;
  for (int i = 0; i < 500 && ReadWhole(marks_ + "/plain").empty(); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(ReadWhole(marks_ + "/plain"), "run\n");
}

TEST_F(OperatorApprovalsTest, ACommandTooLongToReviewIsRefusedNotQueued) {
  StartServer();
  AskingSession();
  auto r = Sandrun({"--session", "B", "exec", "--", "echo " + std::string(9000, 'x')});
  EXPECT_EQ(r.exit_code, 125) << r.out << r.err;
  EXPECT_NE(r.err.find("an operator can be asked to review"), std::string::npos) << r.err;
  EXPECT_EQ(JsonMember(Listed(), "pending")->Size(), 0u);
}

TEST_F(OperatorApprovalsTest, WithoutWaitAPendingApprovalExits122WithItsId) {
  StartServer();
  AskingSession();
  auto r = Sandrun({"--session", "B", "exec", "--", "echo later"});
  EXPECT_EQ(r.exit_code, 122) << r.err;
  const std::string id = AwaitPending();
  EXPECT_NE(r.out.find(id), std::string::npos) << r.out;
  auto shown = Show(id);
  EXPECT_NE(shown.find(R"("status":"pending")"), std::string::npos) << shown;
}

TEST_F(OperatorApprovalsTest, WaitWithoutAServerExits122WithAHintAndRunsNothing) {
  AskingSession();  // on the state file, no server
  auto r = Sandrun({"--session", "B", "exec", "--wait", "--", "touch " + marks_ + "/ran"});
  EXPECT_EQ(r.exit_code, 122) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("sandrun serve"), std::string::npos) << r.out << r.err;
  EXPECT_FALSE(std::filesystem::exists(marks_ + "/ran"));
}

TEST_F(OperatorApprovalsTest, APendingApprovalSurvivesARestartAndItsRunIsNoticed) {
  StartServer();
  AskingSession();
  ASSERT_EQ(Sandrun({"--session", "B", "exec", "--", "sleep 2; echo after-restart"}).exit_code,
            122);
  const std::string id = AwaitPending();
  StopServer();
  StartServer();
  EXPECT_EQ(AwaitPending(), id);  // the same approval, still pending
  // Events: the approval's resolution, then "Exec running" (approvalRunningNoticeMs 300) while
  // the 2 s command still runs, then its end.
  Streaming events({Program("curl"), "-sSN", "--unix-socket", home_ + "/sandrun.sock",
                    "http://sandrun/v1/events"},
                   home_ + "/events.out");
  ASSERT_TRUE(events.WaitFor("event: ready", 10s)) << events.Output();
  ASSERT_EQ(Sandrun({"approvals", "approve", id, "allow-once"}).exit_code, 0);
  ASSERT_TRUE(events.WaitFor("event: exec.running", 10s)) << events.Output();
  EXPECT_NE(events.Output().find("Exec running (gateway id=" + id + ", session="),
            std::string::npos)
      << events.Output();
  EXPECT_NE(events.Output().find(", >1s): sleep 2; echo after-restart"), std::string::npos);
  ASSERT_TRUE(events.WaitFor("event: exec.finished", 20s)) << events.Output();
  EXPECT_NE(events.Output().find("after-restart"), std::string::npos);
  EXPECT_NE(Show(id).find(R"("sessionId":")"), std::string::npos);
}

TEST_F(OperatorApprovalsTest, AnApprovalTheConfigNoLongerAsksForIsDroppedWithAnEvent) {
  StartServer();
  AskingSession();
  ASSERT_EQ(Sandrun({"--session", "B", "exec", "--", "echo x"}).exit_code, 122);
  const std::string id = AwaitPending();
  StopServer();
  // The operator takes the session back to the sandbox while the server is down.
  ASSERT_EQ(Sandrun({"session", "clear", "B"}).exit_code, 0);
  StartServer();
  auto doc = Listed();
  EXPECT_EQ(JsonMember(doc, "pending")->Size(), 0u);
  auto shown = Show(id);
  EXPECT_NE(shown.find(R"("status":"dropped")"), std::string::npos) << shown;
  EXPECT_NE(shown.find("no longer one an operator decides"), std::string::npos) << shown;
  // The event of it is in the ring (replayed from the start).
  const std::string ring = ReadWhole(home_ + "/events/ring.jsonl");
  EXPECT_NE(ring.find("Exec denied (gateway id=" + id + ", restart)"), std::string::npos) << ring;
}

TEST_F(OperatorApprovalsTest, ApprovalsListRendersTheDecisionRecord) {
  StartServer();
  AskingSession();
  ASSERT_EQ(Sandrun({"--session", "B", "exec", "--", "echo one"}).exit_code, 122);
  const std::string first = AwaitPending();
  ASSERT_EQ(Sandrun({"approvals", "approve", first, "allow-once"}).exit_code, 0);
  ASSERT_EQ(Sandrun({"--session", "B", "exec", "--", "echo two"}).exit_code, 122);
  const std::string second = AwaitPending();
  auto table = Sandrun({"approvals", "list"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("PENDING (1)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(second.substr(0, 8) + "  main/B"), std::string::npos) << table.out;
  ASSERT_EQ(Sandrun({"approvals", "approve", second, "deny"}).exit_code, 0);
  table = Sandrun({"approvals", "list"});
  EXPECT_NE(table.out.find("PENDING (0)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("DECIDED (2)"), std::string::npos) << table.out;
  // Newest first: the denial, then the approval, each with who answered.
  const size_t deny_at = table.out.find(second.substr(0, 8) + "  denied   deny");
  const size_t allow_at = table.out.find(first.substr(0, 8) + "  approved allow-once");
  ASSERT_NE(deny_at, std::string::npos) << table.out;
  ASSERT_NE(allow_at, std::string::npos) << table.out;
  EXPECT_LT(deny_at, allow_at);
  EXPECT_NE(table.out.find("root"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("echo one"), std::string::npos);
  // --json: the same record for machines.
  auto doc = Listed();
  ASSERT_EQ(JsonMember(doc, "decided")->Size(), 2u);
  EXPECT_EQ(JsonString((*JsonMember(doc, "decided"))[1], "decidedBy"), "root");
  // Without a server the record is read from disk.
  StopServer();
  auto offline = Sandrun({"approvals", "list"});
  EXPECT_NE(offline.out.find("DECIDED (2)"), std::string::npos) << offline.out;
}

TEST_F(OperatorApprovalsTest, ApprovalsWatchAnswersThroughAPty) {
  StartServer();
  AskingSession();
  ASSERT_EQ(Sandrun({"--session", "B", "exec", "--", "echo from-watch"}).exit_code, 122);
  const std::string id = AwaitPending();
  auto pty = OpenPty(30, 120);
  ASSERT_TRUE(pty) << pty.error().ToString();
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    ioctl(pty->slave.get(), TIOCSCTTY, 0);
    dup2(pty->slave.get(), 0);
    dup2(pty->slave.get(), 1);
    dup2(pty->slave.get(), 2);
    setenv("SANDRUN_HOME", home_.c_str(), 1);
    execl(SANDRUN_BINARY, SANDRUN_BINARY, "approvals", "watch", static_cast<char*>(nullptr));
    _exit(127);
  }
  pty->slave.reset();
  std::string seen;
  auto read_until = [&](const std::string& needle, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (seen.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{pty->master.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(pty->master.get(), buf, sizeof buf);
      if (n > 0) seen.append(buf, static_cast<size_t>(n));
    }
    return seen.find(needle) != std::string::npos;
  };
  ASSERT_TRUE(read_until("approve " + id.substr(0, 8) + "? [o]nce [d]eny [s]kip: ", 15s)) << seen;
  EXPECT_NE(seen.find("echo from-watch"), std::string::npos) << seen;
  ASSERT_EQ(::write(pty->master.get(), "o\n", 2), 2);
  EXPECT_TRUE(read_until("Exec approved (gateway id=" + id + ", allow-once", 15s)) << seen;
  ::kill(pid, SIGINT);
  int status = 0;
  for (int i = 0; i < 500 && ::waitpid(pid, &status, WNOHANG) != pid; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << seen;
  auto shown = Show(id);
  EXPECT_NE(shown.find(R"("status":"approved")"), std::string::npos) << shown;
  EXPECT_NE(shown.find(R"("decidedBy":"root")"), std::string::npos) << shown;
}

TEST_F(OperatorApprovalsTest, ApprovalsWatchWithoutATerminalOnlyReports) {
  StartServer();
  AskingSession();
  Child watch({"approvals", "watch"}, Env(), home_ + "/watch.out", home_ + "/watch.err");
  for (int i = 0; i < 500 && ReadWhole(home_ + "/watch.out").find("watching") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(Sandrun({"--session", "B", "exec", "--", "echo quiet"}).exit_code, 122);
  const std::string id = AwaitPending();
  for (int i = 0;
       i < 500 && ReadWhole(home_ + "/watch.out").find(id.substr(0, 8)) == std::string::npos; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_NE(ReadWhole(home_ + "/watch.out").find("approval " + id.substr(0, 8) + " requested"),
            std::string::npos)
      << ReadWhole(home_ + "/watch.out");
  // Nobody answered it.
  EXPECT_NE(Show(id).find(R"("status":"pending")"), std::string::npos);
}

TEST_F(OperatorApprovalsTest, PolicyCheckElevatedSeesTheSessionsLevel) {
  ASSERT_EQ(Sandrun({"session", "set", "A", "--elevated", "full"}).exit_code, 0);
  auto a = Sandrun({"--session", "A", "policy", "check", "--elevated", "--", "echo hi"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto doc = Parsed(a.out);
  EXPECT_EQ(JsonString(*JsonMember(doc, "host"), "effective"), "gateway") << a.out;
  EXPECT_EQ(JsonString(doc, "decision"), "allow") << a.out;
  EXPECT_EQ(JsonString(doc, "ask"), "off") << a.out;
  // Another session (no level): elevated asks, under the configured policy; without
  // --elevated the call stays in the sandbox.
  auto b = Parsed(Sandrun({"--session", "C", "policy", "check", "--", "echo hi"}).out);
  EXPECT_EQ(JsonString(*JsonMember(b, "host"), "effective"), "sandbox");
  auto plain = Parsed(Sandrun({"--session", "A", "policy", "check", "--", "echo hi"}).out);
  EXPECT_EQ(JsonString(*JsonMember(plain, "host"), "effective"), "gateway");
}

TEST_F(OperatorApprovalsTest, SessionCommandRefusesBadInputAndChangesNothing) {
  EXPECT_EQ(Sandrun({"session", "set", "A"}).exit_code, 2);
  auto bad = Sandrun({"session", "set", "A", "--elevated", "sometimes"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("Allowed values: off, on, ask, full"), std::string::npos) << bad.out;
  EXPECT_EQ(Sandrun({"session", "set", "a/b", "--elevated", "on"}).exit_code, 2);
  // tools.exec.host auto, sandboxed: a gateway override is not the operator's to give.
  auto host = Sandrun({"session", "set", "A", "--host", "gateway"});
  EXPECT_EQ(host.exit_code, 2);
  EXPECT_NE(host.out.find("host-not-allowed"), std::string::npos) << host.out;
  auto list = Sandrun({"session", "list"});
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_NE(list.out.find("no session of agent main has overrides"), std::string::npos) << list.out;
  ASSERT_EQ(Sandrun({"session", "set", "A", "--elevated", "ask", "--ask", "on-miss"}).exit_code, 0);
  list = Sandrun({"session", "list"});
  EXPECT_NE(list.out.find("on-miss"), std::string::npos) << list.out;
  EXPECT_EQ(Sandrun({"session", "clear", "A"}).exit_code, 0);
  EXPECT_NE(Sandrun({"session", "show", "A"}).out.find(R"("exec":{})"), std::string::npos);
}

}  // namespace
}  // namespace sandrun::testing

// The sandbox agent (the fast path): commands go through the agent in each container, with the
// same semantics as the Engine API exec (a subset runs on both paths and compares); a command
// cannot kill, stop, trace or read the agent, reach its socket or read its secret, and other
// commands' results stay right meanwhile; a kill or timeout leaves nothing of the tree; a server
// restart re-attaches to running commands without losing the output printed meanwhile; without
// the agent the Engine API exec runs the command, with a warning.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "tests/e2e/session_home.h"

namespace sandrun::testing {
namespace {

// Prints the pid of the agent process in the container (found by its command line).
constexpr char kAgentPid[] =
    "a=; for p in /proc/[0-9]*; do "
    "if tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q '^/.sandrun/agent serve'; then "
    "a=${p#/proc/}; fi; done; ";

class SandboxAgent : public SessionHome {
 protected:
  void SetUp() override {
    SessionHome::SetUp();
    SANDRUN_REQUIRE_DOCKER(client);
    MinimalSandboxConfig("\"workspaceAccess\": \"rw\"");
  }
  // The small image, the workspace mounted, the agent used or not; `top` more top-level members.
  void SandboxConfig(bool agent, const std::string& docker_extra = "",
                     const std::string& top = "") {
    Config(
        R"({"sandbox": {"workspaceAccess": "rw", "docker": {"image": "sandrun-sandbox:minimal")" +
        std::string(agent ? "" : R"(, "execAgent": false)") + docker_extra + "}}" +
        (top.empty() ? "" : ", " + top) + "}");
  }
  // The whole log of a session, as `process log` gives it (lines joined by newlines).
  std::string LogText(const std::string& id) {
    auto doc = Process({"log", "--session-id", id});
    const auto* content = JsonMember(doc, "content");
    if (content == nullptr || !content->IsArray() || content->GetArray().Empty()) return "";
    return JsonString(content->GetArray()[0], "text");
  }
  // Processes in the sandbox whose command line starts with `sleep 30`.
  std::string SleepersInTheSandbox() { return CountInTheSandbox("^sleep 3[0]"); }
};

TEST_F(SandboxAgent, CommandsRunThroughTheAgentAsTheSandboxUserWithNoCapabilities) {
  auto r = Exec({}, std::string(kAgentPid) +
                        "echo agent=${a:+yes}; tr '\\0' ' ' < /proc/1/cmdline; echo; id -u; id -g; "
                        "grep -E '^Cap(Prm|Eff|Inh|Amb)' /proc/self/status | tr -d '\\t'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "agent=yes\n/sbin/docker-init -- /.sandrun/agent serve /.sandrun/agent.d \n65534\n"
            "65534\nCapInh:0000000000000000\nCapPrm:0000000000000000\n"
            "CapEff:0000000000000000\nCapAmb:0000000000000000\n");
  EXPECT_EQ(r.err.find("Warning"), std::string::npos) << r.err;
  auto doctor = Sandrun({"doctor"});
  EXPECT_NE(doctor.out.find("sandbox agent: "), std::string::npos) << doctor.out;
}

// What a command in the sandbox may try against the agent: every attempt fails, and the agent
// keeps serving (the same container runs the next command).
TEST_F(SandboxAgent, ACommandCannotKillStopTraceOrReadTheAgentNorReachItsSocket) {
  // A static probe, built on the host, run in the sandbox: ptrace, /proc/<agent>/mem and a
  // connect() to the socket, each printing the errno it got.
  const std::string src = workspace_ + "/probe.c";
  std::ofstream(src) << R"c(
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
int main(int argc, char** argv) {
  int pid = atoi(argv[1]);
  if (ptrace(PTRACE_ATTACH, pid, 0, 0) == 0) puts("ptrace-attached");
  else printf("ptrace:%s\n", strerror(errno));
  if (ptrace(PTRACE_SEIZE, pid, 0, 0) == 0) puts("ptrace-seized");
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/mem", pid);
  int fd = open(path, O_RDONLY);
  if (fd >= 0) puts("mem-opened"); else printf("mem:%s\n", strerror(errno));
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {0};
  a.sun_family = AF_UNIX;
  strcpy(a.sun_path, "/.sandrun/agent.d/sock");
  if (connect(s, (struct sockaddr*)&a, sizeof a) == 0) puts("socket-connected");
  else printf("connect:%s\n", strerror(errno));
  return 0;
}
)c";
  auto cc = RunProcess({"/usr/bin/cc", "-static", "-O1", "-o", workspace_ + "/probe", src});
  ASSERT_EQ(cc.exit_code, 0) << cc.err;
  auto first = Exec({}, "echo warm");
  ASSERT_EQ(first.exit_code, 0) << first.err;

  auto r = Exec({}, std::string(kAgentPid) +
                        "[ -n \"$a\" ] || { echo no-agent; exit 9; }; "
                        "kill -9 $a 2>/dev/null && echo killed-agent; "
                        "kill -STOP $a 2>/dev/null && echo stopped-agent; "
                        "kill -9 1 2>/dev/null && echo killed-init; "
                        "cat /proc/$a/environ >/dev/null 2>&1 && echo read-environ; "
                        "ls /proc/$a/fd >/dev/null 2>&1 && echo listed-fds; "
                        "cat /.sandrun/agent.d/secret >/dev/null 2>&1 && echo read-secret; "
                        "ls /.sandrun/agent.d >/dev/null 2>&1 && echo listed-dir; "
                        "touch /.sandrun/agent.d/x 2>/dev/null && echo wrote-dir; "
                        "touch /.sandrun/agent 2>/dev/null && echo wrote-binary; "
                        "/workspace/probe $a");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("killed"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("stopped-agent"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("read-"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("listed-"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("wrote-"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ptrace:Operation not permitted"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("ptrace-"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mem:Permission denied"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("connect:Permission denied"), std::string::npos) << r.out;

  auto after = Exec({}, "echo still-served");
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out, "still-served\n");
  EXPECT_EQ(after.err.find("Warning"), std::string::npos)
      << "the same agent served it: " << after.err;
  EXPECT_EQ(ContainerCount(), 1u);
}

// Commands running while another one attacks the agent keep their own output and exit codes.
TEST_F(SandboxAgent, OtherCommandsResultsStayRightWhileOneAttacks) {
  ASSERT_EQ(Exec({}, "true").exit_code, 0);
  constexpr int kRuns = 8;
  std::vector<ProcessResult> results(kRuns);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRuns; ++i) {
    threads.emplace_back([&, i] {
      const std::string n = std::to_string(i);
      results[static_cast<size_t>(i)] =
          Exec({}, "echo start-" + n + "; sleep 0.3; echo end-" + n + " >&2; exit " + n);
    });
  }
  // (Commands share one uid, as with the Engine API exec: one can signal another's processes;
  // what it must not reach is the agent, which reports every command's end.)
  auto attack = Exec({}, std::string(kAgentPid) +
                             "for s in TERM KILL STOP INT HUP; do kill -$s $a 1 2>/dev/null && "
                             "echo hit-$s; done; echo attacked");
  for (auto& t : threads) t.join();
  EXPECT_EQ(attack.out, "attacked\n") << attack.err;
  for (int i = 0; i < kRuns; ++i) {
    const auto& r = results[static_cast<size_t>(i)];
    const std::string n = std::to_string(i);
    EXPECT_EQ(r.exit_code, i) << r.out << r.err;
    EXPECT_EQ(r.out, "start-" + n + "\n") << i;
    EXPECT_NE(r.err.find("end-" + n + "\n"), std::string::npos) << i << ": " << r.err;
  }
}

TEST_F(SandboxAgent, AProcessKillOfASessionLeavesNothingOfItsTree) {
  StartServer();
  const std::string id = Background(
      "sleep 301 & setsid sleep 302 & (sleep 303 &); "
      "sh -c 'trap \"\" TERM HUP INT; sleep 304' & touch /workspace/started; sleep 305");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(WaitForFile(workspace_ + "/started"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(SleepersInTheSandbox(), "5");
  Process({"kill", "--session-id", id});
  auto done = PollUntilDone(id);
  EXPECT_NE(Details(done, "status"), "running");
  EXPECT_EQ(SleepersInTheSandbox(), "0") << "the kill left part of the tree";
}

TEST_F(SandboxAgent, ATimeoutLeavesNothingOfTheTree) {
  auto r = Exec({"--timeout", "2"},
                "sleep 301 & setsid sleep 302 & (sleep 303 &); "
                "sh -c 'trap \"\" TERM HUP INT; sleep 304' & sleep 305");
  EXPECT_EQ(r.exit_code, 124) << r.out << r.err;
  EXPECT_EQ(SleepersInTheSandbox(), "0") << "the timeout left part of the tree";
}

// What leaves the tree after the command's first process ended (a setsid'd grandchild), what
// hops from process to process in new sessions faster than a kill reads the process table, and
// what a one-shot runner that dies leaves: all of it ends with the command.
TEST_F(SandboxAgent, NothingEscapesTheTreeKillByDetachingOrHopping) {
  auto late = Exec({"--timeout", "3"}, "sh -c 'sleep 1; (setsid sleep 3001 &); sleep 1' & exit 0");
  EXPECT_EQ(late.exit_code, 124) << late.out << late.err;
  std::ofstream(workspace_ + "/hop.sh")
      << "trap '' TERM HUP INT; sleep 0.05; setsid sh /workspace/hop.sh & exit 0\n";
  auto hop = Exec({"--timeout", "2"}, "sh /workspace/hop.sh; sleep 3002");
  EXPECT_EQ(hop.exit_code, 124) << hop.out << hop.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(CountInTheSandbox("^sh /workspace/ho[p]"), "0") << "a hopper got away";
  EXPECT_EQ(SleepersInTheSandbox(), "0") << "a detached sleeper got away";
}

// One command's timeout ends its own tree only: what another, finished command left running
// (a daemon of its own) stays.
TEST_F(SandboxAgent, ATimeoutEndsOnlyItsOwnTree) {
  auto daemon = Exec({}, "setsid sleep 3005 >/dev/null 2>&1 & exit 0");
  EXPECT_EQ(daemon.exit_code, 0) << daemon.err;
  auto timed = Exec({"--timeout", "2"}, "sleep 3006 & exit 0");
  EXPECT_EQ(timed.exit_code, 124) << timed.out << timed.err;
  EXPECT_EQ(CountInTheSandbox("^sleep 300[6]"), "0");
  EXPECT_EQ(CountInTheSandbox("^sleep 300[5]"), "1") << "another command's daemon was killed";
}

// The server dies (SIGKILL) while a session prints; the command goes on printing; the next
// server re-attaches through the agent: every line is there once, in order, and the exit code.
TEST_F(SandboxAgent, ARestartReattachesWithoutLosingOutput) {
  StartServer();
  const std::string id = Background(
      "i=0; while [ $i -lt 60 ]; do echo line-$i; i=$((i+1)); "
      "[ $i = 10 ] && touch /workspace/started; sleep 0.05; done; exit 7");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(WaitForFile(workspace_ + "/started"));
  CrashServer();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // it prints meanwhile
  StartServer();
  auto done = PollUntilDone(id);
  const auto* details = JsonMember(done, "details");
  ASSERT_NE(details, nullptr);
  EXPECT_EQ(JsonInt(*details, "exitCode"), 7) << ToJson(done);
  std::string want;
  for (int i = 0; i < 60; ++i) want += (i ? "\n" : "") + std::string("line-") + std::to_string(i);
  EXPECT_EQ(LogText(id), want);
}

// A graceful stop leaves a background sandbox session running in the agent; the next server
// takes it over with its output, and its kill still works.
TEST_F(SandboxAgent, AGracefulRestartLeavesTheSessionRunningAndReattaches) {
  StartServer();
  const std::string id = Background(
      "echo before; touch /workspace/started; "
      "while [ ! -e /workspace/go ]; do sleep 0.05; done; echo after; sleep 300");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(WaitForFile(workspace_ + "/started"));
  StopServer();
  std::ofstream(workspace_ + "/go") << "";
  StartServer();
  for (int i = 0; i < 100 && LogText(id) != "before\nafter"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(LogText(id), "before\nafter") << "printed while no server ran";
  EXPECT_EQ(Details(Process({"poll", "--session-id", id}), "status"), "running");
  Process({"kill", "--session-id", id});
  auto done = PollUntilDone(id);
  EXPECT_NE(Details(done, "status"), "running");
  EXPECT_EQ(SleepersInTheSandbox(), "0");
}

// The environment, identity, directory and limits a command sees are the Engine API exec's.
TEST_F(SandboxAgent, ACommandSeesTheSameEnvironmentOnBothPaths) {
  const std::string script =
      "env | grep -v -e '^HOSTNAME=' -e '^SANDRUN_EXEC_TOKEN=' | sort; id; pwd; umask; ulimit -n; "
      "ulimit -u; cat /proc/self/status | grep -E "
      "'^(Uid|Gid|Groups|NoNewPrivs|Seccomp|CapPrm|CapEff)'";
  auto agent = Exec({"--env", "FOO=bar"}, script);
  ASSERT_EQ(agent.exit_code, 0) << agent.err;
  SandboxConfig(false);
  auto engine = Exec({"--env", "FOO=bar"}, script);
  ASSERT_EQ(engine.exit_code, 0) << engine.err;
  EXPECT_EQ(agent.out, engine.out);
  EXPECT_NE(agent.out.find("FOO=bar\n"), std::string::npos) << agent.out;
}

TEST_F(SandboxAgent, WithoutTheAgentBinaryTheEngineApiRunsTheCommandWithAWarning) {
  const std::string dir = home_ + "-bin";
  std::filesystem::create_directories(dir);
  auto [binary, profiles] = PublicCopyOfSandrun(dir);
  auto env = Env();
  env["SANDRUN_PROFILES_DIR"] = profiles;
  auto r = RunProcess({binary, "--workspace", workspace_, "exec", "--", "echo via-engine"}, env);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "via-engine\n");
  EXPECT_NE(r.err.find("no sandbox agent"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Engine API exec"), std::string::npos) << r.err;
}

TEST_F(SandboxAgent, ExecAgentFalseRunsEverythingThroughTheEngineApiWithoutAWarning) {
  SandboxConfig(false);
  auto r = Exec({}, "tr '\\0' ' ' < /proc/1/cmdline; echo; echo $SANDRUN_EXEC_TOKEN | wc -c");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("/sbin/docker-init -- sleep infinity", 0), 0u) << r.out;
  EXPECT_EQ(r.err.find("Warning"), std::string::npos) << r.err;
  auto bad = Sandrun({"doctor"});
  EXPECT_NE(bad.out.find("execAgent is false"), std::string::npos) << bad.out;
}

TEST_F(SandboxAgent, ANonBooleanExecAgentIsRefusedAndNothingRuns) {
  SandboxConfig(true, R"(, "execAgent": 1)");
  auto r = Exec({}, "touch /workspace/ran");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("execAgent"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(workspace_ + "/ran"));
}

// The same commands on both paths: the agent's semantics are the Engine API exec's.
class ExecPaths : public SandboxAgent, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    SandboxAgent::SetUp();
    SandboxConfig(GetParam(), "", R"("tools": {"exec": {"pathPrepend": ["/opt/tools/bin"]}})");
  }
};

TEST_P(ExecPaths, ExitCodesStreamsAndSignals) {
  auto r = Exec({}, "echo out; echo err >&2; exit 3");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_NE(r.err.find("err\n"), std::string::npos) << r.err;
  auto sig = Exec({"--json"}, "kill -SEGV $$");
  EXPECT_EQ(Details(Parsed(sig.out), "signal"), "SIGSEGV") << sig.out;
  auto code = Exec({"--json"}, "exit 139");
  EXPECT_EQ(JsonInt(*JsonMember(Parsed(code.out), "details"), "exitCode"), 139) << code.out;
}

TEST_P(ExecPaths, PathInjectionSurvivesTheLoginProfile) {
  auto r = Exec({"--env", "PATH=/custom/bin"}, "echo \"$PATH|${SANDRUN_PREPEND_PATH-unset}\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "/opt/tools/bin:/custom/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:"
            "/bin|unset\n");
}

TEST_P(ExecPaths, APtyIsATerminalOfTheRequestedSize) {
  auto r = Exec({"--pty"}, "tty; stty size");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("/dev/pts/"), std::string::npos) << r.out;
}

TEST_P(ExecPaths, StdinOfABackgroundSessionAndItsKill) {
  StartServer();
  const std::string id = Background("read line; echo got-$line; sleep 300");
  ASSERT_FALSE(id.empty());
  Process({"write", "--session-id", id, "--data", "hello\n"});
  for (int i = 0; i < 100 && LogText(id) != "got-hello"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(LogText(id), "got-hello");
  Process({"kill", "--session-id", id});
  auto done = PollUntilDone(id);
  EXPECT_NE(Details(done, "status"), "running");
  EXPECT_EQ(SleepersInTheSandbox(), "0");
}

INSTANTIATE_TEST_SUITE_P(AgentAndEngine, ExecPaths, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Agent" : "EngineApi";
                         });

}  // namespace
}  // namespace sandrun::testing

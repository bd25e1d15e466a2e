// A timed-out or killed command leaves nothing behind, through the sandrun binary: gateway
// commands whose children called setsid or double-forked (a one-shot `exec --timeout`, a
// server session killed with `process kill`, a server shut down with a session running, a
// runner killed with SIGKILL in the middle of a run), and a sandboxed command in the minimal
// image (checked with `ps` in the container); `doctor` names the mechanism. No run cgroup is
// left behind by any of it. A runner or server killed with SIGKILL takes its commands' leaders
// with it (the parent-death signal), except sessions of `serve --keep-host-processes`.
//
// The commands wait until their children have exec'd (pid files in a world-writable scratch
// dir, then /proc/<pid>/cmdline) before they go on; a survivor is found by its unique command
// line ("sleep 1000.<test pid><k>").
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/os/cgroup.h"
#include "sandbox/os/file.h"
#include "sandbox/os/proc_table.h"
#include "sandbox/os/unique_fd.h"
#include "tests/e2e/sandrun_home.h"
#include "tests/support/live_processes.h"

namespace sandrun::testing {
namespace {

using std::chrono::milliseconds;

// Run cgroups whose owner is gone and that are empty: a normal exit path that forgot to remove
// one (a killed runner leaves populated ones, which the next run removes). Read twice, a moment
// apart: another process may be removing a stale one right now.
std::vector<std::string> LeakedRunCgroupsNow();
std::vector<std::string> LeakedRunCgroups() {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::vector<std::string> leaked = LeakedRunCgroupsNow();
  while (!leaked.empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(50));
    leaked = LeakedRunCgroupsNow();
  }
  return leaked;
}
std::vector<std::string> LeakedRunCgroupsNow() {
  std::vector<std::string> out;
  CgroupSupport support = RunCgroupSupport();
  if (!support.usable) return out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(support.parent, ec)) {
    std::string name = e.path().filename().string();
    long pid = 0;
    unsigned long long start = 0;
    unsigned n = 0;
    if (std::sscanf(name.c_str(), "sandrun-%ld-%llu-%u", &pid, &start, &n) != 3) continue;
    auto owner = ReadProcStat(static_cast<pid_t>(pid));
    if (owner && owner->start_ticks == start) continue;
    std::string procs;
    if (auto text = ReadFile(e.path().string() + "/cgroup.procs")) procs = *text;
    if (procs.empty()) out.push_back(name);
  }
  return out;
}

class ProcessTrees : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    char tmpl[] = "/tmp/sandrun-trees-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    scratch_ = tmpl;
    // Host commands may run as another user (tools.exec.hostUser): the pid files go here.
    ::chmod(scratch_.c_str(), 01777);
  }
  void TearDown() override {
    StopServer();
    for (const auto& args : sleepers_) {
      std::vector<pid_t> left = LiveWithArgs(args);
      for (pid_t pid : left) ::kill(pid, SIGKILL);
      EXPECT_TRUE(left.empty()) << args << " survived";
    }
    EXPECT_EQ(LeakedRunCgroups(), std::vector<std::string>{});
    std::error_code ec;
    std::filesystem::remove_all(scratch_, ec);
    SandrunHome::TearDown();
  }

  std::string Sleeper(int k) {
    return "sleep 1000." + std::to_string(::getpid()) + std::to_string(k);
  }

  // Shell text: start a child that writes its pid file and execs sleeper k, through `how`
  // (X is the child), then wait until the sleeper runs.
  std::string Child(int k, const std::string& how) {
    std::string args = Sleeper(k);
    sleepers_.push_back(args);
    std::string file = scratch_ + "/p" + std::to_string(k);
    std::string child = "sh -c 'echo $$ > " + file + "; exec " + args + "'";
    std::string start = how;
    start.replace(start.find('X'), 1, child);
    return start + "\nuntil [ -s " + file + " ] && [ \"$(tr '\\0' ' ' < /proc/$(cat " + file +
           ")/cmdline)\" = '" + args + " ' ]; do sleep 0.01; done\n";
  }

  // A one-shot `sandrun exec` as a child of the test, so that it can be killed.
  pid_t SpawnExec(const std::string& command) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("SANDRUN_HOME", home_.c_str(), 1);
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      ::execl(SANDRUN_BINARY, SANDRUN_BINARY, "--workspace", workspace_.c_str(), "exec", "--",
              command.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  }

  std::string BackgroundId(const std::string& command) {
    auto r = Exec({"--background", "--json"}, command);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto doc = Parsed(r.out);
    EXPECT_EQ(Details(doc, "status"), "running") << r.out;
    return Details(doc, "sessionId");
  }

  // `serve --keep-host-processes`, ready for calls.
  void StartKeepingServer() {
    server_pid_ = ::fork();
    if (server_pid_ == 0) {
      ::setenv("SANDRUN_HOME", home_.c_str(), 1);
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      ::execl(SANDRUN_BINARY, SANDRUN_BINARY, "--workspace", workspace_.c_str(), "serve",
              "--keep-host-processes", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 200 && Sandrun({"process", "list"}).exit_code != 0; ++i) {
      std::this_thread::sleep_for(milliseconds(25));
    }
  }

  // The server dies without a chance to clean up.
  void CrashServer() {
    ASSERT_GT(server_pid_, 0);
    ::kill(server_pid_, SIGKILL);
    ::waitpid(server_pid_, nullptr, 0);  // reaped: its exit has sent the parent-death signals
    server_pid_ = -1;
  }

  // Shell text: the shell itself becomes sleeper k, the command's leader.
  std::string Leader(int k) {
    sleepers_.push_back(Sleeper(k));
    return "exec " + Sleeper(k);
  }

  // A pidfd of the running sleeper k (the test is not its parent, so no waitpid).
  UniqueFd PidfdOf(int k) {
    std::vector<pid_t> pids = LiveWithArgs(Sleeper(k));
    if (pids.size() != 1u) return UniqueFd();
    return UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pids.front(), 0)));
  }

  // Whether the process of `pidfd` exits within 20 s.
  static bool Exits(const UniqueFd& pidfd) {
    pollfd p{pidfd.get(), POLLIN, 0};
    return pidfd.valid() && ::poll(&p, 1, 20000) == 1;
  }

  bool Running(int k) { return RunsWithin(Sleeper(k), milliseconds(20000)); }
  bool Gone(int k) { return LiveWithArgs(Sleeper(k)).empty(); }

  std::string scratch_;
  std::vector<std::string> sleepers_;
};

TEST_F(ProcessTrees, GatewayTimeoutKillsSetsidChildrenAndDoubleForks) {
  // (Before: both sleepers survived the call, which only killed the shell's process group.)
  Config(R"({"sandbox": {"mode": "off"}})");
  auto r = Exec({"--timeout", "2"},
                Child(1, "setsid X &") + Child(2, "(setsid X &)") + "echo started; sleep 100");
  EXPECT_EQ(r.out, "started\n") << r.err;
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_TRUE(Gone(1));
  EXPECT_TRUE(Gone(2));
}

TEST_F(ProcessTrees, ProcessKillOfAGatewaySessionKillsItsWholeTree) {
  // (Before: the double-forked child survived `process kill`.)
  Config(R"({"sandbox": {"mode": "off"}})");
  StartServer();
  std::string id = BackgroundId(Child(3, "(setsid X &)") + "exec " + Sleeper(4));
  sleepers_.push_back(Sleeper(4));
  ASSERT_TRUE(Running(4));
  auto killed = Sandrun({"process", "kill", "--session-id", id});
  EXPECT_EQ(killed.exit_code, 0) << killed.out << killed.err;
  EXPECT_NE(killed.out.find("Killed session " + id + "."), std::string::npos) << killed.out;
  EXPECT_TRUE(Gone(3));
  EXPECT_TRUE(Gone(4));
}

TEST_F(ProcessTrees, ServerShutdownKillsTheTreesOfGatewaySessions) {
  // (Before: the double-forked child outlived the server.)
  Config(R"({"sandbox": {"mode": "off"}})");
  StartServer();
  BackgroundId(Child(5, "(setsid X &)") + "sleep 100");
  ASSERT_TRUE(Running(5));
  StopServer();
  EXPECT_TRUE(Gone(5));
}

TEST_F(ProcessTrees, KeptHostSessionsOutliveTheServerUntrackedWithoutACgroup) {
  // `serve --keep-host-processes` leaves gateway sessions running on purpose: their processes
  // leave the server's run cgroups at exit, which are removed.
  Config(R"({"sandbox": {"mode": "off"}})");
  StartKeepingServer();
  const pid_t server = server_pid_;
  BackgroundId(Child(7, "(setsid X &)") + "exec " + Sleeper(8));
  ASSERT_TRUE(Running(8));
  StopServer();
  std::vector<pid_t> kept = LiveWithArgs(Sleeper(7));
  std::vector<pid_t> leader = LiveWithArgs(Sleeper(8));
  EXPECT_EQ(kept.size(), 1u);
  EXPECT_EQ(leader.size(), 1u);
  const std::string prefix = "sandrun-" + std::to_string(server) + "-";
  if (RunCgroupSupport().usable) {
    for (const auto& e : std::filesystem::directory_iterator(RunCgroupSupport().parent)) {
      EXPECT_NE(e.path().filename().string().rfind(prefix, 0), 0u) << e.path() << " was left";
    }
  }
  for (pid_t pid : kept) ::kill(pid, SIGKILL);
  for (pid_t pid : leader) ::kill(pid, SIGKILL);
  sleepers_.clear();
}

// The command's leader dies with a runner killed with SIGKILL (PR_SET_PDEATHSIG), whichever
// thread started it; what it started itself is left to the next run (below). (Before: the
// leader ran on until the next run's cleanup.) The next run here removes the dead runner's
// run cgroup.
TEST_F(ProcessTrees, AOneShotRunnerKilledWithSIGKILLTakesItsCommandWithIt) {
  Config(R"({"sandbox": {"mode": "off"}})");
  pid_t runner = SpawnExec(Leader(11));
  ASSERT_TRUE(Running(11));
  UniqueFd leader = PidfdOf(11);
  ASSERT_TRUE(leader.valid());
  ::kill(runner, SIGKILL);
  ::waitpid(runner, nullptr, 0);
  EXPECT_TRUE(Exits(leader));
  EXPECT_EQ(Exec({}, "echo next").out, "next\n");
}

TEST_F(ProcessTrees, AServerKilledWithSIGKILLTakesItsGatewaySessionsWithIt) {
  // The session was started by one of the server's request threads, long gone by now.
  Config(R"({"sandbox": {"mode": "off"}})");
  StartServer();
  BackgroundId(Leader(12));
  ASSERT_TRUE(Running(12));
  UniqueFd leader = PidfdOf(12);
  ASSERT_TRUE(leader.valid());
  CrashServer();
  EXPECT_TRUE(Exits(leader));
  EXPECT_EQ(Exec({}, "echo next").out, "next\n");
}

TEST_F(ProcessTrees, KeptHostSessionsOutliveAServerKilledWithSIGKILL) {
  // With --keep-host-processes the session is not tied to the server's life: after the crash,
  // and after the next sandrun run swept what the crashed server left (it releases a kept run's
  // cgroup instead of killing it), it still reads a line from a FIFO (the test holds the FIFO
  // open, so a dead reader would leave the line unread) and answers in a file, then ends.
  Config(R"({"sandbox": {"mode": "off"}})");
  const std::string fifo = scratch_ + "/in13";
  const std::string answer = scratch_ + "/out13";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  ASSERT_EQ(::chmod(fifo.c_str(), 0666), 0);  // the command may run as the host user
  UniqueFd hold(::open(fifo.c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(hold.valid());
  StartKeepingServer();
  const pid_t server = server_pid_;
  std::string id = BackgroundId("read line < " + fifo + "; echo \"$line\" > " + answer);
  ASSERT_FALSE(id.empty());
  CrashServer();
  EXPECT_EQ(Exec({}, "echo next").out, "next\n");  // sweeps the crashed server's run cgroups
  ASSERT_EQ(::write(hold.get(), "alive\n", 6), 6);
  std::string said;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       said != "alive\n" && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(milliseconds(10));
    if (auto text = ReadFile(answer)) said = *text;
  }
  EXPECT_EQ(said, "alive\n") << "the kept session was killed by the next run";
  if (RunCgroupSupport().usable) {
    const std::string prefix = "sandrun-keep-" + std::to_string(server) + "-";
    for (const auto& e : std::filesystem::directory_iterator(RunCgroupSupport().parent)) {
      EXPECT_NE(e.path().filename().string().rfind(prefix, 0), 0u) << e.path() << " was left";
    }
  }
}

TEST_F(ProcessTrees, WhatAKilledRunnerLeftIsKilledByTheNextRun) {
  if (!RunCgroupSupport().usable) {
    if (InCi()) FAIL() << "CI runs as root with cgroup2: " << RunCgroupSupport().why_not;
    GTEST_SKIP() << "needs a cgroup per run: " << RunCgroupSupport().why_not;
  }
  // The runner dies without a chance to clean up; its run's cgroup, with the run's processes,
  // stays until the next sandrun run starts. (Before: the processes ran on untracked.)
  Config(R"({"sandbox": {"mode": "off"}})");
  pid_t runner = SpawnExec(Child(6, "(setsid X &)") + "sleep 100");
  ASSERT_TRUE(Running(6));
  ::kill(runner, SIGKILL);
  ::waitpid(runner, nullptr, 0);
  // (Any sandrun process starting a run now cleans up, so the leftover may be gone already.)
  auto r = Exec({}, "echo next");
  EXPECT_EQ(r.out, "next\n") << r.err;
  EXPECT_TRUE(Gone(6));
  const std::string prefix = "sandrun-" + std::to_string(runner) + "-";
  for (const auto& e : std::filesystem::directory_iterator(RunCgroupSupport().parent)) {
    EXPECT_NE(e.path().filename().string().rfind(prefix, 0), 0u) << e.path() << " was left";
  }
}

TEST_F(ProcessTrees, SandboxTimeoutLeavesNoSleepInTheContainer) {
  // The exec's shell exits at once; the setsid child keeps its output open until the timeout.
  // (Before: the kill found the exec's process gone and did nothing; the sleep ran on.)
  SANDRUN_REQUIRE_DOCKER(client);
  MinimalSandboxConfig();
  auto r = Exec({"--timeout", "2"},
                "setsid sh -c 'sleep 300' & "
                "while ! ps -o args | grep -qx 'sleep 300'; do sleep 0.05; done; echo started");
  EXPECT_EQ(r.out, "started\n") << r.err;
  EXPECT_EQ(r.exit_code, 124) << r.err;
  auto list = client->ListContainers({"sandrun.instance=" + InstanceId()}, false);
  ASSERT_TRUE(list && list->size() == 1u);
  docker::ExecSpec ps;
  ps.cmd = {"ps", "-o", "args"};
  std::string seen;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    seen.clear();
    auto code = client->RunExec(list->front().id, ps,
                                [&](docker::StreamKind, std::string_view b) { seen.append(b); });
    ASSERT_TRUE(code) << code.error().ToString();
    if (seen.find("sleep 300\n") == std::string::npos) break;
    std::this_thread::sleep_for(milliseconds(100));
  } while (std::chrono::steady_clock::now() < until);
  EXPECT_EQ(seen.find("sleep 300\n"), std::string::npos) << seen;
  // The container's command: the sandbox agent (or `sleep infinity` without it).
  EXPECT_TRUE(seen.find("/.sandrun/agent serve") != std::string::npos ||
              seen.find("sleep infinity\n") != std::string::npos)
      << "the keeper runs on\n"
      << seen;
}

TEST_F(ProcessTrees, ARunnerWithoutCgroupAccessFallsBackToTheSweep) {
  // A runner that is not root (and has no delegated cgroup subtree) cannot create cgroups: it
  // says so in doctor and still kills the whole tree. The test runs the binary as nobody.
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the binary as nobody";
  const std::string home = scratch_ + "/home";
  ASSERT_EQ(::mkdir(home.c_str(), 0700), 0);
  ASSERT_EQ(::chown(home.c_str(), 65534, 65534), 0);
  { std::ofstream(home + "/config.json") << R"({"sandbox": {"mode": "off"}})"; }
  ASSERT_EQ(::chown((home + "/config.json").c_str(), 65534, 65534), 0);
  const std::string pub = scratch_ + "/pub";
  ASSERT_EQ(::mkdir(pub.c_str(), 0755), 0);
  const auto [binary, profiles] = PublicCopyOfSandrun(pub);
  auto as_nobody = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {
        "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", binary,
        "--workspace",      scratch_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, {{"SANDRUN_HOME", home}, {"SANDRUN_PROFILES_DIR", profiles}});
  };
  auto doctor = as_nobody({"doctor"});
  EXPECT_NE(doctor.out.find("process-tree sweep of /proc"), std::string::npos) << doctor.out;
  auto r = as_nobody({"exec", "--timeout", "2", "--",
                      Child(9, "(setsid X &)") + Child(10, "setsid X &") + "sleep 100"});
  EXPECT_EQ(r.exit_code, 124) << r.out << r.err;
  EXPECT_TRUE(Gone(9));
  EXPECT_TRUE(Gone(10));
}

TEST_F(ProcessTrees, DoctorNamesTheMechanism) {
  auto r = Sandrun({"doctor"});
  std::string line;
  for (size_t at = r.out.find("process-tree"); at != std::string::npos;) {
    line = r.out.substr(at, r.out.find('\n', at) - at);
    break;
  }
  ASSERT_FALSE(line.empty()) << r.out;
  EXPECT_NE(line.find(RunCgroupSupport().usable ? "cgroup v2" : "sweep"), std::string::npos)
      << line;
}

}  // namespace
}  // namespace sandrun::testing

// `sandrun exec` / `sandrun call` in the sandbox, as a user runs them: the real binary, the real
// dockerd, the real images.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

class SandboxExec : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    SANDRUN_REQUIRE_DOCKER(client);
    MinimalSandboxConfig();
  }
};

std::string HostHostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

TEST_F(SandboxExec, EchoHiPrintsFromInsideAContainer) {
  auto r = Exec({}, "echo hi");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hi\n");
  EXPECT_EQ(ContainerCount(), 1u);
}

TEST_F(SandboxExec, DefaultRunsInAContainerWithOnlyLoopback) {
  auto r = Exec({},
                "hostname; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; id -u; "
                "cat /proc/1/cmdline | tr '\\0' ' '");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string hostname, iface, extra;
  std::getline(lines, hostname);
  std::getline(lines, iface);
  EXPECT_NE(hostname, HostHostname());
  EXPECT_EQ(iface, "lo");
  EXPECT_NE(r.out.find("docker-init"), std::string::npos) << "PID 1 is the init: " << r.out;
}

// A short command under a PTY ends before the exec's resize lands ("cannot resize a stopped
// container"): it ran, so that is never "nothing was run" (it failed most runs before).
TEST_F(SandboxExec, PtyShortCommandAlwaysRuns) {
  for (int i = 0; i < 20; ++i) {
    auto r = Exec({"--pty"}, "tty");
    ASSERT_EQ(r.exit_code, 0) << "run " << i << ": " << r.out << r.err;
    EXPECT_NE(r.out.find("/dev/pts/"), std::string::npos) << "run " << i << ": " << r.out;
    EXPECT_EQ(r.err.find("nothing was run"), std::string::npos) << r.err;
  }
}

TEST_F(SandboxExec, StdoutAndStderrStreamSeparatelyAndExitCodePassesThrough) {
  auto r = Exec({}, "echo out; echo err >&2; exit 3");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_NE(r.err.find("err\n"), std::string::npos);
}

TEST_F(SandboxExec, ContainerIsReusedWithinAScope) {
  ASSERT_EQ(Exec({}, "touch /tmp/kept").exit_code, 0);
  auto r = Exec({}, "ls /tmp/kept");
  EXPECT_EQ(r.exit_code, 0) << "second call sees the first call's /tmp: " << r.err;
  EXPECT_EQ(ContainerCount(), 1u);
}

TEST_F(SandboxExec, PathInjectionSurvivesTheLoginProfile) {
  MinimalSandboxConfig("", R"("tools": {"exec": {"pathPrepend": ["/opt/tools/bin"]}})");
  auto r =
      Exec({"--env", "PATH=/custom/bin"}, "echo \"$PATH\"; echo \"${SANDRUN_PREPEND_PATH-unset}\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "/opt/tools/bin:/custom/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
      "unset\n");
}

TEST_F(SandboxExec, PathValueIsNeverInterpretedAsScript) {
  auto r =
      Exec({"--env", "PATH=$(touch /tmp/pwned)"}, "echo \"$PATH\"; ls /tmp/pwned 2>&1 || true");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("$(touch /tmp/pwned):", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("No such file"), std::string::npos) << r.out;
}

TEST_F(SandboxExec, SandrunShellMarkerIsSet) {
  auto r = Exec({}, "echo $SANDRUN_SHELL");
  EXPECT_EQ(r.out, "exec\n");
}

TEST_F(SandboxExec, ExplicitSandboxWithEngineUnreachableFailsClosed) {
  std::string marker = "/tmp/sandrun-marker-" + std::to_string(getpid()) + "-unreachable";
  auto r = Exec({"--host", "sandbox"}, "touch " + marker,
                {{"DOCKER_HOST", "unix:///tmp/sandrun-no-engine.sock"}});
  EXPECT_EQ(r.exit_code, 123);
  EXPECT_NE(r.err.find("cannot reach the Docker engine"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_FALSE(std::filesystem::exists(marker)) << "nothing ran on the host";
}

TEST_F(SandboxExec, DefaultHostWithEngineUnreachableAlsoFailsClosed) {
  std::string marker = "/tmp/sandrun-marker-" + std::to_string(getpid()) + "-default";
  auto r = Sandrun({"call", "{\"tool\":\"exec\",\"command\":\"touch " + marker + "\"}"},
                   {{"DOCKER_HOST", "unix:///tmp/sandrun-no-engine.sock"}});
  EXPECT_EQ(r.exit_code, 2);
  auto doc = Parsed(r.out);
  const auto* error = JsonMember(doc, "error");
  ASSERT_NE(error, nullptr) << r.out;
  EXPECT_EQ(JsonString(*error, "code"), "sandbox-unavailable");
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(SandboxExec, MissingImageFailsClosedNamingTheFix) {
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:nonexistent"}}})");
  auto r = Exec({}, "echo should-not-run");
  EXPECT_EQ(r.exit_code, 123);
  EXPECT_NE(r.err.find("sandrun-sandbox:nonexistent"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sandrun image build"), std::string::npos) << r.err;
  EXPECT_EQ(ContainerCount(), 0u);
}

TEST_F(SandboxExec, GatewayIsRefusedWhileSandboxed) {
  auto r = Exec({"--host", "gateway"}, "echo no");
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("exec host not allowed (requested gateway; configured host is auto; set "
                       "tools.exec.host=gateway to allow this override)."),
            std::string::npos)
      << r.err;
}

TEST_F(SandboxExec, TimeoutKillsTheWholeTreeInTheContainer) {
  auto r = Exec({"--timeout", "1", "--json"}, "sleep 31.5 & sleep 31.5; echo never");
  EXPECT_EQ(r.exit_code, 0) << r.err;  // --json: the call was handled
  auto doc = Parsed(r.out);
  EXPECT_EQ(Details(doc, "status"), "failed");
  EXPECT_TRUE(JsonBool(*JsonMember(doc, "details"), "timedOut"));
  EXPECT_NE(JsonString(*JsonMember(doc, "content")->Begin(), "text")
                .find("Command timed out after 1 seconds"),
            std::string::npos);
  EXPECT_LT(r.seconds, 8.0);
  auto ps = Exec({}, "ps -o args | grep -c '[s]leep 31.5' || true");
  EXPECT_EQ(ps.out, "0\n") << "no process of the timed-out command is left";
}

TEST_F(SandboxExec, FiveMebibytesThroughTheOutputCap) {
  auto r = Exec({"--json"}, "head -c 5242880 /dev/zero | tr '\\0' a");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = Parsed(r.out);
  const auto& details = *JsonMember(doc, "details");
  EXPECT_TRUE(JsonBool(details, "truncated"));
  EXPECT_EQ(JsonInt(details, "totalBytes"), 5242880);
  std::string text = JsonString(*JsonMember(doc, "content")->Begin(), "text");
  EXPECT_EQ(text.rfind("[... 5042880 chars truncated ...]", 0), 0u) << text.substr(0, 80);
  EXPECT_LT(text.size(), 200100u);
}

TEST_F(SandboxExec, NonUtf8OutputIsReplacedNotFatal) {
  auto r = Exec({"--json"}, "printf 'ok\\377\\376end'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = Parsed(r.out);
  EXPECT_EQ(Details(doc, "aggregated"),
            "ok\xEF\xBF\xBD\xEF\xBF\xBD"
            "end");
}

TEST_F(SandboxExec, WorkdirMapsIntoTheMountedWorkspace) {
  MinimalSandboxConfig(R"("workspaceAccess": "rw")");
  std::filesystem::create_directories(workspace_ + "/sub/dir");
  std::ofstream(workspace_ + "/sub/dir/file.txt") << "from the host\n";
  // The sandbox runs as the workspace's owner (never root by default).
  for (const char* p : {"", "/sub", "/sub/dir", "/sub/dir/file.txt"}) {
    ASSERT_EQ(::chown((workspace_ + p).c_str(), 1000, 1000), 0) << p;
  }
  auto r = Exec({"--workdir", "/workspace/sub/dir"}, "pwd; cat file.txt; echo made > new.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "/workspace/sub/dir\nfrom the host\n");
  std::ifstream made(workspace_ + "/sub/dir/new.txt");
  std::string line;
  std::getline(made, line);
  EXPECT_EQ(line, "made") << "rw workspace writes reach the host";

  auto missing = Exec({"--workdir", "/workspace/nope"}, "pwd");
  EXPECT_EQ(missing.exit_code, 0);
  EXPECT_EQ(missing.out, "/workspace\n");
  EXPECT_NE(missing.err.find("Warning: workdir \"/workspace/nope\" is unavailable"),
            std::string::npos)
      << missing.err;
}

TEST_F(SandboxExec, ReadOnlyWorkspaceCannotBeWritten) {
  MinimalSandboxConfig(R"("workspaceAccess": "ro")");
  std::ofstream(workspace_ + "/seen.txt") << "visible\n";
  auto r = Exec({}, "cat /workspace/seen.txt; touch /workspace/x 2>&1; echo rc=$?");
  EXPECT_NE(r.out.find("visible"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Read-only file system"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(workspace_ + "/x"));
}

TEST_F(SandboxExec, DefaultWorkspaceIsAnEmptyScratchDir) {
  std::ofstream(workspace_ + "/secret.txt") << "host file\n";
  auto r =
      Exec({}, "ls -A /workspace | wc -l; echo scratch > /workspace/note; cat /workspace/note");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0\nscratch\n") << "workspaceAccess none: the real workspace is not visible";
  EXPECT_FALSE(std::filesystem::exists(workspace_ + "/note"));
}

TEST_F(SandboxExec, ConfigChangeOnAHotContainerWarnsAndRecreateApplies) {
  ASSERT_EQ(Exec({}, "touch /tmp/old").exit_code, 0);
  // Env (outside the reach) changed on a container used a moment ago: kept, with a warning.
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal", )"
         R"("env": {"LANG": "C.UTF-8", "X": "1"}}}})");
  auto hot = Exec({}, "ls /tmp/old");
  ASSERT_EQ(hot.exit_code, 0) << "a container used a moment ago is kept: " << hot.err;
  EXPECT_NE(hot.err.find("Sandbox config changed"), std::string::npos) << hot.err;
  // Limits are part of what a container can reach (issue 19: a call may choose them), so a
  // changed limit gets a new container at once, hot or not.
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal", "pidsLimit": 256}}})");
  const std::string kPidsMax =
      "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max";
  auto limited = Exec({}, kPidsMax + "; ls /tmp/old 2>/dev/null || echo gone");
  EXPECT_EQ(limited.out, "256\ngone\n") << limited.err;
  EXPECT_NE(limited.err.find("or limits than this call asks for"), std::string::npos)
      << limited.err;
  ASSERT_EQ(Exec({}, "touch /tmp/old").exit_code, 0);

  auto recreate = Sandrun({"sandbox", "recreate", "--all"});
  EXPECT_EQ(recreate.exit_code, 0) << recreate.err;
  EXPECT_EQ(ContainerCount(), 0u);
  auto fresh = Exec({}, kPidsMax + "; ls /tmp/old 2>/dev/null || echo gone");
  EXPECT_EQ(fresh.out, "256\ngone\n") << fresh.err;
  EXPECT_EQ(ContainerCount(), 1u);
}

TEST_F(SandboxExec, SandboxListShowsTheScopeContainer) {
  ASSERT_EQ(Exec({}, "true").exit_code, 0);
  auto list = Sandrun({"sandbox", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("agent:main"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("sandrun-sbx-" + InstanceId().substr(0, 8)), std::string::npos)
      << list.out;
  auto prune = Sandrun({"sandbox", "prune"});
  EXPECT_EQ(prune.exit_code, 0) << prune.err;
  EXPECT_EQ(ContainerCount(), 1u) << "a container just used is not idle";
}

// The engine reports a signal death only as exit code 128+N; the exec wrapper says which it
// was. (Before: "completed", exit code 139, no signal.)
TEST_F(SandboxExec, SignalDeathIsFailedAbortedBySignalLikeOnTheGateway) {
  auto json = Exec({"--json"}, "echo before; kill -SEGV $$");
  auto doc = Parsed(json.out);
  EXPECT_EQ(Details(doc, "status"), "failed") << json.out;
  EXPECT_EQ(Details(doc, "signal"), "SIGSEGV") << json.out;
  EXPECT_NE(JsonString(*JsonMember(doc, "content")->Begin(), "text")
                .find("Command aborted by signal SIGSEGV"),
            std::string::npos)
      << json.out;
  auto plain = Exec({}, "echo before; kill -SEGV $$");
  EXPECT_EQ(plain.exit_code, 128 + 11) << "the CLI exits 128+N";
  EXPECT_EQ(plain.out, "before\n");
  EXPECT_NE(plain.err.find("Command aborted by signal SIGSEGV"), std::string::npos) << plain.err;
}

TEST_F(SandboxExec, ExitCode139StaysAnExitCode) {
  auto json = Exec({"--json"}, "exit 139");
  auto doc = Parsed(json.out);
  EXPECT_EQ(Details(doc, "status"), "completed") << json.out;
  EXPECT_EQ(JsonInt(*JsonMember(doc, "details"), "exitCode"), 139) << json.out;
  EXPECT_EQ(json.out.find("signal"), std::string::npos) << json.out;
  auto plain = Exec({}, "exit 139");
  EXPECT_EQ(plain.exit_code, 139);
  EXPECT_EQ(plain.err.find("signal"), std::string::npos) << plain.err;
  // `exec prog` replaces the shell: the wrapper still sees how it ended.
  auto replaced = Exec({"--json"}, "exec sh -c 'kill -TERM $$'");
  EXPECT_EQ(Details(Parsed(replaced.out), "signal"), "SIGTERM") << replaced.out;
}

TEST_F(SandboxExec, ExecRecordsAreRemovedOnceRead) {
  // The exec wrapper's records: the Engine API path (the agent reports signals itself).
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal", "execAgent": false}}})");
  ASSERT_EQ(Exec({}, "kill -KILL $$").exit_code, 128 + 9);
  ASSERT_EQ(Exec({}, "exit 130").exit_code, 130);
  ASSERT_EQ(Exec({}, "true").exit_code, 0);
  ASSERT_EQ(Exec({"--timeout", "1"}, "sleep 30").exit_code, 124) << "timed out";
  // Only the listing exec's own record is left.
  auto r = Exec({}, "ls -A /dev/shm | grep -c '^.sandrun-exec-'");
  EXPECT_EQ(r.out, "1\n") << r.err;
}

}  // namespace
}  // namespace sandrun::testing

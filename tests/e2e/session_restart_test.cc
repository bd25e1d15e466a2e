// A server restart leaves no orphans: a sandbox session whose exec still runs when the server
// died is re-adopted by the next server (killable, its timeout enforced) through
// Executor::Adopt, and nothing of it is left in the container once it is killed.
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

class SessionRestart : public SessionHome {
 protected:
  void SetUp() override {
    SessionHome::SetUp();
    MinimalSandboxConfig("\"workspaceAccess\": \"rw\"");
  }
  // How many processes in the sandbox run `sleep 300`.
  std::string SleepersInTheSandbox() { return CountInTheSandbox("^sleep 3[0]0"); }
  std::string StartSleeper(std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--background", "--json"});
    auto r = Exec(flags, "touch /workspace/started; sleep 300");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::string id = Details(Parsed(r.out), "sessionId");
    EXPECT_TRUE(WaitForFile(workspace_ + "/started"));
    return id;
  }
};

TEST_F(SessionRestart, ASandboxSessionIsReadoptedAfterACrashAndItsKillLeavesNothing) {
  StartServer();
  std::string id = StartSleeper({});
  ASSERT_FALSE(id.empty());
  CrashServer();
  EXPECT_EQ(SleepersInTheSandbox(), "1") << "the exec must outlive the crashed server";
  StartServer();
  auto poll = Process({"poll", "--session-id", id});
  EXPECT_EQ(Details(poll, "status"), "running") << ToJson(poll);
  auto killed = Process({"kill", "--session-id", id});
  auto done = PollUntilDone(id);
  EXPECT_NE(Details(done, "status"), "running");
  EXPECT_EQ(SleepersInTheSandbox(), "0") << "the re-adopted tree was not killed";
}

TEST_F(SessionRestart, AReadoptedSessionStillTimesOut) {
  StartServer();
  std::string id = StartSleeper({"--timeout", "4"});
  ASSERT_FALSE(id.empty());
  CrashServer();
  StartServer();
  auto done = PollUntilDone(id);
  EXPECT_EQ(Details(done, "status"), "failed") << ToJson(done);
  EXPECT_EQ(SleepersInTheSandbox(), "0") << "the timeout did not kill the re-adopted tree";
}

// The CLI without a server runs a one-shot Runtime: it must not recover, adopt, lose or rewrite
// the sessions a crashed (or starting) server left in $SANDRUN_HOME, nor take their lock.
TEST_F(SessionRestart, OneShotCallsLeaveTheServersSessionsAlone) {
  StartServer();
  std::string id = StartSleeper({});
  ASSERT_FALSE(id.empty());
  CrashServer();
  const std::string meta = home_ + "/sessions/" + id + "/meta.json";
  auto read = [&] {
    std::ifstream in(meta);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string before = read();
  ASSERT_FALSE(before.empty()) << meta;

  EXPECT_EQ(SleepersInTheSandbox(), "1");  // a one-shot sandbox exec
  auto call = Sandrun({"call", R"({"tool":"exec","command":"echo one-shot"})"});
  EXPECT_EQ(call.exit_code, 0) << call.out << call.err;
  EXPECT_NE(call.out.find("one-shot"), std::string::npos) << call.out;
  auto list = Sandrun({"process", "list"});
  EXPECT_EQ(list.exit_code, 2) << list.out;
  EXPECT_NE(list.out.find("\"server-required\""), std::string::npos) << list.out;
  auto check = Sandrun({"policy", "check", "--", "true"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(read(), before) << "a one-shot call rewrote the server's session record";

  StartServer();  // the lock was not taken: the next server re-adopts the session
  auto poll = Process({"poll", "--session-id", id});
  EXPECT_EQ(Details(poll, "status"), "running") << ToJson(poll);
  Process({"kill", "--session-id", id});
  auto done = PollUntilDone(id);
  EXPECT_NE(Details(done, "status"), "running");
  EXPECT_EQ(SleepersInTheSandbox(), "0");
}

TEST_F(SessionRestart, AForgedAdoptionKeyAdoptsAndKillsNothing) {
  StartServer();
  std::string id = StartSleeper({});
  ASSERT_FALSE(id.empty());
  CrashServer();
  // The record on disk names another exec: the next server must not take (or kill) it.
  std::string meta = home_ + "/sessions/" + id + "/meta.json";
  ASSERT_TRUE(std::filesystem::exists(meta)) << meta;
  std::string text;
  {
    std::ifstream in(meta);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // An Engine API exec's key names the exec (its third field), an agent command's key the
  // command (its third field too): change one digit of it.
  auto at = text.find("sandrun-exec-v2|");
  if (at == std::string::npos) at = text.find("sandrun-agent-v1|");
  ASSERT_NE(at, std::string::npos) << text;
  auto exec_at = text.find('|', text.find('|', at) + 1) + 1;
  text[exec_at] = text[exec_at] == 'a' ? 'b' : 'a';
  std::ofstream(meta) << text;
  StartServer();
  auto poll = Process({"poll", "--session-id", id});
  EXPECT_NE(Details(poll, "status"), "running") << ToJson(poll);
  EXPECT_EQ(SleepersInTheSandbox(), "1") << "a forged key killed something";
  // Clean up what the test left running in the container.
  Exec({}, "pkill -f 'sleep 3[0]0' || kill $(pidof sleep) 2>/dev/null; true");
}

// A re-adopted exec's end is read from the engine's exit code and the exec wrapper's record:
// a signal death after the restart is a signal death. (Before: "exited with code 139".)
TEST_F(SessionRestart, AReadoptedSessionThatDiesFromASignalSaysSo) {
  StartServer();
  auto r = Exec({"--background", "--json"},
                "touch /workspace/started; while [ ! -e /workspace/go ]; do sleep 0.05; done; "
                "kill -SEGV $$");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string id = Details(Parsed(r.out), "sessionId");
  ASSERT_TRUE(WaitForFile(workspace_ + "/started"));
  CrashServer();
  StartServer();
  ASSERT_EQ(Details(Process({"poll", "--session-id", id}), "status"), "running");
  std::ofstream(workspace_ + "/go") << "";
  auto done = PollUntilDone(id);
  EXPECT_EQ(Details(done, "status"), "failed") << ToJson(done);
  EXPECT_EQ(Details(done, "exitSignal"), "SIGSEGV") << ToJson(done);
}

}  // namespace
}  // namespace sandrun::testing

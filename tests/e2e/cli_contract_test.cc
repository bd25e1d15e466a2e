// `sandrun exec`'s contract through the binary, in-process and through a running `sandrun serve`
// (issue 13): separate byte-exact streams, the caller's cwd, stdin, cancel, no yield unless
// asked, the exit code table.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

class CliContract : public SandrunHome, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    Config(R"({"tools": {"exec": {"host": "gateway", "security": "full"}},
               "sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}}})");
    if (GetParam()) StartServer();
  }
  void TearDown() override {
    StopServer();
    SandrunHome::TearDown();
  }
  // `sandrun exec` run by sh from `dir` (no --workspace: the caller's directory), with `redirect`
  // for its stdin.
  ProcessResult ExecIn(const std::string& dir, const std::string& flags, const std::string& command,
                       const std::string& stdin_text = "", const std::string& redirect = "") {
    std::string sh = "cd '" + dir + "' && exec '" + SANDRUN_BINARY + "' exec " + flags + " -- '" +
                     command + "' " + redirect;
    return RunProcess({"/bin/sh", "-c", sh}, Env(), stdin_text);
  }
  bool WaitForFile(const std::string& path) {
    for (int i = 0; i < 400; ++i) {
      std::ifstream in(path);
      std::string s;
      if (in >> s && !s.empty()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  }
  static bool Alive(pid_t pid) { return ::kill(pid, 0) == 0; }
  bool WaitGone(pid_t pid) {
    for (int i = 0; i < 400; ++i) {
      if (!Alive(pid)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  }
};

TEST_P(CliContract, StdoutAndStderrSeparateByteExactAndLong) {
  auto r = ExecIn(marks_, "",
                  "printf \"a\\377\\001b\"; printf \"E\\376\" >&2; head -c 1500000 /dev/zero; "
                  "exit 3");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  ASSERT_EQ(r.out.size(), 4u + 1500000u) << "untruncated, no appended exit line";
  EXPECT_EQ(r.out.substr(0, 4), std::string("a\xff\x01"
                                            "b"));
  EXPECT_EQ(r.err.find("E\xfe"), 0u) << r.err;
  EXPECT_EQ(r.out.find("Command exited"), std::string::npos);
}

TEST_P(CliContract, RunsInTheCallersDirectory) {
  std::string dir = marks_ + "/sub";
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::all);
  auto r = ExecIn(dir, "", "pwd");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, dir + "\n");
}

TEST_P(CliContract, WarningsGoToStderr) {
  // --yield-ms without a server (or the process tool denied) is a warning; here the process tool
  // is denied, so both paths run in the foreground and warn.
  Config(R"({"tools": {"deny": ["process"], "exec": {"host": "gateway", "security": "full"}}})");
  auto r = ExecIn(marks_, "--yield-ms 5000", "echo out");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "out\n");
  EXPECT_NE(r.err.find("sandrun: Warning: "), std::string::npos) << r.err;
}

TEST_P(CliContract, ConfigWarningsGoToTheCallersStderr) {
  // Read per call, so a running server sees it too; its warnings are the caller's to read.
  Config(R"({"tools": {"exec": {"host": "gateway", "security": "full", "bogusKey": 1}}})");
  for (const char* flags : {"", "--json"}) {
    auto r = ExecIn(marks_, flags, "echo out");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("unknown key tools.exec.bogusKey (ignored)"), std::string::npos)
        << flags << ": " << r.err;
    EXPECT_EQ(r.out.find("bogusKey"), std::string::npos) << "not in the result: " << r.out;
  }
}

TEST_P(CliContract, StdinFromAPipeAndAFileNoneReadsEof) {
  auto piped = ExecIn(marks_, "", "cat; echo end", "from the pipe\n");
  EXPECT_EQ(piped.out, "from the pipe\nend\n") << piped.err;
  std::string file = marks_ + "/in.txt";
  std::ofstream(file) << "from the file\n";
  auto filed = ExecIn(marks_, "", "cat; echo end", "", "< '" + file + "'");
  EXPECT_EQ(filed.out, "from the file\nend\n") << filed.err;
  auto none = ExecIn(marks_, "", "cat; echo end", "", "< /dev/null");
  EXPECT_EQ(none.out, "end\n") << none.err;
}

TEST_P(CliContract, SigtermToTheCliKillsTheCommand) {
  std::string mark = marks_ + "/pid";
  pid_t cli = fork();
  if (cli == 0) {
    for (const auto& [k, v] : Env()) setenv(k.c_str(), v.c_str(), 1);
    (void)chdir(marks_.c_str());
    // Written aside and renamed: the mark is complete once it exists.
    std::string cmd =
        "echo $$ > " + mark + ".tmp && mv " + mark + ".tmp " + mark + "; exec sleep 100";
    execl(SANDRUN_BINARY, SANDRUN_BINARY, "exec", "--", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_TRUE(WaitForFile(mark));
  pid_t pid = std::stoi([&] {
    std::ifstream in(mark);
    std::string s;
    in >> s;
    return s;
  }());
  ASSERT_TRUE(Alive(pid));
  ::kill(cli, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(cli, &status, 0), cli);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << status;
  EXPECT_TRUE(WaitGone(pid)) << "the command outlived the CLI";
}

TEST_P(CliContract, ExitCodes) {
  EXPECT_EQ(ExecIn(marks_, "", "exit 7").exit_code, 7);
  EXPECT_EQ(ExecIn(marks_, "", "kill -KILL $$").exit_code, 128 + SIGKILL);
  EXPECT_EQ(ExecIn(marks_, "--timeout 1", "sleep 30").exit_code, 124);
  auto refused = ExecIn(marks_, "--host sandbox", "true");
  EXPECT_EQ(refused.exit_code, 125) << refused.err;
  auto json = ExecIn(marks_, "--json --host sandbox", "true");
  EXPECT_EQ(json.exit_code, 2) << json.out;
  EXPECT_NE(json.out.find("\"error\""), std::string::npos);
  EXPECT_EQ(ExecIn(marks_, "--json --exit-code --host sandbox", "true").exit_code, 125);
  EXPECT_EQ(ExecIn(marks_, "--json", "exit 7").exit_code, 0);
  EXPECT_EQ(ExecIn(marks_, "--json --exit-code", "exit 7").exit_code, 7);
}

INSTANTIATE_TEST_SUITE_P(Paths, CliContract, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "Server" : "InProcess"; });

using CliContractOnce = SandrunHome;

// The engine unreachable: 123, nothing ran (in-process: DOCKER_HOST is the CLI's).
TEST_F(CliContractOnce, SandboxUnavailableIs123) {
  MinimalSandboxConfig();
  auto r = Exec({"--host", "sandbox"}, "true", {{"DOCKER_HOST", "unix:///nonexistent.sock"}});
  EXPECT_EQ(r.exit_code, 123) << r.err;
}

// A state dir others could change is the caller's to fix: refused (125), not an internal error.
TEST_F(CliContractOnce, AnUnsafeStateDirIsRefusedWith125) {
  Config(R"({"tools": {"exec": {"host": "gateway", "security": "full"}}})");
  std::filesystem::permissions(
      home_, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                 std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                 std::filesystem::perms::others_exec);
  auto r = Exec({}, "echo ran");
  std::filesystem::permissions(home_, std::filesystem::perms::owner_all);
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_NE(r.err.find("chmod 700"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "nothing ran";
}

// Through the server, SIGKILL of the CLI drops the connection: the server kills the run.
TEST_F(CliContractOnce, SigkillOfTheCliThroughTheServerKillsTheRun) {
  Config(R"({"tools": {"exec": {"host": "gateway", "security": "full"}}})");
  StartServer();
  std::string mark = marks_ + "/pid";
  pid_t cli = fork();
  if (cli == 0) {
    for (const auto& [k, v] : Env()) setenv(k.c_str(), v.c_str(), 1);
    // Written aside and renamed: the mark is complete once it exists.
    std::string cmd =
        "echo $$ > " + mark + ".tmp && mv " + mark + ".tmp " + mark + "; exec sleep 100";
    execl(SANDRUN_BINARY, SANDRUN_BINARY, "exec", "--", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 400 && !std::filesystem::exists(mark); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  std::string text;
  std::ifstream(mark) >> text;
  ASSERT_FALSE(text.empty());
  pid_t pid = std::stoi(text);
  ::kill(cli, SIGKILL);
  waitpid(cli, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < 400 && !gone; ++i) {
    gone = ::kill(pid, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_TRUE(gone) << "the run outlived its client";
  StopServer();
}

// Through the server, a foreground exec past the old 10 s yield window still streams and ends
// with the command's code (no session id, no exit 0).
TEST_F(CliContractOnce, NoYieldWithoutYieldMsThroughTheServer) {
  Config(R"({"tools": {"exec": {"host": "gateway", "security": "full"}}})");
  StartServer();
  auto r = Exec({}, "sleep 10.5; echo late; exit 4");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(r.out, "late\n");
  StopServer();
}

// Another user reaching the socket may not pick the directory a command runs in.
TEST_F(CliContractOnce, CwdHeaderFromAnotherUserIsRefused) {
  Config(R"({"tools": {"exec": {"host": "gateway", "security": "full"}}})");
  StartServer();
  std::string socket = home_ + "/sandrun.sock";
  ASSERT_EQ(::chmod(socket.c_str(), 0666), 0);
  ASSERT_EQ(::chmod(home_.c_str(), 0755), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    socket.copy(addr.sun_path, sizeof addr.sun_path - 1);
    if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) _exit(4);
    std::string body = R"({"tool":"exec","command":"touch )" + marks_ + R"(/ran"})";
    std::string req =
        "POST /v1/exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: "
        "sandrun-exec/1\r\nX-Sandrun-Cwd: /root\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    (void)!write(s, req.data(), req.size());
    char buf[4096];
    ssize_t n;
    while ((n = read(s, buf, sizeof buf)) > 0) (void)!write(fds[1], buf, static_cast<size_t>(n));
    _exit(0);
  }
  close(fds[1]);
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) reply.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  waitpid(child, nullptr, 0);
  ::chmod(home_.c_str(), 0700);
  EXPECT_NE(reply.find("101 Switching"), std::string::npos) << reply;
  EXPECT_NE(reply.find("\"exitCode\":125"), std::string::npos) << reply;
  EXPECT_NE(reply.find("honoured only from the server's own user"), std::string::npos) << reply;
  EXPECT_FALSE(std::filesystem::exists(marks_ + "/ran"));
  StopServer();
}

}  // namespace
}  // namespace sandrun::testing

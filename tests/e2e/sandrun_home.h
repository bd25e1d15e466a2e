// A private SANDRUN_HOME per test: its own config, instance id and containers, all removed at
// the end (a test that leaves a container behind fails).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "sandbox/base/json.h"
#include "tests/support/docker_env.h"
#include "tests/support/mounts.h"
#include "tests/support/process.h"

namespace sandrun::testing {

// This process's PATH without the entries that others cannot search (e.g. root's pyenv shims
// under /root): a root runner's host commands run as nobody, and the runner resolves commands
// on the PATH it is given, so the tests give it one that nobody can use too.
inline std::string PublicPath() {
  const char* path = std::getenv("PATH");
  std::string in = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::string out;
  size_t start = 0;
  while (start <= in.size()) {
    size_t end = in.find(':', start);
    if (end == std::string::npos) end = in.size();
    std::string dir = in.substr(start, end - start);
    start = end + 1;
    if (dir.empty() || dir[0] != '/') continue;
    bool searchable = true;
    for (std::string prefix = dir; searchable && !prefix.empty();) {
      struct stat st {};
      searchable = ::stat(prefix.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) != 0;
      size_t slash = prefix.find_last_of('/');
      prefix = slash == 0 || slash == std::string::npos ? "" : prefix.substr(0, slash);
    }
    if (searchable) out += (out.empty() ? "" : ":") + dir;
  }
  return out;
}

// Copies the binary under test and the profiles into `dir` (world-readable) so another user
// (setpriv --reuid=65534) can run them wherever the checkout lives (e.g. under a 0700 /root).
// Returns {binary, profiles dir}; set SANDRUN_PROFILES_DIR to the second.
inline std::pair<std::string, std::string> PublicCopyOfSandrun(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string binary = dir + "/sandrun";
  const std::string profiles = dir + "/profiles";
  fs::copy_file(SANDRUN_BINARY, binary, fs::copy_options::overwrite_existing);
  fs::permissions(binary, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  fs::copy(SANDRUN_TEST_PROFILES_DIR, profiles,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  for (const auto& e : fs::recursive_directory_iterator(profiles)) {
    ::chmod(e.path().c_str(), e.is_directory() ? 0755 : 0644);
  }
  ::chmod(profiles.c_str(), 0755);
  ::chmod(dir.c_str(), 0755);
  return {binary, profiles};
}

class SandrunHome : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sandrun-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    home_ = templ;
    std::filesystem::permissions(home_, std::filesystem::perms::owner_all);
    workspace_ = home_ + "-ws";
    std::filesystem::create_directories(workspace_);
    // A root runner's host commands run as nobody (tools.exec.hostUser) and cannot see the
    // state dir: markers they write go to a directory of their own, outside SANDRUN_HOME.
    marks_ = home_ + "-marks";
    std::filesystem::create_directories(marks_);
    std::filesystem::permissions(workspace_, std::filesystem::perms::all);
    std::filesystem::permissions(marks_, std::filesystem::perms::all);
  }

  void TearDown() override {
    // A server a test started and did not stop would outlive it (its home deleted under it).
    StopServer();
    std::string why;
    if (auto client = ConnectToDocker(&why); client && !InstanceId().empty()) {
      auto list = client->ListContainers({"sandrun.instance=" + InstanceId()}, true);
      if (list) {
        for (const auto& c : *list) (void)client->RemoveContainer(c.id, true);
      }
    }
    // Scratch images stay mounted on the host while a scope has a container: detach them.
    DetachMountsBelow(home_);
    std::error_code ec;
    std::filesystem::remove_all(home_, ec);
    EXPECT_FALSE(ec) << "removing " << home_ << ": " << ec.message();
    std::filesystem::remove_all(workspace_, ec);
    std::filesystem::remove_all(marks_, ec);
  }

  // Writes config.json (a JSON text).
  void Config(const std::string& json) { std::ofstream(home_ + "/config.json") << json; }
  // The usual test config: sandbox on the small image, plus `extra` members at the top level.
  void MinimalSandboxConfig(const std::string& sandbox_extra = "",
                            const std::string& top_extra = "") {
    Config("{\"sandbox\": {\"docker\": {\"image\": \"sandrun-sandbox:minimal\"}" +
           (sandbox_extra.empty() ? "" : ", " + sandbox_extra) + "}" +
           (top_extra.empty() ? "" : ", " + top_extra) + "}");
  }

  std::map<std::string, std::string> Env() const {
    return {{"SANDRUN_HOME", home_}, {"PATH", PublicPath()}};
  }

  ProcessResult Sandrun(std::vector<std::string> args,
                        std::map<std::string, std::string> extra_env = {}) {
    auto env = Env();
    env.insert(extra_env.begin(), extra_env.end());
    args.insert(args.begin(), {"--workspace", workspace_});
    return RunSandrun(args, env);
  }

  ProcessResult Exec(std::vector<std::string> flags, const std::string& command,
                     std::map<std::string, std::string> extra_env = {}) {
    std::vector<std::string> args = {"exec"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.push_back(command);
    return Sandrun(args, std::move(extra_env));
  }

  ProcessResult Call(const std::string& json) {
    return RunProcess({SANDRUN_BINARY, "--workspace", workspace_, "call", "-"}, Env(), json);
  }

  std::string InstanceId() const {
    std::ifstream in(home_ + "/instance-id");
    std::string id;
    in >> id;
    return id;
  }

  size_t ContainerCount() {
    std::string why;
    auto client = ConnectToDocker(&why);
    if (!client || InstanceId().empty()) return 0;
    auto list = client->ListContainers({"sandrun.instance=" + InstanceId()}, true);
    return list ? list->size() : 0;
  }

  // Forks `sandrun --workspace <ws> serve ARGS...` on this home (PATH: PublicPath), its stderr
  // to `err_file`; sets server_pid_.
  void LaunchServe(const std::vector<std::string>& serve_args,
                   const std::string& err_file = "/dev/null") {
    server_pid_ = fork();
    if (server_pid_ == 0) {
      setenv("SANDRUN_HOME", home_.c_str(), 1);
      setenv("PATH", PublicPath().c_str(), 1);
      int devnull = ::open("/dev/null", O_WRONLY);
      int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(devnull, 1);
      dup2(err, 2);
      std::vector<const char*> argv = {SANDRUN_BINARY, "--workspace", workspace_.c_str(), "serve"};
      for (const auto& a : serve_args) argv.push_back(a.c_str());
      argv.push_back(nullptr);
      execv(SANDRUN_BINARY, const_cast<char* const*>(argv.data()));
      _exit(127);
    }
  }

  // Starts `sandrun serve` on this home and waits until it answers (up to 5 s).
  void StartServer() {
    LaunchServe({});
    for (int i = 0; i < 200; ++i) {
      if (Sandrun({"process", "list"}).exit_code == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    FAIL() << "the server did not come up";
  }

  // A self-signed certificate for 127.0.0.1 and localhost made with openssl: {cert, key}.
  std::pair<std::string, std::string> SelfSignedCert() {
    const std::string cert = home_ + "/cert.pem", key = home_ + "/key.pem";
    auto made = RunProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                            "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"});
    EXPECT_EQ(made.exit_code, 0) << made.err;
    return {cert, key};
  }

  // SIGTERM, and the server must exit 0 within 10 s.
  void StopServer() {
    if (server_pid_ <= 0) return;
    kill(server_pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 500; ++i) {
      if (waitpid(server_pid_, &status, WNOHANG) == server_pid_) {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
        server_pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(server_pid_, SIGKILL);
    waitpid(server_pid_, &status, 0);
    server_pid_ = -1;
    ADD_FAILURE() << "the server did not stop on SIGTERM";
  }

  std::string home_;
  std::string workspace_;
  std::string marks_;  // world-writable, outside the state dir: where host commands leave markers
  pid_t server_pid_ = -1;
};

// Parses a result JSON printed by `sandrun call` or `exec --json`.
inline rapidjson::Document Parsed(const std::string& out) {
  auto doc = ParseJson(out);
  if (!doc) {
    ADD_FAILURE() << "not JSON: " << out;
    return rapidjson::Document();
  }
  return std::move(doc).value();
}

inline std::string Details(const rapidjson::Document& doc, const char* key) {
  const auto* d = JsonMember(doc, "details");
  return d ? JsonString(*d, key) : "";
}

}  // namespace sandrun::testing

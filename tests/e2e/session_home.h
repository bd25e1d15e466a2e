// A SandrunHome for tests of background sessions through a server: `process` calls, a server
// crash, waiting for a marker file or a session's end, and counting what runs in the sandbox.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {

class SessionHome : public SandrunHome {
 protected:
  void TearDown() override {
    StopServer();
    SandrunHome::TearDown();
  }
  // `sandrun process ARGS...`, its JSON.
  rapidjson::Document Process(std::vector<std::string> args) {
    args.insert(args.begin(), "process");
    return Parsed(Sandrun(args).out);
  }
  // Starts `command` as a background session (`exec --background --json`); its id.
  std::string Background(const std::string& command) {
    auto r = Exec({"--background", "--json"}, command);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return Details(Parsed(r.out), "sessionId");
  }
  // SIGKILLs the server StartServer started.
  void CrashServer() {
    ::kill(server_pid_, SIGKILL);
    int status = 0;
    ::waitpid(server_pid_, &status, 0);
    server_pid_ = -1;
  }
  // Waits up to 30 s for `path` to exist.
  bool WaitForFile(const std::string& path) {
    for (int i = 0; i < 600; ++i) {
      if (std::filesystem::exists(path)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // Polls session `id` until it is no longer running (about 30 s at most).
  rapidjson::Document PollUntilDone(const std::string& id) {
    for (int i = 0; i < 60; ++i) {
      auto doc = Process({"poll", "--session-id", id, "--timeout", "500"});
      if (Details(doc, "status") != "running") return doc;
    }
    ADD_FAILURE() << "session " << id << " did not finish";
    return Process({"poll", "--session-id", id});
  }
  // How many processes in the sandbox have a command line matching the grep pattern (write it
  // so that it matches neither itself nor a shell whose command line holds it: '^sleep 3[0]0').
  std::string CountInTheSandbox(const std::string& pattern) {
    auto r =
        Exec({}, "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done | grep -c '" +
                     pattern + "'");
    std::string out = r.out;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }
};

}  // namespace sandrun::testing

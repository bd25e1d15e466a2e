// Tool policy for the process tool (SPEC §6b): tools.deny ["process"] (global or per agent)
// refuses every process action in every front end (the CLI in-process, `sandrun call`, the
// server's /v1/tools/process), and exec then runs synchronously with OpenClaw's warning.
// Host commands (sandbox.mode off): no Docker needed.
#include <gtest/gtest.h>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

constexpr const char* kDenied =
    "{\"error\":{\"code\":\"tool-denied\",\"message\":\"Tool process is denied by tool policy "
    "(tools.deny).\"}}\n";
constexpr const char* kAllowProcess = R"({"sandbox": {"mode": "off"}})";
constexpr const char* kDenyProcess =
    R"({"sandbox": {"mode": "off"}, "tools": {"deny": ["process"]}})";

class ProcessPolicy : public SandrunHome {
 protected:
  void TearDown() override {
    StopServer();
    SandrunHome::TearDown();
  }

  std::string ErrorCodeOf(const ProcessResult& r) {
    const auto* error = JsonMember(Parsed(r.out), "error");
    return error != nullptr ? JsonString(*error, "code") : "";
  }

  // `sandrun call` of a background exec: its result.
  rapidjson::Document BackgroundCall(const std::string& command) {
    auto r = Call(R"({"tool":"exec","command":")" + command + R"(","background":true})");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return Parsed(r.out);
  }

  static std::string Text(const rapidjson::Document& doc) {
    const auto* content = JsonMember(doc, "content");
    return content && content->IsArray() && !content->Empty() ? JsonString((*content)[0], "text")
                                                              : "";
  }

  // POST /v1/tools/process on the server's socket: the body, then a line with the HTTP status.
  ProcessResult PostProcess(const std::string& body) {
    return RunProcess({"/usr/bin/curl", "-sS", "--max-time", "30", "--unix-socket",
                       home_ + "/sandrun.sock", "-H", "Content-Type: application/json",
                       "--data-binary", body, "-w", "\n%{http_code}",
                       "http://sandrun/v1/tools/process"});
  }
};

TEST_F(ProcessPolicy, DeniedProcessRefusesEveryActionWithoutAServer) {
  Config(kDenyProcess);
  for (std::vector<std::string> args : {std::vector<std::string>{"process", "list"},
                                        {"process", "poll", "--session-id", "calm-bison"},
                                        {"process", "kill", "--session-id", "calm-bison"},
                                        {"call", R"({"tool":"process","action":"list"})"}}) {
    auto r = Sandrun(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << ": " << r.out << r.err;
    EXPECT_EQ(r.out, kDenied) << args[1];
  }
  // Allowed, the one-shot CLI still says that sessions need a server.
  Config(kAllowProcess);
  for (std::vector<std::string> args : {std::vector<std::string>{"process", "list"},
                                        {"call", R"({"tool":"process","action":"list"})"}}) {
    auto r = Sandrun(args);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(ErrorCodeOf(r), "server-required") << r.out;
  }
}

TEST_F(ProcessPolicy, DeniedProcessRefusesEveryActionThroughTheServer) {
  Config(kAllowProcess);
  StartServer();
  auto running = BackgroundCall("sleep 30");
  ASSERT_EQ(Details(running, "status"), "running") << ToJson(running);
  const std::string id = Details(running, "sessionId");

  Config(kDenyProcess);  // each call reads the config
  for (std::vector<std::string> args : {std::vector<std::string>{"process", "list"},
                                        {"process", "poll", "--session-id", id},
                                        {"process", "log", "--session-id", id},
                                        {"process", "kill", "--session-id", id},
                                        {"call", R"({"tool":"process","action":"list"})"}}) {
    auto r = Sandrun(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << ": " << r.out << r.err;
    EXPECT_EQ(r.out, kDenied) << args[1];
  }
  auto http = PostProcess(R"({"tool":"process","action":"list"})");
  EXPECT_EQ(http.out, std::string(kDenied) + "400") << "the status of the other tool-denied";
  auto http_kill = PostProcess(R"({"tool":"process","action":"kill","sessionId":")" + id + "\"}");
  EXPECT_EQ(http_kill.out, std::string(kDenied) + "400");

  // SPEC §6b: exec runs synchronously, with OpenClaw's warning, even through a server.
  auto sync = BackgroundCall("echo sync");
  EXPECT_EQ(Details(sync, "status"), "completed") << ToJson(sync);
  EXPECT_EQ(Text(sync),
            "Warning: background execution is disabled; running synchronously.\n\nsync");

  // The refused kill killed nothing: allowed again, the session is still running.
  Config(kAllowProcess);
  auto poll = Sandrun({"process", "poll", "--session-id", id, "--timeout", "0"});
  EXPECT_EQ(poll.exit_code, 0) << poll.out;
  EXPECT_EQ(Details(Parsed(poll.out), "status"), "running") << poll.out;
  EXPECT_EQ(Sandrun({"process", "kill", "--session-id", id}).exit_code, 0);
}

TEST_F(ProcessPolicy, PerAgentDenyLeavesOtherAgentsAlone) {
  Config(R"({"sandbox": {"mode": "off"},
             "agents": {"ops": {"tools": {"deny": ["process"]}}}})");
  StartServer();  // it waits for main's `process list`
  auto ops = Sandrun({"--agent", "ops", "process", "list"});
  EXPECT_EQ(ops.exit_code, 2) << ops.out;
  EXPECT_EQ(ops.out, kDenied);
  auto ops_poll = Sandrun({"--agent", "ops", "process", "poll", "--session-id", "calm-bison"});
  EXPECT_EQ(ops_poll.out, kDenied);
  auto main_list = Sandrun({"process", "list"});
  EXPECT_EQ(main_list.exit_code, 0) << main_list.out;

  auto ops_exec = Sandrun(
      {"--agent", "ops", "call", R"({"tool":"exec","command":"echo ops","background":true})"});
  EXPECT_EQ(Details(Parsed(ops_exec.out), "status"), "completed") << ops_exec.out;
  auto main_exec = BackgroundCall("sleep 5");
  EXPECT_EQ(Details(main_exec, "status"), "running") << ToJson(main_exec);
  Sandrun({"process", "kill", "--session-id", Details(main_exec, "sessionId")});
}

}  // namespace
}  // namespace sandrun::testing

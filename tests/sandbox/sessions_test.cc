// Background sessions with real host processes started through HostExecutor::Start: polling,
// stdin, PTYs driven by send-keys and paste, kill, scoping, restarts, and many at once.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "runner/sessions/manager.h"
#include "runner/wire/tool_result.h"
#include "sandbox/executors/host/host_executor.h"

namespace sandrun::sessions {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

exec::Plan HostPlan(std::string command, bool pty = false) {
  exec::Plan plan;
  plan.target = exec::Target::kGateway;
  plan.shell = "/bin/sh";
  plan.command = std::move(command);
  plan.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"SANDRUN_SHELL", "exec"}, {"LC_ALL", "C"}};
  plan.cwd = "/tmp";
  plan.timeout_ms = 60000;
  plan.pty = pty;
  return plan;
}

char ProcState(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 0;
  size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ? 0 : line[paren + 2];
}

bool Dead(int64_t pid) {
  char state = ProcState(pid);
  return state == 0 || state == 'Z' || state == 'X';
}

class SessionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sessions_sbx_XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    manager_ = MakeManager(dir_);
  }
  void TearDown() override {
    manager_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::unique_ptr<SessionManager> MakeManager(const std::string& state_dir) {
    Options options;
    options.state_dir = state_dir;
    options.sweeper_thread = false;
    return std::make_unique<SessionManager>(options);
  }

  // Starts `plan` as a background session (the exec flow's steps).
  std::shared_ptr<Session> Launch(const exec::Plan& plan, const Scope& scope = {},
                                  bool background = true, SessionManager* manager = nullptr) {
    if (manager == nullptr) manager = manager_.get();
    SessionMeta meta;
    meta.scope = scope;
    meta.command = plan.command;
    meta.cwd = plan.cwd;
    meta.host = "gateway";
    meta.pty = plan.pty;
    meta.timeout_ms = plan.timeout_ms;
    auto begun = manager->Begin(meta);
    EXPECT_TRUE(begun) << begun.error().ToString();
    if (!begun) return nullptr;
    std::shared_ptr<Session> session = *begun;
    auto process = host_.Start(plan, session->Sink());
    EXPECT_TRUE(process) << process.error().ToString();
    if (!process) {
      manager->Discard(session->id());
      return nullptr;
    }
    session->Attach(std::move(process).value());
    if (background) session->MarkBackgrounded();
    return session;
  }

  rapidjson::Document Call(const std::string& json, const Scope& scope = {},
                           SessionManager* manager = nullptr) {
    if (manager == nullptr) manager = manager_.get();
    auto parsed = ParseProcessRequest(std::string_view(json));
    rapidjson::Document doc;
    if (!parsed) {
      doc.Parse(RenderToolError(parsed.error()).c_str());
      return doc;
    }
    ProcessResult result = manager->Process(*parsed, scope);
    doc.Parse((result.error ? RenderToolError(*result.error) : result.json).c_str());
    return doc;
  }
  static std::string Text(const rapidjson::Document& d) {
    if (d.HasMember("error")) return std::string("ERROR ") + d["error"]["message"].GetString();
    return d["content"][0]["text"].GetString();
  }
  std::string Act(const std::string& id, const std::string& action, const std::string& extra = "",
                  const Scope& scope = {}) {
    return Text(Call(R"({"action":")" + action + R"(","sessionId":")" + id + "\"" +
                         (extra.empty() ? "" : "," + extra) + "}",
                     scope));
  }

  // Polls until the process exited; returns all the output seen (drained polls concatenated,
  // or the final tail) and the last text.
  std::string PollUntilExit(const std::string& id, std::string* last = nullptr,
                            const Scope& scope = {}) {
    std::string seen;
    auto until = steady_clock::now() + std::chrono::seconds(30);
    while (steady_clock::now() < until) {
      std::string text = Act(id, "poll", R"("timeout":2000)", scope);
      if (last != nullptr) *last = text;
      size_t cut = text.rfind("\n\nProcess ");
      std::string body = cut == std::string::npos ? text : text.substr(0, cut);
      if (body != "(no new output)") seen += body + "\n";
      if (text.find("Process still running.") == std::string::npos) return seen;
    }
    ADD_FAILURE() << "session " << id << " did not exit";
    return seen;
  }

  // Polls (without draining away what matters: the log keeps everything) until `needle` shows
  // up in the session's log.
  bool WaitForLog(const std::string& id, const std::string& needle, int seconds = 10) {
    auto until = steady_clock::now() + std::chrono::seconds(seconds);
    while (steady_clock::now() < until) {
      if (Act(id, "log", R"("limit":1000)").find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }

  std::string dir_;
  exec::HostExecutor host_;
  std::unique_ptr<SessionManager> manager_;
};

TEST_F(SessionsTest, BackgroundCommandPolledUntilDone) {
  auto s = Launch(HostPlan("sleep 0.3; echo done"));
  ASSERT_TRUE(s);
  EXPECT_GT(s->pid(), 0);
  EXPECT_EQ(Act(s->id(), "poll"), "(no new output)\n\nProcess still running.");
  std::string last;
  std::string seen = PollUntilExit(s->id(), &last);
  EXPECT_EQ(seen, "done\n");
  EXPECT_EQ(last, "done\n\nProcess exited with code 0.");
  EXPECT_EQ(Act(s->id(), "poll"), "done\n\nProcess exited with code 0.");
  std::string list = Text(Call(R"({"action":"list"})"));
  EXPECT_TRUE(std::regex_match(list, std::regex(s->id() + " completed \\d+ms :: sleep 0.3;")))
      << list;
}

TEST_F(SessionsTest, WriteWithEofToCat) {
  auto s = Launch(HostPlan("cat; sleep 0.5"));  // still running after the EOF
  ASSERT_TRUE(s);
  EXPECT_EQ(Act(s->id(), "write", R"("data":"hello\n")"),
            "Wrote 6 bytes to session " + s->id() + ".");
  EXPECT_EQ(Act(s->id(), "write", R"("data":"world\n","eof":true)"),
            "Wrote 6 bytes to session " + s->id() + " (stdin closed).");
  EXPECT_EQ(Act(s->id(), "write", R"("data":"late")"),
            "ERROR Session " + s->id() + " stdin is not writable.");
  std::string last;
  EXPECT_EQ(PollUntilExit(s->id(), &last), "hello\nworld\n");
  EXPECT_EQ(last.substr(last.rfind("\n\n")), "\n\nProcess exited with code 0.");
}

TEST_F(SessionsTest, PtyShellReadsALineFromSendKeys) {
  auto s = Launch(HostPlan(R"(printf 'name? '; read line; echo "got:$line")", /*pty=*/true));
  ASSERT_TRUE(s);
  ASSERT_TRUE(WaitForLog(s->id(), "name?"));
  EXPECT_EQ(Act(s->id(), "send-keys", R"("literal":"sandrun","keys":["Enter"])"),
            "Sent 8 bytes to session " + s->id() + ".");
  std::string seen = PollUntilExit(s->id());
  EXPECT_NE(seen.find("got:sandrun"), std::string::npos) << seen;
  EXPECT_EQ(Act(s->id(), "log", R"("limit":1)"), "got:sandrun");
}

TEST_F(SessionsTest, ArrowKeysInCatV) {
  auto s = Launch(HostPlan("cat -v", /*pty=*/true));
  ASSERT_TRUE(s);
  // Nothing printed yet: the cursor key mode is unknown, unmodified arrows are refused.
  EXPECT_EQ(Act(s->id(), "send-keys", R"("keys":["up"])"),
            "ERROR Session " + s->id() +
                " cursor key mode is not known yet. Poll or log until startup output appears, "
                "then retry send-keys.");
  EXPECT_EQ(Act(s->id(), "send-keys", R"("keys":["s","t","a","r","t","Enter"])"),
            "Sent 6 bytes to session " + s->id() + ".");
  ASSERT_TRUE(WaitForLog(s->id(), "start"));
  EXPECT_EQ(Act(s->id(), "send-keys", R"("keys":["up","down","left","right","C-up","Enter"])"),
            "Sent 19 bytes to session " + s->id() + ".");
  ASSERT_TRUE(WaitForLog(s->id(), "^[[A^[[B^[[D^[[C^[[1;5A")) << Act(s->id(), "log");
  EXPECT_EQ(Act(s->id(), "send-keys", R"("keys":["C-d"])"),
            "Sent 1 bytes to session " + s->id() + ".");
  std::string last;
  PollUntilExit(s->id(), &last);
  EXPECT_NE(last.find("Process exited with code 0."), std::string::npos) << last;
}

TEST_F(SessionsTest, ApplicationCursorModeFromSmkx) {
  auto s = Launch(HostPlan(R"(printf '\033[?1hready\n'; cat -v)", /*pty=*/true));
  ASSERT_TRUE(s);
  ASSERT_TRUE(WaitForLog(s->id(), "ready"));
  EXPECT_EQ(s->cursor_key_mode(), CursorKeyMode::kApplication);
  Act(s->id(), "send-keys", R"("keys":["up","home","Enter"])");
  ASSERT_TRUE(WaitForLog(s->id(), "^[OA^[OH")) << Act(s->id(), "log");
  Act(s->id(), "kill");
}

TEST_F(SessionsTest, PasteIsBracketed) {
  auto s = Launch(HostPlan("cat -v", /*pty=*/true));
  ASSERT_TRUE(s);
  EXPECT_EQ(Act(s->id(), "paste", R"("text":"hi there")"),
            "Pasted 8 chars to session " + s->id() + ".");
  EXPECT_EQ(Act(s->id(), "submit"), "Submitted session " + s->id() + " (sent CR).");
  ASSERT_TRUE(WaitForLog(s->id(), "^[[200~hi there^[[201~")) << Act(s->id(), "log");
  Act(s->id(), "paste", R"("text":"plain","bracketed":false)");
  Act(s->id(), "submit");
  ASSERT_TRUE(WaitForLog(s->id(), "\nplain")) << Act(s->id(), "log");
  Act(s->id(), "write", R"("eof":true)");  // ^D on a terminal
  std::string last;
  PollUntilExit(s->id(), &last);
  EXPECT_NE(last.find("Process exited with code 0."), std::string::npos) << last;
}

TEST_F(SessionsTest, CursorPositionRequestsAreAnswered) {
  // A program asking where the cursor is (ESC[6n) gets ESC[1;1R on its terminal.
  auto s = Launch(HostPlan(R"(stty -echo -icanon min 1; printf '\033[6n'; )"
                           R"(r=$(dd bs=1 count=6 2>/dev/null | od -An -c | tr -d ' \n'); )"
                           R"(echo "reply:$r")",
                           /*pty=*/true));
  ASSERT_TRUE(s);
  std::string seen = PollUntilExit(s->id());
  EXPECT_NE(seen.find("reply:033[1;1R"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("6n"), std::string::npos) << seen;  // the request itself is stripped
}

TEST_F(SessionsTest, KillLeavesNoProcess) {
  auto s = Launch(HostPlan("sleep 1000 & echo child=$!; wait"));
  ASSERT_TRUE(s);
  ASSERT_TRUE(WaitForLog(s->id(), "child="));
  std::string log = Act(s->id(), "log");
  int64_t child = std::stoll(log.substr(log.find("child=") + 6));
  int64_t shell = s->pid();
  EXPECT_FALSE(Dead(child));
  EXPECT_EQ(Act(s->id(), "kill"), "Killed session " + s->id() + ".");
  auto until = steady_clock::now() + std::chrono::seconds(5);
  while ((!Dead(child) || !Dead(shell)) && steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(Dead(child));
  EXPECT_TRUE(Dead(shell));
  EXPECT_EQ(Act(s->id(), "poll"),
            "child=" + std::to_string(child) + "\n\nProcess exited with signal SIGKILL.");
  EXPECT_EQ(Act(s->id(), "kill"), "ERROR No active session found for " + s->id());
}

TEST_F(SessionsTest, TimeoutStillAppliesInTheBackground) {
  exec::Plan plan = HostPlan("echo started; sleep 100");
  plan.timeout_ms = 300;
  plan.kill_grace_ms = 200;
  auto s = Launch(plan);
  ASSERT_TRUE(s);
  std::string last;
  PollUntilExit(s->id(), &last);
  EXPECT_EQ(last, "started\n\nCommand timed out after 1 seconds");
  auto d = Call(R"({"action":"poll","sessionId":")" + s->id() + R"("})");
  EXPECT_STREQ(d["details"]["status"].GetString(), "failed");
  EXPECT_TRUE(d["details"]["timedOut"].GetBool());
}

TEST_F(SessionsTest, TwoScopesCannotSeeEachOther) {
  Scope alice{"", "alice", ""};
  Scope bob{"", "bob", ""};
  auto s = Launch(HostPlan("sleep 1000"), alice);
  ASSERT_TRUE(s);
  for (const char* action : {"poll", "log", "remove"}) {
    EXPECT_EQ(Act(s->id(), action, "", bob), "ERROR No session found for " + s->id());
  }
  EXPECT_EQ(Act(s->id(), "kill", "", bob), "ERROR No active session found for " + s->id());
  EXPECT_EQ(Act(s->id(), "write", R"("data":"x")", bob),
            "ERROR No active session found for " + s->id());
  EXPECT_EQ(Text(Call(R"({"action":"list"})", bob)), "No running or recent sessions.");
  EXPECT_FALSE(s->finished());
  EXPECT_EQ(Act(s->id(), "kill", "", alice), "Killed session " + s->id() + ".");
}

TEST_F(SessionsTest, RecoverShowsFinishedSessionsAndTheirFullLog) {
  auto s = Launch(HostPlan("seq 1 500"));
  ASSERT_TRUE(s);
  const std::string id = s->id();
  PollUntilExit(id);
  s.reset();
  manager_.reset();  // the server goes away

  manager_ = MakeManager(dir_);
  auto report = manager_->Recover();
  ASSERT_TRUE(report) << report.error().ToString();
  EXPECT_EQ(report->finished, 1);
  std::string list = Text(Call(R"({"action":"list"})"));
  EXPECT_EQ(list.substr(0, id.size() + 10), id + " completed");
  std::string last200;
  for (int i = 301; i <= 500; ++i) last200 += std::to_string(i) + (i < 500 ? "\n" : "");
  EXPECT_EQ(Act(id, "log"),
            last200 + "\n\n[showing last 200 of 500 lines; pass offset/limit to page]");
  EXPECT_EQ(Act(id, "log", R"("offset":0,"limit":3)"), "1\n2\n3");
  EXPECT_EQ(Act(id, "poll").substr(0, 4), "1\n2\n");
}

TEST_F(SessionsTest, RecoverMarksSessionsWhoseProcessIsGoneAsLost) {
  auto s = Launch(HostPlan("echo started; sleep 1000"));
  ASSERT_TRUE(s);
  ASSERT_TRUE(WaitForLog(s->id(), "started"));
  const std::string id = s->id();
  // What a crashed server leaves on disk while the command runs.
  const std::string alive_dir = dir_ + "/alive";
  const std::string gone_dir = dir_ + "/gone";
  for (const auto& d : {alive_dir, gone_dir}) {
    fs::create_directories(d + "/sessions");
    fs::copy(dir_ + "/sessions/" + id, d + "/sessions/" + id);
  }
  auto alive = MakeManager(alive_dir);
  auto report = alive->Recover();
  ASSERT_TRUE(report);
  EXPECT_EQ(report->lost, 1);
  EXPECT_EQ(Text(Call(R"({"action":"poll","sessionId":")" + id + R"("})", {}, alive.get())),
            "started\n\nProcess was lost when the server restarted. It is still running as pid " +
                std::to_string(s->pid()) + " (process group " + std::to_string(s->pid()) +
                ") but no longer attached.");

  Act(id, "kill");  // now the process is gone
  auto gone = MakeManager(gone_dir);
  report = gone->Recover();
  ASSERT_TRUE(report);
  EXPECT_EQ(report->lost, 1);
  auto d = Call(R"({"action":"poll","sessionId":")" + id + R"("})", {}, gone.get());
  EXPECT_EQ(Text(d), "started\n\nProcess was lost when the server restarted.");
  EXPECT_STREQ(d["details"]["status"].GetString(), "failed");
  std::string list = Text(Call(R"({"action":"list"})", {}, gone.get()));
  EXPECT_EQ(list.substr(0, id.size() + 10), id + " failed   ");
  EXPECT_EQ(Text(Call(R"({"action":"log","sessionId":")" + id + R"("})", {}, gone.get())),
            "started");
}

TEST_F(SessionsTest, TwentyConcurrentSessionsKeepAllTheirOutput) {
  constexpr int kSessions = 20;
  constexpr int kLines = 3000;
  std::vector<std::shared_ptr<Session>> sessions;
  for (int n = 0; n < kSessions; ++n) {
    sessions.push_back(Launch(HostPlan(
        "i=1; while [ $i -le " + std::to_string(kLines) + " ]; do echo s" + std::to_string(n) +
        "-$i; i=$((i+1)); done; echo err" + std::to_string(n) + " >&2")));
    ASSERT_TRUE(sessions.back());
  }
  for (int n = 0; n < kSessions; ++n) {
    const auto& s = sessions[static_cast<size_t>(n)];
    ASSERT_TRUE(s->WaitFor(60000)) << s->id();
    std::string expected;
    for (int i = 1; i <= kLines; ++i) {
      expected += "s" + std::to_string(n) + "-" + std::to_string(i) + "\n";
    }
    // A finished session's poll shows its tail; the log has everything.
    std::string full = expected + "err" + std::to_string(n);  // ASCII: chars are bytes
    EXPECT_EQ(Act(s->id(), "poll"),
              full.substr(full.size() - 1999) + "\n\nProcess exited with code 0.");
    auto d = Call(R"({"action":"log","sessionId":")" + s->id() + R"(","offset":0,"limit":5000})");
    expected += "err" + std::to_string(n);
    EXPECT_EQ(Text(d), expected);
    EXPECT_EQ(d["details"]["totalLines"].GetInt64(), kLines + 1);
  }
  std::string list = Text(Call(R"({"action":"list"})"));
  EXPECT_EQ(std::count(list.begin(), list.end(), '\n'), kSessions - 1);
}

TEST_F(SessionsTest, ForegroundRunFinishedInItsWindowIsForgotten) {
  auto s = Launch(HostPlan("echo quick"), {}, /*background=*/false);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->WaitFor(10000));
  auto outcome = s->Outcome();
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->aggregated, "quick\n");
  EXPECT_EQ(outcome->exit_code, 0);
  const std::string id = s->id();
  manager_->Discard(id);
  EXPECT_EQ(Act(id, "poll"), "ERROR No session found for " + id);
  EXPECT_FALSE(fs::exists(dir_ + "/sessions/" + id));
}

TEST_F(SessionsTest, BadActionsIdsAndParams) {
  auto s = Launch(HostPlan("sleep 1000"));
  ASSERT_TRUE(s);
  EXPECT_EQ(Act(s->id(), "explode"), "ERROR Unknown action explode");
  EXPECT_EQ(Text(Call(R"({"action":"poll"})")), "ERROR sessionId is required for this action.");
  EXPECT_EQ(Act("swift-nothing", "poll"), "ERROR No session found for swift-nothing");
  EXPECT_EQ(Act(s->id(), "poll", R"("timeout":"soon")"),
            "ERROR process parameter \"timeout\" must be a number, got string");
  EXPECT_EQ(Act(s->id(), "send-keys", R"("keys":"Enter")"),
            "ERROR process parameter \"keys\" must be an array of strings, got string");
  EXPECT_EQ(Act(s->id(), "clear"), "ERROR No finished session found for " + s->id());
  EXPECT_EQ(Act(s->id(), "remove"), "Removed session " + s->id() + ".");
  EXPECT_EQ(Act(s->id(), "poll"), "ERROR No session found for " + s->id());
}

}  // namespace
}  // namespace sandrun::sessions

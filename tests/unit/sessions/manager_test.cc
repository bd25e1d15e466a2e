// The session registry and the process tool against a scripted RunningProcess: OpenClaw's texts
// and details for every action, scoping, events, TTL, recovery after a restart.
#include "runner/sessions/manager.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runner/wire/tool_result.h"

namespace sandrun::sessions {
namespace {

namespace fs = std::filesystem;

// A process whose output, exit and stdin the test controls.
class FakeProcess final : public exec::RunningProcess {
 public:
  explicit FakeProcess(int64_t pid, exec::ProcessKind kind = exec::ProcessKind::kHost)
      : pid_(pid), kind_(kind) {}
  exec::ProcessKind kind() const override { return kind_; }
  Status Release() override {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
    return Ok();
  }
  bool released() const {
    std::lock_guard<std::mutex> lock(mu_);
    return released_;
  }
  int64_t pid() const override { return pid_; }
  Status WriteStdin(std::string_view data) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return Error(ErrorCode::kConflict, "closed");
    written_ += data;
    return Ok();
  }
  Status CloseStdin() override {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    return Ok();
  }
  Status Resize(unsigned, unsigned) override { return Ok(); }
  Status Kill(int signal) override {
    std::lock_guard<std::mutex> lock(mu_);
    kills_.push_back(signal);
    if (!done_) {
      outcome_.status = exec::ExecOutcome::Status::kSignaled;
      outcome_.signal = signal;
      done_ = true;
      cv_.notify_all();
    }
    return Ok();
  }
  bool finished() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  exec::ExecOutcome Wait() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_ || released_; });
    return done_ ? outcome_ : exec::ExecOutcome{};
  }
  void Exit(int code) {
    std::lock_guard<std::mutex> lock(mu_);
    outcome_.status = exec::ExecOutcome::Status::kExited;
    outcome_.exit_code = code;
    done_ = true;
    cv_.notify_all();
  }
  std::string written() const {
    std::lock_guard<std::mutex> lock(mu_);
    return written_;
  }
  bool closed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  std::vector<int> kills() const {
    std::lock_guard<std::mutex> lock(mu_);
    return kills_;
  }

 private:
  int64_t pid_;
  exec::ProcessKind kind_;
  bool released_ = false;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool closed_ = false;
  std::string written_;
  std::vector<int> kills_;
  exec::ExecOutcome outcome_;
};

struct Started {
  std::shared_ptr<Session> session;
  FakeProcess* process = nullptr;  // owned by the session
  exec::LiveSink sink;
  const std::string& id() const { return session->id(); }
  void Out(std::string_view s) const { sink(exec::Stream::kStdout, s); }
  void Err(std::string_view s) const { sink(exec::Stream::kStderr, s); }
  void Exit(int code) const {
    process->Exit(code);
    ASSERT_TRUE(session->WaitFor(5000));
  }
};

class ManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sessions_mgr_XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    manager_ = MakeManager();
  }
  void TearDown() override {
    manager_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::unique_ptr<SessionManager> MakeManager(int64_t cleanup_ms = 30 * 60 * 1000) {
    Options options;
    options.state_dir = dir_;
    options.sweeper_thread = false;
    options.cleanup_ms = cleanup_ms;
    options.now_ms = [this] { return now_.load(); };
    auto manager = std::make_unique<SessionManager>(options);
    manager->SetEventSink([this](const Event& e) {
      std::lock_guard<std::mutex> lock(events_mu_);
      events_.push_back(e);
    });
    return manager;
  }

  Started Start(const std::string& command, bool background = true, SessionMeta meta = {}) {
    meta.command = command;
    if (meta.cwd.empty()) meta.cwd = "/work";
    if (meta.host.empty()) meta.host = "gateway";
    auto begun = manager_->Begin(meta);
    EXPECT_TRUE(begun);
    Started run;
    run.session = *begun;
    run.sink = run.session->Sink();
    auto process = std::make_unique<FakeProcess>(next_pid_++, meta.host == "sandbox"
                                                                  ? exec::ProcessKind::kContainer
                                                                  : exec::ProcessKind::kHost);
    run.process = process.get();
    run.session->Attach(std::move(process));
    if (background) run.session->MarkBackgrounded();
    return run;
  }

  // Runs a process tool call (JSON text) and parses the result.
  rapidjson::Document Call(const std::string& json, const Scope& scope = {}) {
    auto parsed = ParseProcessRequest(std::string_view(json));
    if (!parsed) {
      ADD_FAILURE() << json << ": " << parsed.error().ToString();
      return rapidjson::Document();
    }
    ProcessResult result = manager_->Process(*parsed, scope);
    EXPECT_EQ(result.refused, result.error.has_value());
    if (result.error) result.json = RenderToolError(*result.error);  // as the front end does
    rapidjson::Document doc;
    doc.Parse(result.json.c_str());
    EXPECT_FALSE(doc.HasParseError()) << result.json;
    EXPECT_EQ(result.refused, doc.HasMember("error")) << result.json;
    return doc;
  }
  static std::string Text(const rapidjson::Document& d) {
    if (d.HasMember("error")) return std::string("ERROR ") + d["error"]["message"].GetString();
    return d["content"][0]["text"].GetString();
  }
  static std::string Code(const rapidjson::Document& d) {
    return d.HasMember("error") ? d["error"]["code"].GetString() : "";
  }
  static std::string Detail(const rapidjson::Document& d, const char* key) {
    const auto& v = d["details"];
    if (!v.HasMember(key)) return "<absent>";
    if (v[key].IsString()) return v[key].GetString();
    if (v[key].IsBool()) return v[key].GetBool() ? "true" : "false";
    if (v[key].IsInt64()) return std::to_string(v[key].GetInt64());
    return "<other>";
  }
  std::string Poll(const std::string& id, int timeout = 0) {
    return Text(Call(R"({"action":"poll","sessionId":")" + id + R"(","timeout":)" +
                     std::to_string(timeout) + "}"));
  }
  std::vector<Event> Events() {
    std::lock_guard<std::mutex> lock(events_mu_);
    return events_;
  }

  std::string dir_;
  std::atomic<int64_t> now_{1700000000000};
  std::unique_ptr<SessionManager> manager_;
  int64_t next_pid_ = 900000;
  std::mutex events_mu_;
  std::vector<Event> events_;
};

TEST_F(ManagerTest, PollDrainsNewOutputAndBacksOff) {
  Started run = Start("tail -f log");
  run.Out("hello\n");
  run.Err("warn\n");
  auto d = Call(R"({"action":"poll","sessionId":")" + run.id() + R"("})");
  EXPECT_EQ(Text(d), "hello\nwarn\n\nProcess still running.");
  EXPECT_EQ(Detail(d, "status"), "running");
  EXPECT_EQ(Detail(d, "sessionId"), run.id());
  EXPECT_EQ(Detail(d, "retryInMs"), "5000");
  EXPECT_EQ(Detail(d, "aggregated"), "hello\nwarn\n");
  EXPECT_EQ(Detail(d, "name"), "tail log");
  EXPECT_EQ(Detail(d, "exitCode"), "<absent>");
  std::vector<std::string> retries;
  for (int i = 0; i < 5; ++i) {
    d = Call(R"({"action":"poll","sessionId":")" + run.id() + R"("})");
    EXPECT_EQ(Text(d), "(no new output)\n\nProcess still running.");
    retries.push_back(Detail(d, "retryInMs"));
  }
  EXPECT_EQ(retries, (std::vector<std::string>{"5000", "10000", "30000", "60000", "60000"}));
  run.Out("more\n");
  d = Call(R"({"action":"poll","sessionId":")" + run.id() + R"("})");
  EXPECT_EQ(Text(d), "more\n\nProcess still running.");
  EXPECT_EQ(Detail(d, "retryInMs"), "5000");
}

TEST_F(ManagerTest, PollWaitsForTheExitAndReportsIt) {
  Started run = Start("make");
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    run.Out("built\n");
    run.process->Exit(3);
  });
  auto started = std::chrono::steady_clock::now();
  auto d = Call(R"({"action":"poll","sessionId":")" + run.id() + R"(","timeout":5000})");
  finisher.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(4));
  EXPECT_EQ(Text(d), "built\n\nProcess exited with code 3.");
  EXPECT_EQ(Detail(d, "status"), "failed");
  EXPECT_EQ(Detail(d, "exitCode"), "3");
  EXPECT_EQ(Detail(d, "retryInMs"), "<absent>");
  // Once finished: the tail and the exit line.
  d = Call(R"({"action":"poll","sessionId":")" + run.id() + R"("})");
  EXPECT_EQ(Text(d), "built\n\nProcess exited with code 3.");
  EXPECT_EQ(Detail(d, "status"), "failed");
}

TEST_F(ManagerTest, PollOfAFinishedSessionWithoutOutput) {
  Started run = Start("true");
  run.Exit(0);
  auto d = Call(R"({"action":"poll","sessionId":")" + run.id() + R"("})");
  EXPECT_EQ(Text(d), "(no output recorded)\n\nProcess exited with code 0.");
  EXPECT_EQ(Detail(d, "status"), "completed");
  EXPECT_EQ(Detail(d, "exitCode"), "0");
}

TEST_F(ManagerTest, PollTimeoutIsClampedAndZeroDoesNotWait) {
  Started run = Start("sleep 100");
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(Poll(run.id(), 0), "(no new output)\n\nProcess still running.");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(500));
  started = std::chrono::steady_clock::now();
  EXPECT_EQ(Poll(run.id(), 150), "(no new output)\n\nProcess still running.");
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(140));
}

TEST_F(ManagerTest, RefusalsUseOpenClawsTexts) {
  Started running = Start("sleep 100");
  Started done = Start("echo hi");
  done.Exit(0);
  struct Case {
    std::string json;
    std::string code;
    std::string message;
  };
  const std::string r = running.id();
  const std::string f = done.id();
  const Case cases[] = {
      {R"({"action":"poll"})", "invalid-request", "sessionId is required for this action."},
      {R"({"action":"frob"})", "invalid-request", "sessionId is required for this action."},
      {R"({"action":"frob","sessionId":"x"})", "unknown-action", "Unknown action frob"},
      {R"({"action":"poll","sessionId":""})", "invalid-request",
       "sessionId is required for this action."},
      {R"({"action":"poll","sessionId":"nope-nope"})", "session-not-found",
       "No session found for nope-nope"},
      {R"({"action":"log","sessionId":"nope-nope"})", "session-not-found",
       "No session found for nope-nope"},
      {R"({"action":"remove","sessionId":"nope-nope"})", "session-not-found",
       "No session found for nope-nope"},
      {R"({"action":"write","sessionId":"nope-nope","data":"x"})", "session-not-found",
       "No active session found for nope-nope"},
      {R"({"action":"write","sessionId":")" + f + R"(","data":"x"})", "session-not-found",
       "No active session found for " + f},
      {R"({"action":"send-keys","sessionId":")" + f + R"(","keys":["a"]})", "session-not-found",
       "No active session found for " + f},
      {R"({"action":"kill","sessionId":")" + f + R"("})", "session-not-found",
       "No active session found for " + f},
      {R"({"action":"submit","sessionId":"nope-nope"})", "session-not-found",
       "No active session found for nope-nope"},
      {R"({"action":"clear","sessionId":")" + r + R"("})", "session-not-found",
       "No finished session found for " + r},
      {R"({"action":"send-keys","sessionId":")" + r + R"("})", "invalid-request",
       "No key data provided."},
      {R"({"action":"send-keys","sessionId":")" + r + R"(","hex":["zz"]})", "invalid-request",
       "No key data provided."},
      {R"({"action":"paste","sessionId":")" + r + R"("})", "invalid-request",
       "No paste text provided."},
      {R"({"action":"paste","sessionId":")" + r + R"(","text":""})", "invalid-request",
       "No paste text provided."},
  };
  for (const auto& c : cases) {
    auto d = Call(c.json);
    EXPECT_EQ(Code(d), c.code) << c.json;
    EXPECT_EQ(Text(d), "ERROR " + c.message) << c.json;
  }
  EXPECT_EQ(running.process->written(), "");  // nothing was sent by any of them
}

TEST_F(ManagerTest, RunsInsideTheirYieldWindowAreNotBackgrounded) {
  Started run = Start("sleep 1", /*background=*/false);
  const std::string id = run.id();
  for (const char* action : {"poll", "log", "kill", "submit"}) {
    auto d = Call(std::string(R"({"action":")") + action + R"(","sessionId":")" + id + R"("})");
    EXPECT_EQ(Code(d), "session-state") << action;
    EXPECT_EQ(Text(d), "ERROR Session " + id + " is not backgrounded.") << action;
  }
  EXPECT_EQ(Text(Call(R"({"action":"list"})")), "No running or recent sessions.");
  run.Out("x");
  run.Exit(0);
  // Finished inside the window: never a background session.
  EXPECT_EQ(Code(Call(R"({"action":"poll","sessionId":")" + id + R"("})")), "session-not-found");
  EXPECT_EQ(run.session->Outcome()->aggregated, "x");
  manager_->Discard(id);
  EXPECT_EQ(manager_->size(), 0u);
  EXPECT_FALSE(fs::exists(dir_ + "/sessions/" + id));  // never touched the disk
  EXPECT_TRUE(Events().empty());
}

TEST_F(ManagerTest, DiscardKillsARunStillGoing) {
  Started run = Start("sleep 100", /*background=*/false);
  manager_->Discard(run.id());
  EXPECT_EQ(run.process->kills(), (std::vector<int>{SIGKILL}));
  EXPECT_TRUE(run.session->finished());
  Started bg = Start("sleep 100");
  manager_->Discard(bg.id());  // background sessions are not discarded
  EXPECT_EQ(manager_->size(), 1u);
}

TEST_F(ManagerTest, ScopesCannotSeeEachOther) {
  SessionMeta meta;
  meta.scope = Scope{"acme", "main", ""};
  Started run = Start("sleep 100", true, meta);
  const std::string poll = R"({"action":"poll","sessionId":")" + run.id() + R"("})";
  EXPECT_EQ(Text(Call(poll, Scope{"acme", "main", ""})),
            "(no new output)\n\nProcess still running.");
  for (const Scope& other : {Scope{"other", "main", ""}, Scope{"acme", "ops", ""},
                             Scope{"acme", "main", "chat-1"}, Scope{}}) {
    auto d = Call(poll, other);
    EXPECT_EQ(Text(d), "ERROR No session found for " + run.id());
    EXPECT_EQ(Text(Call(R"({"action":"list"})", other)), "No running or recent sessions.");
    EXPECT_EQ(Code(Call(R"({"action":"kill","sessionId":")" + run.id() + R"("})", other)),
              "session-not-found");
  }
  EXPECT_TRUE(run.process->kills().empty());
  EXPECT_EQ(Scope{}.Key(), "agent:main");
  EXPECT_EQ((Scope{"", "main", "k"}.Key()), "k");
}

TEST_F(ManagerTest, WriteAndEof) {
  Started run = Start("cat");
  auto d = Call(R"({"action":"write","sessionId":")" + run.id() + R"(","data":"hello"})");
  EXPECT_EQ(Text(d), "Wrote 5 bytes to session " + run.id() + ".");
  EXPECT_EQ(Detail(d, "status"), "running");
  EXPECT_EQ(Detail(d, "name"), "cat");
  d = Call(R"({"action":"write","sessionId":")" + run.id() + R"(","data":" w\u00e9","eof":true})");
  EXPECT_EQ(Text(d), "Wrote 4 bytes to session " + run.id() + " (stdin closed).");
  EXPECT_EQ(run.process->written(), "hello w\xC3\xA9");
  EXPECT_TRUE(run.process->closed());
  d = Call(R"({"action":"write","sessionId":")" + run.id() + R"(","data":"more"})");
  EXPECT_EQ(Text(d), "ERROR Session " + run.id() + " stdin is not writable.");
  EXPECT_EQ(Code(d), "session-state");
}

TEST_F(ManagerTest, SendKeysSubmitAndPaste) {
  SessionMeta meta;
  meta.pty = true;
  Started run = Start("vim", true, meta);
  const std::string keys = R"({"action":"send-keys","sessionId":")" + run.id() + R"(",)";
  // No output yet: the cursor key mode is unknown.
  auto d = Call(keys + R"("keys":["up"]})");
  EXPECT_EQ(Text(d), "ERROR Session " + run.id() +
                         " cursor key mode is not known yet. Poll or log until startup output "
                         "appears, then retry send-keys.");
  d = Call(keys + R"("keys":["C-up","a"]})");  // modified keys do not depend on it
  EXPECT_EQ(Text(d), "Sent 7 bytes to session " + run.id() + ".");
  run.Out("$ ");
  d = Call(keys + R"("keys":["up"]})");
  EXPECT_EQ(Text(d), "Sent 3 bytes to session " + run.id() + ".");
  run.Out("\x1b[?1h");
  d = Call(keys + R"("literal":"x","hex":["0x41","q"],"keys":["up","M-oops"]})");
  EXPECT_EQ(Text(d), "Sent 9 bytes to session " + run.id() +
                         ".\nWarnings:\n- Invalid hex byte: q\n- Unknown key \"oops\" for "
                         "modifiers; sending literal.");
  d = Call(R"({"action":"submit","sessionId":")" + run.id() + R"("})");
  EXPECT_EQ(Text(d), "Submitted session " + run.id() + " (sent CR).");
  d = Call(R"({"action":"paste","sessionId":")" + run.id() + R"(","text":"a\u00e9"})");
  EXPECT_EQ(Text(d), "Pasted 2 chars to session " + run.id() + ".");
  d = Call(R"({"action":"paste","sessionId":")" + run.id() + R"(","text":"b","bracketed":false})");
  EXPECT_EQ(Text(d), "Pasted 1 chars to session " + run.id() + ".");
  EXPECT_EQ(run.process->written(),
            "\x1b[1;5Aa"
            "\x1b[A"
            "xA\x1bOAoops"
            "\r"
            "\x1b[200~a\xC3\xA9\x1b[201~"
            "b");
  // EOF on a terminal sends ^D and leaves it writable.
  d = Call(R"({"action":"write","sessionId":")" + run.id() + R"(","data":"","eof":true})");
  EXPECT_EQ(Text(d), "Wrote 0 bytes to session " + run.id() + " (stdin closed).");
  EXPECT_TRUE(run.process->closed());
}

TEST_F(ManagerTest, CursorPositionRequestsAreAnsweredAndStripped) {
  SessionMeta meta;
  meta.pty = true;
  meta.command = "sh";
  auto begun = manager_->Begin(meta);
  ASSERT_TRUE(begun);
  std::shared_ptr<Session> s = *begun;
  exec::LiveSink sink = s->Sink();
  sink(exec::Stream::kStdout, "x\x1b[6n");  // before Attach: answered once attached
  auto process = std::make_unique<FakeProcess>(77);
  FakeProcess* raw = process.get();
  s->Attach(std::move(process));
  EXPECT_EQ(raw->written(), "\x1b[1;1R");
  sink(exec::Stream::kStdout, "y\x1b[?");
  sink(exec::Stream::kStdout, "6nz");
  EXPECT_EQ(raw->written(), "\x1b[1;1R\x1b[1;1R");
  raw->Exit(0);
  ASSERT_TRUE(s->WaitFor(5000));
  EXPECT_EQ(s->Outcome()->aggregated, "xyz");
  manager_->Discard(s->id());
}

TEST_F(ManagerTest, KillClearRemove) {
  Started run = Start("sleep 100");
  auto d = Call(R"({"action":"kill","sessionId":")" + run.id() + R"("})");
  EXPECT_EQ(Text(d), "Killed session " + run.id() + ".");
  EXPECT_EQ(Detail(d, "status"), "failed");
  EXPECT_EQ(Detail(d, "name"), "sleep 100");
  EXPECT_EQ(run.process->kills(), (std::vector<int>{SIGKILL}));
  d = Call(R"({"action":"poll","sessionId":")" + run.id() + R"("})");
  EXPECT_EQ(Text(d), "(no output recorded)\n\nProcess exited with signal SIGKILL.");
  EXPECT_EQ(Detail(d, "status"), "failed");
  EXPECT_EQ(Detail(d, "exitSignal"), "SIGKILL");
  ASSERT_TRUE(fs::exists(dir_ + "/sessions/" + run.id() + "/status.json"));
  d = Call(R"({"action":"clear","sessionId":")" + run.id() + R"("})");
  EXPECT_EQ(Text(d), "Cleared session " + run.id() + ".");
  EXPECT_EQ(Detail(d, "status"), "completed");
  EXPECT_FALSE(fs::exists(dir_ + "/sessions/" + run.id()));
  EXPECT_EQ(Code(Call(R"({"action":"poll","sessionId":")" + run.id() + R"("})")),
            "session-not-found");

  Started other = Start("sleep 200");
  d = Call(R"({"action":"remove","sessionId":")" + other.id() + R"("})");
  EXPECT_EQ(Text(d), "Removed session " + other.id() + ".");
  EXPECT_EQ(Detail(d, "status"), "failed");
  EXPECT_EQ(other.process->kills(), (std::vector<int>{SIGKILL}));
  EXPECT_FALSE(fs::exists(dir_ + "/sessions/" + other.id()));

  Started done = Start("true");
  done.Exit(0);
  d = Call(R"({"action":"remove","sessionId":")" + done.id() + R"("})");
  EXPECT_EQ(Text(d), "Removed session " + done.id() + ".");
  EXPECT_EQ(Detail(d, "status"), "completed");
  EXPECT_EQ(manager_->size(), 0u);
}

TEST_F(ManagerTest, ListShowsBackgroundSessionsNewestFirst) {
  Started first = Start("echo hi");
  first.Out("hi\n");
  now_ += 1500;
  first.Exit(0);
  Started second = Start("python3 -u server.py --port 8000");
  Started hidden = Start("sleep 5", /*background=*/false);
  SessionMeta named;
  named.name = "my build";
  now_ += 1000;
  Started third = Start("make -j8 all", true, named);
  now_ += 42000;
  auto d = Call(R"({"action":"list"})");
  EXPECT_EQ(Text(d), third.id() + " running   42s :: my build\n" + second.id() +
                         " running   43s :: python3 server.py\n" + first.id() +
                         " completed 1s :: echo hi");
  EXPECT_EQ(Detail(d, "status"), "completed");
  const auto& rows = d["details"]["sessions"];
  ASSERT_EQ(rows.Size(), 3u);
  EXPECT_STREQ(rows[2]["sessionId"].GetString(), first.id().c_str());
  EXPECT_STREQ(rows[2]["status"].GetString(), "completed");
  EXPECT_EQ(rows[2]["exitCode"].GetInt(), 0);
  EXPECT_EQ(rows[2]["runtimeMs"].GetInt64(), 1500);
  EXPECT_STREQ(rows[2]["tail"].GetString(), "hi\n");
  EXPECT_FALSE(rows[2].HasMember("pid"));
  EXPECT_TRUE(rows[0].HasMember("pid"));
  EXPECT_FALSE(rows[0].HasMember("endedAt"));
  EXPECT_STREQ(rows[0]["cwd"].GetString(), "/work");
  EXPECT_STREQ(rows[0]["command"].GetString(), "make -j8 all");
  EXPECT_STREQ(rows[0]["name"].GetString(), "my build");
  EXPECT_FALSE(rows[0]["truncated"].GetBool());
}

TEST_F(ManagerTest, LogPagesLines) {
  Started run = Start("seq 300");
  auto d = Call(R"({"action":"log","sessionId":")" + run.id() + R"("})");
  EXPECT_EQ(Text(d), "(no output yet)");
  std::string all;
  for (int i = 1; i <= 300; ++i) all += std::to_string(i) + "\n";
  run.Out(all);
  auto expect = [](int from, int to) {  // lines "from".."to" inclusive
    std::string s;
    for (int i = from; i <= to; ++i) s += (s.empty() ? "" : "\n") + std::to_string(i);
    return s;
  };
  d = Call(R"({"action":"log","sessionId":")" + run.id() + R"("})");
  EXPECT_EQ(Text(d),
            expect(101, 300) + "\n\n[showing last 200 of 300 lines; pass offset/limit to page]");
  EXPECT_EQ(Detail(d, "status"), "running");
  EXPECT_EQ(Detail(d, "total"), "300");
  EXPECT_EQ(Detail(d, "totalLines"), "300");
  EXPECT_EQ(Detail(d, "totalChars"), std::to_string(all.size()));
  EXPECT_EQ(Detail(d, "truncated"), "false");
  d = Call(R"({"action":"log","sessionId":")" + run.id() + R"(","offset":10,"limit":3})");
  EXPECT_EQ(Text(d), expect(11, 13));
  d = Call(R"({"action":"log","sessionId":")" + run.id() + R"(","limit":2})");
  EXPECT_EQ(Text(d), expect(299, 300));
  d = Call(R"({"action":"log","sessionId":")" + run.id() + R"(","offset":295})");
  EXPECT_EQ(Text(d), expect(296, 300));
  run.Exit(0);
  d = Call(R"({"action":"log","sessionId":")" + run.id() + R"(","offset":0,"limit":2})");
  EXPECT_EQ(Text(d), expect(1, 2));
  EXPECT_EQ(Detail(d, "status"), "completed");
  EXPECT_EQ(Detail(d, "exitCode"), "0");
  Started quiet = Start("true");
  quiet.Exit(0);
  EXPECT_EQ(Text(Call(R"({"action":"log","sessionId":")" + quiet.id() + R"("})")),
            "(no output recorded)");
}

TEST_F(ManagerTest, ExitEventsFollowNotifyOnExit) {
  Started ok = Start("echo hello");
  ok.Out("hello\n  world\n");
  ok.Exit(0);
  Started quiet = Start("true");
  quiet.Exit(0);
  SessionMeta loud;
  loud.notify_on_exit_empty_success = true;
  Started quiet_but_told = Start("true", true, loud);
  quiet_but_told.Exit(0);
  Started bad = Start("false");
  bad.Err("boom");
  bad.Exit(2);
  SessionMeta silent;
  silent.notify_on_exit = false;
  Started muted = Start("false", true, silent);
  muted.Exit(1);
  Started killed = Start("sleep 100");
  ASSERT_TRUE(killed.session->Kill());

  std::vector<std::string> exits;
  int started = 0;
  for (const auto& e : Events()) {
    if (e.type == Event::Type::kSessionStarted) {
      ++started;
      continue;
    }
    exits.push_back(std::string(Event::TypeName(e.type)) + " " + e.text);
  }
  EXPECT_EQ(started, 6);
  auto id8 = [](const Started& r) { return r.id().substr(0, 8); };
  std::sort(exits.begin(), exits.end());  // emitted from each session's own waiter thread
  std::vector<std::string> want = {
      "exec.finished Exec completed (" + id8(ok) + ", code 0) :: hello world",
      "exec.finished Exec completed (" + id8(quiet_but_told) + ", code 0)",
      "exec.failed Exec failed (" + id8(bad) + ", code 2) :: boom",
      "exec.failed Exec failed (" + id8(killed) + ", signal SIGKILL)",
  };
  std::sort(want.begin(), want.end());
  EXPECT_EQ(exits, want);
  Event e = Events().front();
  EXPECT_EQ(e.type, Event::Type::kSessionStarted);
  EXPECT_EQ(e.text,
            "Exec running in background (session " + ok.id() + ", pid 900000) :: echo hello");
  EXPECT_NE(e.ToJson().find(R"("type":"session.started","sessionId":")" + ok.id()),
            std::string::npos);
}

TEST_F(ManagerTest, BackgroundedAfterItFinishedStillNotifies) {
  Started run = Start("echo late", /*background=*/false);
  run.Out("late\n");
  run.Exit(0);
  run.session->MarkBackgrounded();
  EXPECT_EQ(Poll(run.id()), "late\n\nProcess exited with code 0.");
  ASSERT_EQ(Events().size(), 2u);
  EXPECT_EQ(Events()[1].type, Event::Type::kExecFinished);
  EXPECT_TRUE(fs::exists(dir_ + "/sessions/" + run.id() + "/status.json"));
}

TEST_F(ManagerTest, RenderRunning) {
  Started run = Start("sleep 100");
  run.Out("starting\n");
  rapidjson::Document d;
  d.Parse(RenderRunning(*run.session, {"Warning: a", "Warning: b"}).c_str());
  EXPECT_EQ(Text(d), "Warning: a\nWarning: b\n\nCommand still running (session " + run.id() +
                         ", pid 900000). Use process (list/poll/log/write/kill/clear/remove) for "
                         "follow-up.");
  EXPECT_EQ(Detail(d, "status"), "running");
  EXPECT_EQ(Detail(d, "sessionId"), run.id());
  EXPECT_EQ(Detail(d, "pid"), "900000");
  EXPECT_EQ(Detail(d, "startedAt"), std::to_string(now_.load()));
  EXPECT_EQ(Detail(d, "cwd"), "/work");
  EXPECT_EQ(Detail(d, "tail"), "starting\n");
  EXPECT_EQ(Detail(d, "host"), "gateway");
}

TEST_F(ManagerTest, SweepDropsFinishedSessionsAfterTheTtl) {
  manager_ = MakeManager(/*cleanup_ms=*/1);  // clamped to one minute
  Started done = Start("true");
  done.Exit(0);
  Started running = Start("sleep 1000");
  ASSERT_TRUE(fs::exists(dir_ + "/sessions/" + done.id()));
  now_ += 60000;
  manager_->Sweep();
  EXPECT_EQ(manager_->size(), 2u);
  now_ += 1;
  manager_->Sweep();
  EXPECT_EQ(manager_->size(), 1u);
  EXPECT_FALSE(fs::exists(dir_ + "/sessions/" + done.id()));
  EXPECT_TRUE(manager_->Find(running.id(), Scope{}) != nullptr);
}

TEST_F(ManagerTest, RecoverBringsBackFinishedSessionsAndMarksLostOnes) {
  SessionMeta meta;
  meta.scope = Scope{"t1", "main", ""};
  Started done = Start("seq 3", true, meta);
  done.Out("1\n2\n3\n");
  done.Exit(0);
  Started running = Start("sleep 1000", true, meta);
  running.Out("partial\n");
  Started foreground = Start("sleep 1", /*background=*/false, meta);
  foreground.Out(std::string(2 << 20, 'x'));  // a run in its yield window stays off the disk
  EXPECT_FALSE(fs::exists(dir_ + "/sessions/" + foreground.id()));
  // What an older crash could leave: a directory of a run that was never backgrounded.
  fs::create_directories(dir_ + "/sessions/never-backgrounded");
  std::ofstream(dir_ + "/sessions/never-backgrounded/meta.json")
      << R"({"id":"never-backgrounded","backgrounded":false})";
  const std::string done_id = done.id();
  const std::string running_id = running.id();
  // The server goes away without killing: the running session's process is left behind.
  manager_->Shutdown(/*kill_host_processes=*/false);
  EXPECT_TRUE(running.process->kills().empty());
  EXPECT_EQ(foreground.process->kills(), (std::vector<int>{SIGKILL}));
  done = {};
  running = {};
  foreground = {};
  manager_.reset();
  // A corrupt entry is reported and left alone.
  fs::create_directories(dir_ + "/sessions/broken-entry");
  std::ofstream(dir_ + "/sessions/broken-entry/meta.json") << "{nope";

  now_ += 5000;
  manager_ = MakeManager();
  auto report = manager_->Recover();
  ASSERT_TRUE(report) << report.error().ToString();
  EXPECT_EQ(report->finished, 1);
  EXPECT_EQ(report->lost, 1);
  EXPECT_EQ(report->dropped, 1);
  ASSERT_EQ(report->warnings.size(), 1u);
  EXPECT_NE(report->warnings[0].find("broken-entry"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ + "/sessions/never-backgrounded"));
  EXPECT_TRUE(fs::exists(dir_ + "/sessions/broken-entry"));

  Scope scope{"t1", "main", ""};
  auto d = Call(R"({"action":"list"})", scope);
  EXPECT_EQ(d["details"]["sessions"].Size(), 2u);
  d = Call(R"({"action":"poll","sessionId":")" + done_id + R"("})", scope);
  EXPECT_EQ(Text(d), "1\n2\n3\n\nProcess exited with code 0.");
  EXPECT_EQ(Detail(d, "status"), "completed");
  d = Call(R"({"action":"log","sessionId":")" + done_id + R"(","offset":1})", scope);
  EXPECT_EQ(Text(d), "2\n3");
  d = Call(R"({"action":"poll","sessionId":")" + running_id + R"("})", scope);
  EXPECT_EQ(Text(d), "partial\n\nProcess was lost when the server restarted.");
  EXPECT_EQ(Detail(d, "status"), "failed");
  EXPECT_EQ(Detail(d, "lost"), "true");
  d = Call(R"({"action":"kill","sessionId":")" + running_id + R"("})", scope);
  EXPECT_EQ(Code(d), "session-not-found");
  EXPECT_EQ(Code(Call(R"({"action":"poll","sessionId":")" + done_id + R"("})")),
            "session-not-found");  // still scoped
  // New ids never collide with recovered ones, and a second restart keeps the lost mark.
  manager_.reset();
  manager_ = MakeManager();
  report = manager_->Recover();
  ASSERT_TRUE(report);
  EXPECT_EQ(report->finished, 2);
  EXPECT_EQ(report->lost, 0);
  EXPECT_EQ(Text(Call(R"({"action":"poll","sessionId":")" + running_id + R"("})", scope)),
            "partial\n\nProcess was lost when the server restarted.");
  // Past the TTL, a restart drops them.
  manager_.reset();
  now_ += 31 * 60 * 1000;
  manager_ = MakeManager();
  report = manager_->Recover();
  ASSERT_TRUE(report);
  EXPECT_EQ(report->dropped, 2);
  EXPECT_EQ(manager_->size(), 0u);
}

TEST_F(ManagerTest, OnlyOneManagerOwnsAStateDir) {
  ASSERT_TRUE(manager_->Recover());
  auto second = MakeManager();
  auto report = second->Recover();
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, ErrorCode::kConflict);
  second.reset();
  manager_.reset();
  manager_ = MakeManager();
  EXPECT_TRUE(manager_->Recover());  // released with its owner
}

TEST_F(ManagerTest, ShutdownKillsHostSessionsWhenAskedAndRefusesNewOnes) {
  Started host = Start("sleep 100");
  SessionMeta sandbox;
  sandbox.host = "sandbox";
  Started container = Start("sleep 100", true, sandbox);
  manager_->Shutdown(/*kill_host_processes=*/true);
  EXPECT_EQ(host.process->kills(), (std::vector<int>{SIGKILL}));
  EXPECT_TRUE(host.session->finished());
  EXPECT_TRUE(container.process->kills().empty());  // left running in its container
  EXPECT_TRUE(container.process->released());
  EXPECT_EQ(container.session->phase(), Phase::kReleased);
  EXPECT_FALSE(manager_->Begin(SessionMeta{}));
}

}  // namespace
}  // namespace sandrun::sessions

// Approvals and allowlists on the gateway (SPEC §6, reference §4.4) with the real binary: the
// rewritten allowlisted run, pipelines that must not hide an interpreter, the server's pending
// approvals (allow-once, allow-always, deny, timeout into askFallback), concurrent writers of
// the approvals file, a corrupt file kept aside, `policy check` agreeing with exec, CLI errors.
// Everything runs with sandbox.mode=off (no Docker needed) and harmless commands only.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "sandbox/base/sha256.h"
#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

using namespace std::chrono_literals;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// `command -v NAME` for an executable file on this process's PATH, then realpath (the machine
// may have merged /usr). "" when not found.
std::string Which(const std::string& name) {
  std::stringstream dirs(PublicPath());
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        ::access(candidate.c_str(), X_OK) != 0) {
      continue;
    }
    char real[PATH_MAX];
    if (::realpath(candidate.c_str(), real) != nullptr) return real;
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// One event of GET /v1/events.
struct Event {
  std::string type;
  std::string data;
};

// A GET /v1/events subscriber reading on its own thread; it is subscribed once the
// constructor returns (the server's "ready" event arrived).
class EventStream {
 public:
  explicit EventStream(const std::string& socket_path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    socket_path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ADD_FAILURE() << "cannot connect to " << socket_path;
      return;
    }
    std::string req = "GET /v1/events HTTP/1.1\r\nHost: sandrun\r\n\r\n";
    if (::write(fd_, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
      ADD_FAILURE() << "cannot send the events request";
      return;
    }
    reader_ = std::thread([this] {
      char buf[8192];
      for (;;) {
        ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n <= 0) break;
        std::lock_guard<std::mutex> lock(mu_);
        raw_.append(buf, static_cast<size_t>(n));
        cv_.notify_all();
      }
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      cv_.notify_all();
    });
    EXPECT_TRUE(Next("ready", {}, 10s).has_value()) << "no ready event: " << Raw();
  }

  ~EventStream() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
    if (reader_.joinable()) reader_.join();
    if (fd_ >= 0) ::close(fd_);
  }

  // Waits for an event of `type` whose data contains every one of `needles`.
  std::optional<Event> Next(const std::string& type, const std::vector<std::string>& needles,
                            std::chrono::milliseconds timeout = 15s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      for (const Event& e : EventsLocked()) {
        if (e.type != type) continue;
        bool all = true;
        for (const auto& n : needles) all = all && Contains(e.data, n);
        if (all) return e;
      }
      if (closed_) return std::nullopt;
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) return std::nullopt;
    }
  }

  std::vector<Event> Events() {
    std::lock_guard<std::mutex> lock(mu_);
    return EventsLocked();
  }

  std::string Raw() {
    std::lock_guard<std::mutex> lock(mu_);
    return raw_;
  }

 private:
  std::vector<Event> EventsLocked() const {
    std::vector<Event> events;
    size_t body = raw_.find("\r\n\r\n");
    if (body == std::string::npos) return events;
    size_t at = body + 4;
    for (size_t end; (end = raw_.find("\n\n", at)) != std::string::npos; at = end + 2) {
      Event e;
      std::stringstream block(raw_.substr(at, end - at));
      std::string line;
      while (std::getline(block, line)) {
        if (line.starts_with("event: ")) e.type = line.substr(7);
        if (line.starts_with("data: ")) e.data += (e.data.empty() ? "" : "\n") + line.substr(6);
      }
      events.push_back(std::move(e));
    }
    return events;
  }

  int fd_ = -1;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string raw_;
  bool closed_ = false;
};

struct Entry {
  std::string id;  // "" in a hand-written entry
  std::string pattern;
  std::string source;
  bool has_last_used_at = false;
  int64_t last_used_at = 0;
  std::string last_used_command;
  std::string last_resolved_path;
};

class Approvals : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    echo_ = Which("echo");
    ls_ = Which("ls");
    ASSERT_FALSE(echo_.empty());
    ASSERT_FALSE(ls_.empty());
    std::ofstream(workspace_ + "/a.txt") << "alpha\n";
    Gateway("off");
  }

  void TearDown() override {
    events_.reset();
    StopServer();
    SandrunHome::TearDown();
  }

  // Gateway runs (no sandbox) with tools.exec.security=allowlist, the given ask, and `extra`
  // members added to tools.exec. loginShellPath=false: commands resolve on this process's PATH
  // (what Which() reads), and no call starts a login shell (whose profile may be slow or
  // contend for locks when many tests run at once).
  void Gateway(const std::string& ask, const std::string& extra = "",
               const std::string& security = "allowlist") {
    Config(R"({"sandbox": {"mode": "off"}, "tools": {"exec": {"loginShellPath": false, )"
           R"("security": ")" +
           security + R"(", "ask": ")" + ask + "\"" + (extra.empty() ? "" : ", " + extra) + "}}}");
  }

  std::string ApprovalsPath() const { return home_ + "/exec-approvals.json"; }
  void WriteApprovals(const std::string& text) { std::ofstream(ApprovalsPath()) << text; }
  // A hand-written file: agents.main.allowlist = `patterns` (no bookkeeping fields).
  void AllowOnly(const std::vector<std::string>& patterns, const std::string& defaults = "{}") {
    std::string list;
    for (const auto& p : patterns)
      list += (list.empty() ? "" : ", ") + ("{\"pattern\": \"" + p + "\"}");
    WriteApprovals(R"({"version": 1, "defaults": )" + defaults +
                   R"(, "agents": {"main": {"allowlist": [)" + list + "]}}}");
  }

  // agents.<agent>.allowlist as the file has it now.
  std::vector<Entry> Allowlist(const std::string& agent = "main") {
    std::vector<Entry> entries;
    std::string text = ReadFile(ApprovalsPath());
    if (text.empty()) return entries;
    auto doc = ParseJson(text);
    if (!doc) {
      ADD_FAILURE() << "the approvals file is not JSON: " << text;
      return entries;
    }
    EXPECT_EQ(JsonInt(*doc, "version"), 1) << text;
    const auto* agents = JsonMember(*doc, "agents");
    const auto* section = agents ? JsonMember(*agents, agent.c_str()) : nullptr;
    const auto* list = section ? JsonMember(*section, "allowlist") : nullptr;
    if (list == nullptr || !list->IsArray()) return entries;
    for (const auto& item : list->GetArray()) {
      Entry e;
      e.pattern = JsonString(item, "pattern");
      e.source = JsonString(item, "source");
      e.has_last_used_at = JsonMember(item, "lastUsedAt") != nullptr;
      e.last_used_at = JsonInt(item, "lastUsedAt");
      e.last_used_command = JsonString(item, "lastUsedCommand");
      e.last_resolved_path = JsonString(item, "lastResolvedPath");
      e.id = JsonString(item, "id");
      entries.push_back(std::move(e));
    }
    return entries;
  }

  std::optional<Entry> FindEntry(const std::string& pattern) {
    for (auto& e : Allowlist()) {
      if (e.pattern == pattern) return e;
    }
    return std::nullopt;
  }

  rapidjson::Document PolicyCheck(const std::string& command, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"policy", "check"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.push_back(command);
    auto r = Sandrun(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return Parsed(r.out);
  }

  ProcessResult Approve(const std::string& id, const std::string& decision) {
    return Sandrun({"approvals", "approve", id, decision});
  }

  // exec --json of a command that must need an approval; returns the pending result.
  rapidjson::Document Pending(const std::string& command) {
    auto r = Exec({"--json"}, command);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    auto doc = Parsed(r.out);
    EXPECT_EQ(Details(doc, "status"), "approval-pending") << r.out;
    return doc;
  }

  std::vector<std::string> PendingIds() {
    auto r = Sandrun({"approvals", "list", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto doc = Parsed(r.out);
    std::vector<std::string> ids;
    EXPECT_TRUE(JsonBool(doc, "server")) << r.out;
    if (const auto* pending = JsonMember(doc, "pending"); pending && pending->IsArray()) {
      for (const auto& p : pending->GetArray()) ids.push_back(JsonString(p, "id"));
    }
    return ids;
  }

  // Waits (polling, bounded) for a file to appear.
  bool AppearsWithin(const std::string& path, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::filesystem::exists(path)) return true;
      std::this_thread::sleep_for(20ms);
    }
    return std::filesystem::exists(path);
  }

  // Polls a background session (bounded) until it is no longer running; its final status.
  std::string SessionStatusWhenDone(const std::string& session) {
    std::string status;
    for (int i = 0; i < 40; ++i) {
      auto r = Sandrun({"process", "poll", "--session-id", session, "--timeout", "500"});
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
      status = Details(Parsed(r.out), "status");
      if (status != "running") return status;
    }
    ADD_FAILURE() << "session " << session << " did not finish";
    return status;
  }

  std::vector<std::string> CorruptCopies() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(home_)) {
      if (e.path().filename().string().starts_with("exec-approvals.json.corrupt-")) {
        out.push_back(e.path().string());
      }
    }
    return out;
  }

  // The base's server, plus this fixture's event stream.
  void StartServer() {
    SandrunHome::StartServer();
    if (server_pid_ > 0) events_ = std::make_unique<EventStream>(home_ + "/sandrun.sock");
  }
  void StopServer() {
    events_.reset();
    SandrunHome::StopServer();
  }

  std::string echo_, ls_;
  std::unique_ptr<EventStream> events_;
};

// ---------------------------------------------------------------------------------------------
// 1. The allowlisted pipeline runs rewritten, and the file records the use.

TEST_F(Approvals, AllowlistedPipelineRunsRewrittenAndRecordsItsUse) {
  const std::string wc = Which("wc");
  ASSERT_FALSE(wc.empty());
  auto add = Sandrun({"approvals", "allowlist", "add", echo_});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  ASSERT_TRUE(FindEntry(echo_).has_value()) << ReadFile(ApprovalsPath());
  EXPECT_EQ(FindEntry(echo_)->source, "operator");
  EXPECT_FALSE(FindEntry(echo_)->id.empty());
  EXPECT_EQ(FindEntry(echo_)->last_resolved_path, "");

  auto check = PolicyCheck("echo hi | wc -l");
  EXPECT_EQ(JsonString(check, "decision"), "allow") << ToJson(check);
  EXPECT_EQ(JsonString(check, "rewritten"), echo_ + " hi | " + wc + " -l") << ToJson(check);
  const auto* segments = JsonMember(*JsonMember(check, "analysis"), "segments");
  ASSERT_TRUE(segments && segments->IsArray() && segments->Size() == 2) << ToJson(check);
  EXPECT_EQ(JsonString((*segments)[0], "resolvedPath"), echo_);
  EXPECT_EQ(JsonString((*segments)[0], "satisfiedBy"), "allowlist");
  EXPECT_EQ(JsonString((*segments)[1], "resolvedPath"), wc);
  EXPECT_EQ(JsonString((*segments)[1], "satisfiedBy"), "safeBins");
  EXPECT_EQ(FindEntry(echo_)->last_resolved_path, "") << "policy check records nothing";

  const int64_t before = NowMs();
  auto r = Exec({}, "echo hi | wc -l");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
  auto entry = FindEntry(echo_);
  ASSERT_TRUE(entry.has_value()) << ReadFile(ApprovalsPath());
  EXPECT_TRUE(entry->has_last_used_at);
  EXPECT_GE(entry->last_used_at, before) << ReadFile(ApprovalsPath());
  EXPECT_LE(entry->last_used_at, NowMs());
  EXPECT_EQ(entry->last_resolved_path, echo_) << ReadFile(ApprovalsPath());
  EXPECT_EQ(entry->last_used_command, "echo hi | wc -l") << ReadFile(ApprovalsPath());
  EXPECT_EQ(entry->source, "operator");
}

// OpenClaw's format allows entries without an id (and plain strings); the first run they
// satisfy must be recorded too, not only the runs after sandrun has rewritten the file.
TEST_F(Approvals, HandWrittenEntryWithoutIdRecordsItsFirstUse) {
  WriteApprovals(R"({"version": 1, "agents": {"main": {"allowlist": [{"pattern": ")" + echo_ +
                 R"("}]}}})");
  const int64_t before = NowMs();
  auto r = Exec({}, "echo first");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "first\n");
  auto entry = FindEntry(echo_);
  ASSERT_TRUE(entry.has_value()) << ReadFile(ApprovalsPath());
  EXPECT_TRUE(entry->has_last_used_at) << ReadFile(ApprovalsPath());
  EXPECT_GE(entry->last_used_at, before);
  EXPECT_EQ(entry->last_used_command, "echo first") << ReadFile(ApprovalsPath());
  EXPECT_EQ(entry->last_resolved_path, echo_) << ReadFile(ApprovalsPath());
  EXPECT_EQ(entry->source, "") << "a hand-written entry keeps its (empty) source";
}

TEST_F(Approvals, WhatRunsIsTheResolvedPathNotTheShellBuiltin) {
  // The shell's builtin echo prints "--version"; only the resolved /usr/bin/echo (GNU) prints
  // its version, so this shows argv[0] was rewritten to the resolved path.
  auto direct = RunProcess({echo_, "--version"});
  if (!Contains(direct.out, "coreutils")) GTEST_SKIP() << echo_ << " is not GNU echo";
  AllowOnly({echo_});
  auto r = Exec({}, "echo --version");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "coreutils")) << r.out;
  // Arguments are quoted only where the shell would otherwise expand them.
  auto check = PolicyCheck("echo '$HOME' 'a b'");
  EXPECT_EQ(JsonString(check, "rewritten"), echo_ + " '$HOME' 'a b'") << ToJson(check);
  auto quoted = Exec({}, "echo '$HOME' 'a  b'");
  EXPECT_EQ(quoted.out, "$HOME a  b\n") << quoted.err;
}

// ---------------------------------------------------------------------------------------------
// 2. A pipeline never hides an interpreter; strictInlineEval never lets an inline program run
//    unapproved.

TEST_F(Approvals, AllowingEchoDoesNotAllowAPipedInterpreter) {
  const std::string python = Which("python3");
  if (python.empty()) GTEST_SKIP() << "no python3 on PATH";
  const std::string marker = marks_ + "/python-ran";
  const std::string command = "echo x | python3 -c 'open(\"" + marker + "\", \"w\").write(\"x\")'";

  AllowOnly({echo_});
  auto check = PolicyCheck(command);
  EXPECT_EQ(JsonString(check, "decision"), "deny") << ToJson(check);
  const auto* segments = JsonMember(*JsonMember(check, "analysis"), "segments");
  ASSERT_TRUE(segments && segments->Size() == 2) << ToJson(check);
  EXPECT_EQ(JsonString((*segments)[0], "satisfiedBy"), "allowlist");
  EXPECT_TRUE((*segments)[1]["satisfiedBy"].IsNull()) << ToJson(check);
  auto r = Exec({}, command);
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_TRUE(Contains(r.err, "sandrun: exec denied: allowlist miss")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "python ran";

  // Control: with python3 allowlisted as well the very same command does run (so the marker
  // above would have shown a run).
  AllowOnly({echo_, python});
  auto allowed = Exec({}, command);
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_TRUE(std::filesystem::exists(marker)) << "the control run should create the marker";
}

TEST_F(Approvals, StrictInlineEvalRefusesAnAllowlistedInterpreterProgram) {
  const std::string python = Which("python3");
  if (python.empty()) GTEST_SKIP() << "no python3 on PATH";
  const std::string marker = marks_ + "/inline-ran";
  const std::string command = "echo x | python3 -c 'open(\"" + marker + "\", \"w\").write(\"x\")'";
  // Both allowlisted, askFallback full: only strictInlineEval stands in the way.
  AllowOnly({echo_, python}, R"({"askFallback": "full"})");
  Gateway("off", R"("strictInlineEval": true)");

  auto check = PolicyCheck(command);
  EXPECT_EQ(JsonString(check, "decision"), "ask") << ToJson(check);
  EXPECT_EQ(ToJson(*JsonMember(check, "inlineEval")), R"(["python3 -c"])") << ToJson(check);
  auto r = Exec({}, command);
  EXPECT_EQ(r.exit_code, 125) << r.out << r.err;
  EXPECT_TRUE(Contains(
      r.err, "sandrun: exec denied: Headless runs cannot wait for interactive exec approval."))
      << r.err;
  auto json = Exec({"--json"}, command);
  EXPECT_EQ(json.exit_code, 2);
  auto doc = Parsed(json.out);
  EXPECT_EQ(JsonString(*JsonMember(doc, "error"), "code"), "approval-required") << json.out;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "an inline program ran without approval";

  // Even security=full does not let it through (reference §10).
  Gateway("off", R"("strictInlineEval": true)", "full");
  auto full = Exec({}, command);
  EXPECT_EQ(full.exit_code, 125) << full.err;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "an inline program ran under security=full";
  // Control: without strictInlineEval security=full runs it.
  Gateway("off", "", "full");
  auto control = Exec({}, command);
  EXPECT_EQ(control.exit_code, 0) << control.err;
  EXPECT_TRUE(std::filesystem::exists(marker));
}

TEST_F(Approvals, HeadlessAskIsDecidedAtOnceByAskFallback) {
  Gateway("on-miss");
  auto r = Exec({}, "ls " + workspace_);
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_TRUE(r.err.starts_with(
      "sandrun: exec denied: Headless runs cannot wait for interactive exec approval.\n"))
      << r.err;
  EXPECT_TRUE(Contains(r.err, "askFallback=allowlist")) << r.err;
  EXPECT_TRUE(r.out.empty());

  // ask=always on an allowlisted command: askFallback=allowlist approves the rewritten command.
  Gateway("always");
  AllowOnly({ls_}, R"({"askFallback": "allowlist"})");
  auto ok = Exec({}, "ls " + workspace_);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "a.txt\n");
  // askFallback=deny refuses even that.
  AllowOnly({ls_}, R"({"askFallback": "deny"})");
  auto denied = Exec({}, "ls " + workspace_);
  EXPECT_EQ(denied.exit_code, 125) << denied.out;
  EXPECT_TRUE(Contains(denied.err, "askFallback=deny")) << denied.err;
}

// ---------------------------------------------------------------------------------------------
// 3. With a server: pending approvals and their decisions.

TEST_F(Approvals, AllowAlwaysPersistsTheResolvedPathAndTheNextRunNeedsNoApproval) {
  Gateway("on-miss");
  StartServer();
  const std::string command = "ls " + workspace_;
  auto pending = Pending(command);
  const std::string id = Details(pending, "approvalId");
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(Details(pending, "approvalSlug"), id.substr(0, 8));
  EXPECT_EQ(ToJson(*JsonMember(*JsonMember(pending, "details"), "allowedDecisions")),
            R"(["allow-once","allow-always","deny"])");
  EXPECT_TRUE(events_->Next("approval.requested", {id}).has_value()) << events_->Raw();
  EXPECT_EQ(PendingIds(), std::vector<std::string>{id});
  EXPECT_TRUE(Allowlist().empty()) << "nothing persisted before the decision";

  auto approved = Approve(id, "allow-always");
  ASSERT_EQ(approved.exit_code, 0) << approved.out << approved.err;
  auto answer = Parsed(approved.out);
  EXPECT_TRUE(JsonBool(answer, "approved")) << approved.out;
  const std::string session = JsonString(answer, "sessionId");
  ASSERT_FALSE(session.empty()) << approved.out;
  auto resolved = events_->Next("approval.resolved", {id});
  ASSERT_TRUE(resolved.has_value()) << events_->Raw();
  auto resolved_doc = Parsed(resolved->data);
  EXPECT_EQ(JsonString(resolved_doc, "decision"), "allow-always");
  EXPECT_TRUE(JsonBool(resolved_doc, "approved"));
  EXPECT_EQ(JsonString(resolved_doc, "sessionId"), session);
  auto finished = events_->Next("exec.finished", {session});
  ASSERT_TRUE(finished.has_value()) << events_->Raw();
  EXPECT_TRUE(Contains(finished->data, "a.txt")) << finished->data;

  auto entries = Allowlist();
  ASSERT_EQ(entries.size(), 1u) << ReadFile(ApprovalsPath());
  EXPECT_EQ(entries[0].pattern, ls_);
  EXPECT_EQ(entries[0].source, "allow-always");
  EXPECT_FALSE(entries[0].id.empty());
  EXPECT_TRUE(entries[0].has_last_used_at);
  EXPECT_TRUE(PendingIds().empty());

  // The same command, and ls with other arguments (a path pattern, not the exact command),
  // now complete directly.
  auto again = Exec({"--json"}, command);
  auto again_doc = Parsed(again.out);
  EXPECT_EQ(Details(again_doc, "status"), "completed") << again.out;
  EXPECT_EQ(Details(again_doc, "aggregated"), "a.txt");
  auto other = Exec({"--json"}, "ls -a " + workspace_);
  EXPECT_EQ(Details(Parsed(other.out), "status"), "completed") << other.out;
  EXPECT_TRUE(PendingIds().empty());
  EXPECT_EQ(Allowlist().size(), 1u) << "no duplicate entry";
}

// A shell's payload is what allow-always persists, never the shell: one command or several.
TEST_F(Approvals, AllowAlwaysOnAShellWrapperPersistsThePayloadNeverTheShell) {
  Gateway("on-miss");
  StartServer();
  const std::string command = "sh -c 'ls " + workspace_ + "'";
  const std::string id = Details(Pending(command), "approvalId");
  auto approved = Approve(id, "allow-always");
  ASSERT_EQ(approved.exit_code, 0) << approved.out << approved.err;
  auto entries = Allowlist();
  ASSERT_EQ(entries.size(), 1u) << ReadFile(ApprovalsPath());
  EXPECT_EQ(entries[0].pattern, ls_);
  EXPECT_EQ(entries[0].source, "allow-always");

  auto again = Exec({"--json"}, command);
  EXPECT_EQ(Details(Parsed(again.out), "status"), "completed") << again.out;
  EXPECT_EQ(Details(Parsed(again.out), "aggregated"), "a.txt") << again.out;
  // Another payload of ls runs too; a payload of anything else still needs an approval, and so
  // does a shell with no payload to judge.
  auto other = Exec({"--json"}, "sh -c 'ls -a " + workspace_ + "'");
  EXPECT_EQ(Details(Parsed(other.out), "status"), "completed") << other.out;
  auto cat = Exec({"--json"}, "sh -c 'cat " + workspace_ + "/a.txt'");
  EXPECT_EQ(Details(Parsed(cat.out), "status"), "approval-pending") << cat.out;
  auto script = Exec({"--json"}, "sh " + workspace_ + "/a.txt");
  EXPECT_EQ(Details(Parsed(script.out), "status"), "approval-pending") << script.out;
}

TEST_F(Approvals, AllowAlwaysOnAnInterpreterNeverPersistsTheInterpreter) {
  const std::string python = Which("python3");
  if (python.empty()) GTEST_SKIP() << "no python3 on PATH";
  Gateway("on-miss");
  StartServer();
  const std::string command = "python3 -c 'print(6 * 7)'";
  const std::string id = Details(Pending(command), "approvalId");
  auto approved = Approve(id, "allow-always");
  ASSERT_EQ(approved.exit_code, 0) << approved.out << approved.err;
  for (const auto& e : Allowlist()) {
    EXPECT_NE(e.pattern, python) << "an interpreter was allowlisted";
    EXPECT_TRUE(e.pattern.starts_with("=command:")) << e.pattern;
  }
  auto other = Exec({"--json"}, "python3 -c 'print(1)'");
  EXPECT_EQ(Details(Parsed(other.out), "status"), "approval-pending") << other.out;
}

TEST_F(Approvals, AllowOncePersistsNothingAndTheNextRunAsksAgain) {
  Gateway("on-miss");
  StartServer();
  const std::string command = "ls " + workspace_;
  // Plain exec through the server: the approval id on stdout, the explanation on stderr.
  auto r = Exec({}, command);
  EXPECT_EQ(r.exit_code, 122) << r.err;  // waiting for an approval: nothing ran yet
  ASSERT_FALSE(r.out.empty());
  const std::string id = r.out.substr(0, r.out.size() - 1);
  EXPECT_EQ(r.out, id + "\n");
  EXPECT_TRUE(Contains(r.err, "Approval required (id " + id.substr(0, 8))) << r.err;

  auto approved = Approve(id.substr(0, 8), "allow-once");  // by slug
  ASSERT_EQ(approved.exit_code, 0) << approved.out << approved.err;
  const std::string session = JsonString(Parsed(approved.out), "sessionId");
  ASSERT_FALSE(session.empty()) << approved.out;
  auto finished = events_->Next("exec.finished", {session});
  ASSERT_TRUE(finished.has_value()) << events_->Raw();
  EXPECT_TRUE(Contains(finished->data, "a.txt")) << finished->data;
  auto poll = Sandrun({"process", "poll", "--session-id", session});
  EXPECT_EQ(Details(Parsed(poll.out), "status"), "completed") << poll.out;

  EXPECT_TRUE(Allowlist().empty()) << ReadFile(ApprovalsPath());
  auto again = Pending(command);
  EXPECT_NE(Details(again, "approvalId"), id);
  EXPECT_FALSE(Details(again, "approvalId").empty());
}

TEST_F(Approvals, DenyRunsNothingAndPublishesUserDenied) {
  Gateway("on-miss");
  StartServer();
  const std::string marker = workspace_ + "/denied-ran";
  const std::string id = Details(Pending("touch " + marker), "approvalId");
  ASSERT_FALSE(id.empty());
  auto denied = Approve(id, "deny");
  ASSERT_EQ(denied.exit_code, 0) << denied.out << denied.err;
  auto answer = Parsed(denied.out);
  EXPECT_FALSE(JsonBool(answer, "approved", true)) << denied.out;
  EXPECT_EQ(JsonMember(answer, "sessionId"), nullptr) << denied.out;

  auto resolved = events_->Next("approval.resolved", {id});
  ASSERT_TRUE(resolved.has_value()) << events_->Raw();
  auto doc = Parsed(resolved->data);
  EXPECT_EQ(JsonString(doc, "decision"), "deny");
  EXPECT_FALSE(JsonBool(doc, "approved", true));
  EXPECT_TRUE(Contains(JsonString(doc, "text"), "user-denied")) << resolved->data;

  auto list = Sandrun({"process", "list"});
  EXPECT_TRUE(Contains(list.out, "No running or recent sessions.")) << list.out;
  for (const auto& e : events_->Events()) {
    EXPECT_NE(e.type, "session.started") << "something was started: " << e.data;
  }
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_TRUE(Allowlist().empty());
  auto twice = Approve(id, "allow-once");
  EXPECT_EQ(twice.exit_code, 2) << "a decided approval cannot be decided again: " << twice.out;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(Approvals, TimeoutWithAskFallbackDenyRefuses) {
  Gateway("on-miss", R"("approvalTimeoutMs": 1000)");
  WriteApprovals(R"({"version": 1, "defaults": {"askFallback": "deny"}})");
  StartServer();
  const std::string marker = workspace_ + "/timeout-ran";
  const int64_t before = NowMs();
  auto pending = Pending("touch " + marker);
  const std::string id = Details(pending, "approvalId");
  const int64_t expires = JsonInt(*JsonMember(pending, "details"), "expiresAtMs");
  EXPECT_GE(expires, before + 1000);
  EXPECT_LE(expires, NowMs() + 1000);

  auto resolved = events_->Next("approval.resolved", {id}, 10s);
  ASSERT_TRUE(resolved.has_value()) << events_->Raw();
  EXPECT_GE(NowMs(), before + 1000) << "resolved before the timeout";
  auto doc = Parsed(resolved->data);
  EXPECT_EQ(JsonString(doc, "decision"), "timeout");
  EXPECT_FALSE(JsonBool(doc, "approved", true));
  EXPECT_TRUE(Contains(JsonString(doc, "text"), "approval-timeout")) << resolved->data;
  EXPECT_TRUE(PendingIds().empty());
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(Approve(id, "allow-once").exit_code, 2) << "too late";
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(Approvals, TimeoutWithAskFallbackFullRunsTheCommand) {
  // askFallback is capped by the host security (reference §4.3), so "full" only approves
  // everything where security=full; ask=always makes that security ask at all.
  Gateway("always", R"("approvalTimeoutMs": 1000)", "full");
  WriteApprovals(R"({"version": 1, "defaults": {"askFallback": "full"}})");
  StartServer();
  const std::string marker = workspace_ + "/timeout-full-ran";
  auto pending = Pending("touch " + marker);
  const std::string id = Details(pending, "approvalId");
  EXPECT_EQ(ToJson(*JsonMember(*JsonMember(pending, "details"), "allowedDecisions")),
            R"(["allow-once","deny"])");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "ran before the timeout";

  auto resolved = events_->Next("approval.resolved", {id}, 10s);
  ASSERT_TRUE(resolved.has_value()) << events_->Raw();
  auto doc = Parsed(resolved->data);
  EXPECT_EQ(JsonString(doc, "decision"), "timeout");
  EXPECT_TRUE(JsonBool(doc, "approved")) << resolved->data;
  const std::string session = JsonString(doc, "sessionId");
  ASSERT_FALSE(session.empty()) << resolved->data;
  // (touch prints nothing, so no exec.finished event: notifyOnExitEmptySuccess is off.)
  EXPECT_EQ(SessionStatusWhenDone(session), "completed");
  EXPECT_TRUE(AppearsWithin(marker, 5s));
}

TEST_F(Approvals, TimeoutWithAskFallbackFullIsCappedByAllowlistSecurity) {
  Gateway("on-miss", R"("approvalTimeoutMs": 1000)");
  WriteApprovals(R"({"version": 1, "defaults": {"askFallback": "full"}})");
  StartServer();
  const std::string marker = workspace_ + "/capped-ran";
  const std::string id = Details(Pending("touch " + marker), "approvalId");
  auto resolved = events_->Next("approval.resolved", {id}, 10s);
  ASSERT_TRUE(resolved.has_value()) << events_->Raw();
  auto doc = Parsed(resolved->data);
  EXPECT_FALSE(JsonBool(doc, "approved", true)) << resolved->data;
  EXPECT_TRUE(Contains(JsonString(doc, "text"), "approval-timeout (allowlist-miss)"))
      << resolved->data;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(Approvals, AllowAlwaysPersistsIntoTheRequestingAgentsAllowlist) {
  Gateway("on-miss");
  StartServer();
  const std::string command = "ls " + workspace_;
  auto r = Sandrun({"--agent", "ops", "exec", "--json", "--", command});
  auto pending = Parsed(r.out);
  ASSERT_EQ(Details(pending, "status"), "approval-pending") << r.out;
  auto approved = Approve(Details(pending, "approvalId"), "allow-always");
  ASSERT_EQ(approved.exit_code, 0) << approved.out << approved.err;
  EXPECT_EQ(JsonString(Parsed(approved.out), "agentId"), "ops") << approved.out;

  auto ops = Allowlist("ops");
  ASSERT_EQ(ops.size(), 1u) << ReadFile(ApprovalsPath());
  EXPECT_EQ(ops[0].pattern, ls_);
  EXPECT_EQ(ops[0].source, "allow-always");
  EXPECT_TRUE(Allowlist("main").empty()) << ReadFile(ApprovalsPath());
  // ops runs it directly now; main still has to ask.
  auto again = Sandrun({"--agent", "ops", "exec", "--json", "--", command});
  EXPECT_EQ(Details(Parsed(again.out), "status"), "completed") << again.out;
  EXPECT_EQ(Details(Pending(command), "status"), "approval-pending");
}

TEST_F(Approvals, ConcurrentDecisionsOnOneApprovalRunItOnce) {
  Gateway("on-miss");
  StartServer();
  const std::string id = Details(Pending("ls " + workspace_), "approvalId");
  ASSERT_FALSE(id.empty());
  std::vector<ProcessResult> answers(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < answers.size(); ++i) {
    threads.emplace_back([&, i] { answers[i] = Approve(id, i % 2 ? "allow-once" : "deny"); });
  }
  for (auto& t : threads) t.join();
  int decided = 0;
  for (const auto& a : answers) {
    if (a.exit_code == 0) {
      ++decided;
    } else {
      EXPECT_EQ(a.exit_code, 2) << a.out << a.err;
      EXPECT_TRUE(Contains(a.out, "unknown-approval")) << a.out;
    }
  }
  EXPECT_EQ(decided, 1) << "exactly one decision wins";
  ASSERT_TRUE(events_->Next("approval.resolved", {id}).has_value());
  int started = 0, resolved = 0;
  for (const auto& e : events_->Events()) {
    started += e.type == "session.started";
    resolved += e.type == "approval.resolved";
  }
  EXPECT_EQ(resolved, 1);
  EXPECT_LE(started, 1);
}

// ---------------------------------------------------------------------------------------------
// 4. Concurrent writers lose nothing.

TEST_F(Approvals, ConcurrentAllowlistAddsLoseNoEntry) {
  constexpr int kPerGroup = 20;
  std::vector<std::string> patterns;
  for (int i = 0; i < kPerGroup; ++i) {
    patterns.push_back("/opt/x/bin/tool" + std::to_string(i));
    patterns.push_back("/opt/y/bin/tool" + std::to_string(i));
  }
  std::vector<ProcessResult> results(patterns.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < patterns.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = Sandrun({"approvals", "allowlist", "add", patterns[i]});
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].exit_code, 0) << patterns[i] << ": " << results[i].err;
  }
  std::multiset<std::string> seen;
  for (const auto& e : Allowlist()) {
    seen.insert(e.pattern);
    EXPECT_EQ(e.source, "operator") << e.pattern;
  }
  EXPECT_EQ(seen.size(), patterns.size()) << ReadFile(ApprovalsPath());
  for (const auto& p : patterns) EXPECT_EQ(seen.count(p), 1u) << p;

  auto list = Sandrun({"approvals", "allowlist", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  for (const auto& p : patterns) EXPECT_TRUE(Contains(list.out, "\"" + p + "\"")) << p;
  for (const auto& e : std::filesystem::directory_iterator(home_)) {
    EXPECT_FALSE(Contains(e.path().filename().string(), ".tmp")) << "left behind: " << e.path();
  }
  struct stat st {};
  ASSERT_EQ(::stat(ApprovalsPath().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(Approvals, ConcurrentAllowAlwaysDecisionsAndEditsLoseNoEntry) {
  const std::vector<std::string> names = {"ls", "cat", "stat", "basename"};
  std::vector<std::string> paths;
  for (const auto& n : names) {
    paths.push_back(Which(n));
    ASSERT_FALSE(paths.back().empty()) << n;
  }
  ASSERT_EQ(std::set<std::string>(paths.begin(), paths.end()).size(), paths.size());
  Gateway("on-miss");
  StartServer();
  std::vector<std::string> ids;
  for (const auto& n : names) {
    ids.push_back(Details(Pending(n + " " + workspace_ + "/a.txt"), "approvalId"));
    ASSERT_FALSE(ids.back().empty());
  }
  std::vector<ProcessResult> decided(ids.size());
  std::vector<ProcessResult> added(10);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ids.size(); ++i) {
    threads.emplace_back([&, i] { decided[i] = Approve(ids[i], "allow-always"); });
  }
  for (size_t i = 0; i < added.size(); ++i) {
    threads.emplace_back([&, i] {
      added[i] = Sandrun({"approvals", "allowlist", "add", "/opt/z/bin/t" + std::to_string(i)});
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(decided[i].exit_code, 0) << decided[i].out << decided[i].err;
    EXPECT_TRUE(JsonBool(Parsed(decided[i].out), "approved")) << decided[i].out;
  }
  for (const auto& r : added) EXPECT_EQ(r.exit_code, 0) << r.err;

  for (const auto& p : paths) {
    auto e = FindEntry(p);
    ASSERT_TRUE(e.has_value()) << p << " missing: " << ReadFile(ApprovalsPath());
    EXPECT_EQ(e->source, "allow-always");
  }
  for (size_t i = 0; i < added.size(); ++i) {
    EXPECT_TRUE(FindEntry("/opt/z/bin/t" + std::to_string(i)).has_value()) << i;
  }
  EXPECT_EQ(Allowlist().size(), paths.size() + added.size()) << ReadFile(ApprovalsPath());
  // Each now runs without an approval.
  for (const auto& n : names) {
    auto r = Exec({"--json"}, n + " " + workspace_ + "/a.txt");
    EXPECT_EQ(Details(Parsed(r.out), "status"), "completed") << n << ": " << r.out;
  }
}

// ---------------------------------------------------------------------------------------------
// 5. A corrupt approvals file is kept aside, reported, never silently emptied.

TEST_F(Approvals, CorruptFileIsKeptAsideAndTheNextRunStartsFresh) {
  const std::string printf_path = Which("printf");
  ASSERT_FALSE(printf_path.empty());
  const std::string corrupt =
      "{\n  \"version\": 1,\n  \"agents\": {\n    \"main\": {\"allowlist\": [\"" + printf_path +
      "\"]}\n  },\n  oops\n}\n";
  WriteApprovals(corrupt);

  auto r = Exec({}, "printf hi");
  EXPECT_EQ(r.exit_code, 125) << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << "nothing ran: " << r.out;
  EXPECT_TRUE(Contains(r.err, ApprovalsPath() + ":6:3:")) << r.err;
  auto copies = CorruptCopies();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_TRUE(Contains(r.err, "kept as " + copies[0])) << r.err;
  EXPECT_EQ(ReadFile(copies[0]), corrupt) << "the corrupt bytes are preserved";
  EXPECT_FALSE(std::filesystem::exists(ApprovalsPath()));

  // The next run starts from no file: the entry that was in the corrupt file does not count,
  // and the refusal is the ordinary one.
  auto next = Exec({}, "printf hi");
  EXPECT_EQ(next.exit_code, 125);
  EXPECT_TRUE(Contains(next.err, "sandrun: exec denied: allowlist miss")) << next.err;
  EXPECT_FALSE(Contains(next.err, "corrupt")) << next.err;
  ASSERT_EQ(Sandrun({"approvals", "allowlist", "add", printf_path}).exit_code, 0);
  auto ok = Exec({}, "printf hi");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "hi");
  EXPECT_EQ(CorruptCopies().size(), 1u);
  EXPECT_EQ(ReadFile(copies[0]), corrupt);
}

TEST_F(Approvals, CorruptFileIsReportedByPolicyCheckAndTheServer) {
  WriteApprovals("{\"version\": 1, \"agents\": {\"main\": {\"allowlist\": [}}}");
  auto check = PolicyCheck("echo hi");
  EXPECT_EQ(JsonString(check, "decision"), "deny");
  EXPECT_TRUE(Contains(JsonString(check, "reason"), ApprovalsPath() + ":1:")) << ToJson(check);
  EXPECT_TRUE(Contains(JsonString(check, "reason"), ".corrupt-")) << ToJson(check);
  EXPECT_EQ(CorruptCopies().size(), 1u);

  StartServer();
  const std::string version2 = "{\"version\": 2}\n";
  WriteApprovals(version2);
  auto r = Exec({"--json"}, "echo hi");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  auto doc = Parsed(r.out);
  const auto* error = JsonMember(doc, "error");
  ASSERT_NE(error, nullptr) << r.out;
  EXPECT_TRUE(Contains(JsonString(*error, "message"), ApprovalsPath() + ":1:")) << r.out;
  auto copies = CorruptCopies();
  ASSERT_EQ(copies.size(), 2u);
  bool preserved = false;
  for (const auto& c : copies) preserved = preserved || ReadFile(c) == version2;
  EXPECT_TRUE(preserved);
  // A corrupt file is not treated as empty by the CLI's editor either.
  WriteApprovals("[1, 2");
  auto add = Sandrun({"approvals", "allowlist", "add", echo_});
  EXPECT_EQ(add.exit_code, 2);
  EXPECT_TRUE(Contains(add.err, ApprovalsPath() + ":1:")) << add.err;
  EXPECT_EQ(CorruptCopies().size(), 3u);
}

// ---------------------------------------------------------------------------------------------
// 6. `policy check` agrees with exec on every row (ask=off: allow runs, deny refuses).

struct Row {
  const char* command;  // {WS} is the workspace
  const char* decision;
  const char* out;       // exact stdout of the run (nullptr: not checked)
  const char* analysis;  // analysis.reason when the analysis fails ("" = ok)
};

TEST_F(Approvals, PolicyCheckAgreesWithExecOnEveryRow) {
  const std::string printf_path = Which("printf");
  ASSERT_FALSE(printf_path.empty());
  std::ofstream(workspace_ + "/b.txt") << "beta\n";
  // jq is listed on purpose: it is never a safe bin.
  Gateway("off", R"("safeBins": ["wc", "head", "uniq", "tail", "tr", "sort", "jq"])");
  AllowOnly({echo_, printf_path, ls_});
  const Row rows[] = {
      {"echo hi", "allow", "hi\n", ""},
      {"echo hi | wc -l", "allow", "1\n", ""},
      {"printf 'a\\nb\\nb\\n' | uniq -c", "allow", "      1 a\n      2 b\n", ""},
      {"printf 'a\\nb\\nc\\nd\\n' | head -n 3", "allow", "a\nb\nc\n", ""},
      {"printf 'a\\n' | head -5", "deny", nullptr, ""},
      {"printf 'a\\n' | tail -f", "deny", nullptr, ""},
      {"echo '{}' | jq .", "deny", nullptr, ""},
      {"echo hi | wc --lines", "allow", "1\n", ""},
      {"printf '3\\n1\\n2\\n' | sort -n", "allow", "1\n2\n3\n", ""},
      {"echo hi | tr a-z A-Z", "allow", "HI\n", ""},
      {"head -n 1 {WS}/a.txt", "deny", nullptr, ""},
      {"echo hi | cat", "deny", nullptr, ""},
      {"cd {WS} && ls", "allow", "a.txt\nb.txt\n", ""},
      {"pwd", "allow", "{WS}\n", ""},
      {"true", "allow", "", ""},
      {": && true", "allow", "", ""},
      {"test -d {WS} && echo yes", "allow", "yes\n", ""},
      {"echo a; echo b", "allow", "a\nb\n", ""},
      {"echo a && false || echo c", "deny", nullptr, ""},
      {"ls {WS} | wc -l", "allow", "2\n", ""},
      {"echo 'a  b' \"c d\"", "allow", "a  b c d\n", ""},
      {"echo '$HOME'", "allow", "$HOME\n", ""},
      {"echo hi > {WS}/redirected", "deny", nullptr, "redirect"},
      {"echo $(pwd)", "deny", nullptr, "command-substitution"},
      {"echo `pwd`", "deny", nullptr, "command-substitution"},
      {"echo $HOME", "deny", nullptr, "dynamic-argument"},
      {"echo hi &", "deny", nullptr, "background"},
      {"(echo hi)", "deny", nullptr, "subshell"},
      {"echo ok &&", "deny", nullptr, "unable to parse command"},
      {"cat <<EOF\nx\nEOF", "deny", nullptr, "heredoc"},
      {"ls {WS}/*.txt", "deny", nullptr, ""},
      {"echo {a,b}", "deny", nullptr, ""},
      {"ls ~", "deny", nullptr, ""},
      {"env echo hi", "allow", "hi\n", ""},
      {"env -- echo hi", "allow", "hi\n", ""},
      {"env FOO=1 echo hi", "deny", nullptr, ""},
      {"nice echo hi", "allow", "hi\n", ""},
      {"nice -n 5 echo hi", "allow", "hi\n", ""},
      {"timeout 5 echo hi", "allow", "hi\n", ""},
      {"timeout 5 nice env echo deep", "allow", "deep\n", ""},
      {"stdbuf -o0 echo hi", "deny", nullptr, ""},
      {"sudo echo hi", "deny", nullptr, ""},
      {"FOO=1 ls {WS}", "deny", nullptr, ""},
      {"sh -c 'echo a && echo b'", "allow", "a\nb\n", ""},
      {"sh -c 'echo a'", "allow", "a\n", ""},  // runs as (/usr/bin/echo a): no shell
      {"sh -c 'echo a' zero", "deny", nullptr, ""},
      {"/bin/sh -c 'echo a && echo b'", "deny", nullptr, ""},
      {"env sh -c 'echo a && echo b'", "deny", nullptr, ""},
      {"bash {WS}/a.txt", "deny", nullptr, ""},
      {"sh -c 'echo a && cat {WS}/a.txt'", "deny", nullptr, ""},
      {"bash -lc 'echo a && echo b'", "deny", nullptr, ""},
      {"no-such-command-xyz", "deny", nullptr, ""},
      {"./no-such-tool", "deny", nullptr, ""},
      {"ECHO_PATH hi", "allow", "hi\n", ""},
      {"ls -a {WS}", "allow", ".\n..\na.txt\nb.txt\n", ""},
  };
  ASSERT_GE(std::size(rows), 30u);
  for (const Row& row : rows) {
    const std::string command =
        Replace(Replace(row.command, "{WS}", workspace_), "ECHO_PATH", echo_);
    SCOPED_TRACE(command);
    auto check = PolicyCheck(command);
    const std::string decision = JsonString(check, "decision");
    const std::string reason = JsonString(check, "reason");
    EXPECT_EQ(decision, row.decision) << ToJson(check);
    const auto* analysis = JsonMember(check, "analysis");
    ASSERT_NE(analysis, nullptr);
    EXPECT_EQ(JsonBool(*analysis, "ok"), std::string(row.analysis).empty()) << ToJson(check);
    EXPECT_EQ(JsonString(*analysis, "reason"), row.analysis) << ToJson(check);

    auto r = Exec({"--timeout", "10"}, command);
    if (decision == "allow") {
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_FALSE(JsonMember(check, "rewritten")->IsNull()) << ToJson(check);
      if (row.out) {
        EXPECT_EQ(r.out, Replace(row.out, "{WS}", workspace_)) << r.err;
      }
    } else {
      EXPECT_EQ(r.exit_code, 125) << r.out << r.err;
      EXPECT_TRUE(r.out.empty()) << "nothing ran: " << r.out;
      EXPECT_FALSE(reason.empty());
      EXPECT_TRUE(Contains(r.err, "sandrun: " + reason + "\n"))
          << "policy check said \"" << reason << "\", exec said: " << r.err;
      EXPECT_TRUE(JsonMember(check, "rewritten")->IsNull()) << ToJson(check);
    }
  }
  EXPECT_FALSE(std::filesystem::exists(workspace_ + "/redirected"));
}

// ---------------------------------------------------------------------------------------------
// 7. CLI errors.

TEST_F(Approvals, ApproveWithoutAServerIsRefused) {
  auto r = Approve("0123abcd", "allow-once");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "no running server")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  auto list = Sandrun({"approvals", "list", "--json"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_FALSE(JsonBool(Parsed(list.out), "server", true)) << list.out;
}

TEST_F(Approvals, BadDecisionsThroughTheServerAreRefused) {
  Gateway("on-miss");
  StartServer();
  auto unknown = Approve("00000000-0000-4000-8000-000000000000", "allow-once");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_TRUE(Contains(unknown.out, "unknown-approval")) << unknown.out << unknown.err;

  const std::string marker = workspace_ + "/bad-decision-ran";
  const std::string id = Details(Pending("touch " + marker), "approvalId");
  auto invalid = Approve(id, "maybe");
  EXPECT_EQ(invalid.exit_code, 2);
  EXPECT_TRUE(Contains(invalid.out, "Unknown decision")) << invalid.out << invalid.err;
  auto short_code = Approve(id.substr(0, 4), "allow-once");
  EXPECT_EQ(short_code.exit_code, 2) << "a 4-character prefix is not a slug: " << short_code.out;
  EXPECT_EQ(PendingIds(), std::vector<std::string>{id}) << "still pending after bad decisions";
  EXPECT_FALSE(std::filesystem::exists(marker));

  // allow-always is not offered under ask=always.
  Gateway("always");
  AllowOnly({echo_});
  auto always = Pending("echo asked");
  const std::string always_id = Details(always, "approvalId");
  auto not_offered = Approve(always_id, "allow-always");
  EXPECT_EQ(not_offered.exit_code, 2);
  EXPECT_TRUE(Contains(not_offered.out, "not offered")) << not_offered.out;
  EXPECT_EQ(Allowlist().size(), 1u);
  auto usage = Sandrun({"approvals", "approve", id});
  EXPECT_EQ(usage.exit_code, 2) << "the decision is required";
  EXPECT_EQ(PendingIds().size(), 2u);
}

TEST_F(Approvals, PolicyCheckRejectsAMalformedEnv) {
  auto r = Sandrun({"policy", "check", "--env", "BAD", "--", "echo hi"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err, "--env takes KEY=VALUE")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  auto empty_key = Sandrun({"policy", "check", "--env", "=x", "--", "echo hi"});
  EXPECT_EQ(empty_key.exit_code, 2);
  auto good = Sandrun({"policy", "check", "--env", "GOOD=1", "--", "echo hi"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
}

TEST_F(Approvals, AllowlistEditsOfMissingOrEmptyPatternsAreRefused) {
  auto missing = Sandrun({"approvals", "allowlist", "remove", "/opt/never/added"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(Contains(missing.err, "has no entry")) << missing.err;
  auto blank = Sandrun({"approvals", "allowlist", "add", "   "});
  EXPECT_EQ(blank.exit_code, 2) << blank.err;
  EXPECT_TRUE(Allowlist().empty());

  ASSERT_EQ(Sandrun({"approvals", "allowlist", "add", "/opt/a/bin/tool"}).exit_code, 0);
  auto again = Sandrun({"approvals", "allowlist", "add", "/opt/a/bin/tool"});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_TRUE(Contains(again.err, "already in")) << again.err;
  EXPECT_EQ(Allowlist().size(), 1u);
  auto removed = Sandrun({"approvals", "allowlist", "remove", "/opt/a/bin/tool"});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_TRUE(Allowlist().empty());
  auto twice = Sandrun({"approvals", "allowlist", "remove", "/opt/a/bin/tool"});
  EXPECT_EQ(twice.exit_code, 2);
}

// A refused edit (exit 2) has no side effect: it does not create the approvals file.
TEST_F(Approvals, RefusedAllowlistRemoveWritesNothing) {
  ASSERT_FALSE(std::filesystem::exists(ApprovalsPath()));
  auto missing = Sandrun({"approvals", "allowlist", "remove", "/opt/never/added"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(ApprovalsPath()))
      << "a refused remove wrote: " << ReadFile(ApprovalsPath());
}

}  // namespace
}  // namespace sandrun::testing

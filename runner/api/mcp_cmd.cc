#include "runner/api/mcp_cmd.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>

#include "runner/api/mcp_server.h"
#include "runner/api/runtime.h"
#include "runner/api/server_client.h"
#include "sandbox/base/json.h"

namespace sandrun::api {
namespace {

// Requests handled at once; more are answered with an error at once (a client that floods
// the server cannot make it start threads without end).
constexpr size_t kMaxInFlight = 64;

// stdout: one message a line, whole lines only, from any thread, written by a thread of its own
// so that nobody else ever blocks on a client that does not read: a worker queues its message and
// goes on (a progress notification is dropped when the client is behind), and a client that lets
// kMaxQueuedBytes pile up is taken for gone.
class Output {
 public:
  static constexpr size_t kDropProgressAbove = 1u << 20;
  static constexpr size_t kMaxQueuedBytes = 64u << 20;

  Output() : state_(std::make_shared<State>()) {
    std::thread([state = state_] { Run(*state); }).detach();
  }
  ~Output() { Finish(0); }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  // Queues one message; false once the client is gone. `droppable`: a notification that may be
  // left out when the client is behind.
  bool Write(const std::string& json, bool droppable = false) {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->broken.load()) return false;
    if (droppable && state_->queued > kDropProgressAbove) return true;
    if (state_->queued > kMaxQueuedBytes) {
      state_->broken = true;
      return false;
    }
    state_->queue.push_back(json + "\n");
    state_->queued += json.size() + 1;
    state_->cv.notify_all();
    return true;
  }
  bool broken() const { return state_->broken.load(); }
  // Lets the writer empty its queue for up to `wait_ms`, then stops it (one stuck in a write
  // to a client that reads no more is left to the process's end).
  void Finish(int wait_ms) {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] {
      return (state_->queue.empty() && !state_->writing) || state_->broken.load();
    });
    state_->stop = true;
    state_->cv.notify_all();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::string> queue;
    size_t queued = 0;
    bool writing = false;  // a line taken off the queue is being written
    bool stop = false;
    std::atomic<bool> broken{false};
  };
  static void Run(State& state) {
    for (;;) {
      std::string line;
      {
        std::unique_lock<std::mutex> lock(state.mu);
        state.cv.wait(lock, [&] { return state.stop || !state.queue.empty(); });
        if (state.queue.empty()) return;  // stopped
        line = std::move(state.queue.front());
        state.queue.pop_front();
        state.queued -= line.size();
        state.writing = true;
      }
      for (std::string_view rest(line); !rest.empty();) {
        ssize_t n = ::write(STDOUT_FILENO, rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          state.broken = true;  // the client is gone: the reader ends the server
          break;
        }
        rest.remove_prefix(static_cast<size_t>(n));
      }
      std::lock_guard<std::mutex> lock(state.mu);
      state.writing = false;
      state.cv.notify_all();  // Finish waits for the last line to be out
      if (state.broken.load()) return;
    }
  }
  std::shared_ptr<State> state_;
};

// One request being handled on a thread of its own.
struct Worker {
  std::string id_json;
  std::atomic<bool> stop{false};  // the bridge: close its connection (the server cancels)
  CancelToken cancel;             // in-process: stdin's end
  std::atomic<bool> done{false};
  std::thread thread;
};

// What handles a message: the in-process McpServer, or the running server through POST /mcp.
class Handler {
 public:
  virtual ~Handler() = default;
  // A request, on its worker's thread: its notifications and response go to `out`.
  virtual void Request(const std::string& line, const McpMessage& m, Worker& worker,
                       Output& out) = 0;
  // A notification (or a client's response), on the reader's thread.
  virtual void Notification(const std::string& line, const McpMessage& m) = 0;
};

class InProcess : public Handler {
 public:
  InProcess(std::unique_ptr<Runtime> runtime, Principal who)
      : runtime_(std::move(runtime)), mcp_(*runtime_, "stdio"), who_(std::move(who)) {}
  ~InProcess() override { runtime_->Shutdown(); }
  void Request(const std::string&, const McpMessage& m, Worker& worker, Output& out) override {
    McpReply reply = mcp_.Handle(
        m, who_, [&](const std::string& json) { return out.Write(json, /*droppable=*/true); },
        &worker.cancel);
    if (reply.kind == McpReply::Kind::kResponse) (void)out.Write(reply.json);
  }
  void Notification(const std::string&, const McpMessage& m) override {
    (void)mcp_.Handle(m, who_, nullptr, nullptr);
  }

 private:
  std::unique_ptr<Runtime> runtime_;
  McpServer mcp_;
  Principal who_;
};

class Bridge : public Handler {
 public:
  Bridge(std::string socket, GlobalOptions global)
      : socket_(std::move(socket)), global_(std::move(global)) {}
  void Request(const std::string& line, const McpMessage& m, Worker& worker, Output& out) override {
    bool answered = false;
    auto reply = PostMcpToServer(socket_, line, global_, &worker.stop,
                                 [&](const std::string& type, const std::string& data) {
                                   if (type != "message") return !worker.stop.load();
                                   auto doc = ParseJson(data);
                                   // The response ends the request; notifications come before.
                                   if (doc && doc->IsObject() && doc->HasMember("id")) {
                                     answered = true;
                                   }
                                   (void)out.Write(data, !answered);
                                   return !worker.stop.load();
                                 });
    if (worker.stop.load()) return;  // cancelled by our client: nothing more for this request
    if (!reply) {
      (void)out.Write(McpErrorJson(m.id_json, kJsonRpcInternalError,
                                   "the sandrun server went away: " + reply.error().ToString()));
      return;
    }
    if (reply->stream) {
      // A stream that ended without its response (the server stopped): the client must not
      // wait for ever.
      if (!answered) {
        (void)out.Write(McpErrorJson(m.id_json, kJsonRpcInternalError,
                                     "the sandrun server ended the call without an answer"));
      }
      return;
    }
    if (reply->status == 202 || reply->body.empty()) return;
    auto doc = ParseJson(reply->body);
    if (doc && doc->IsObject() && doc->HasMember("jsonrpc")) {
      (void)out.Write(reply->body);
      return;
    }
    (void)out.Write(McpErrorJson(
        m.id_json, kJsonRpcInternalError,
        "the sandrun server refused (HTTP " + std::to_string(reply->status) + "): " + reply->body));
  }
  void Notification(const std::string& line, const McpMessage& m) override {
    // A cancel is this client's own: its request's connection is closed (the server's cancel),
    // never forwarded (the server would match it against every local client's ids).
    if (m.method == "notifications/cancelled") return;
    (void)PostMcpToServer(socket_, line, global_, nullptr,
                          [](const std::string&, const std::string&) { return true; });
  }

 private:
  const std::string socket_;
  const GlobalOptions global_;
};

}  // namespace

int RunMcpCommand(const GlobalOptions& global) {
  ::signal(SIGPIPE, SIG_IGN);
  // SIGTERM, SIGINT and SIGHUP end the server the way stdin's end does: read by the loop below,
  // blocked in every thread (the workers start after this).
  sigset_t stops;
  sigemptyset(&stops);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stops, sig);
  pthread_sigmask(SIG_BLOCK, &stops, nullptr);
  const int signals = ::signalfd(-1, &stops, SFD_CLOEXEC);

  std::unique_ptr<Handler> handler;
  if (std::string socket = LiveServer(global); !socket.empty()) {
    std::fprintf(stderr, "sandrun: mcp: serving through the server at %s\n", socket.c_str());
    handler = std::make_unique<Bridge>(socket, global);
  } else {
    Runtime::Options options;
    options.private_sessions = true;
    auto runtime = Runtime::Start(global, options);
    if (!runtime) {
      PrintError("mcp: " + runtime.error().ToString());
      return kExitFailure;
    }
    Principal who = CliPrincipal(global);
    who.provider = "mcp";  // tools.elevated.allowFrom.mcp: its own channel, not the CLI's
    handler = std::make_unique<InProcess>(std::move(runtime).value(), std::move(who));
  }

  Output out;
  std::list<Worker> workers;
  auto reap = [&] {
    for (auto it = workers.begin(); it != workers.end();) {
      if (it->done.load()) {
        it->thread.join();
        it = workers.erase(it);
      } else {
        ++it;
      }
    }
  };
  auto dispatch = [&](const std::string& line) {
    auto parsed = ParseMcpMessage(line);
    if (auto* refusal = std::get_if<McpReply>(&parsed)) {
      (void)out.Write(refusal->json);
      return;
    }
    const McpMessage& m = std::get<McpMessage>(parsed);
    if (!m.request) {
      if (m.method == "notifications/cancelled") {
        // The bridge closes the request's connection (the server's cancel); in-process, the
        // server finds the request itself.
        const auto* params = JsonMember(*m.doc, "params");
        const auto* id = params != nullptr ? JsonMember(*params, "requestId") : nullptr;
        const std::string id_json = id != nullptr ? ToJson(*id) : "";
        for (Worker& w : workers) {
          if (w.id_json == id_json) w.stop = true;
        }
      }
      handler->Notification(line, m);
      return;
    }
    reap();
    if (workers.size() >= kMaxInFlight) {
      (void)out.Write(McpErrorJson(
          m.id_json, kJsonRpcInternalError,
          "too many requests in flight (" + std::to_string(kMaxInFlight) + "); retry later"));
      return;
    }
    Worker& w = workers.emplace_back();
    w.id_json = m.id_json;
    w.thread = std::thread([&handler, &out, &w, line, m] {
      handler->Request(line, m, w, out);
      w.done = true;
    });
  };

  // Lines as they come; one longer than a message may be is skipped to its end and answered.
  std::string pending;
  bool skipping = false;
  bool stopped = false;  // a signal, or stdout is gone: what is in flight is cancelled
  char buf[65536];
  while (!out.broken()) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {signals, POLLIN, 0}};
    int ready = ::poll(fds, signals >= 0 ? 2 : 1, 1000);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    reap();
    if (signals >= 0 && (fds[1].revents & POLLIN) != 0) {
      stopped = true;
      break;
    }
    if (fds[0].revents == 0) continue;
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // the client closed stdin: the end
    std::string_view chunk(buf, static_cast<size_t>(n));
    while (!chunk.empty()) {
      size_t nl = chunk.find('\n');
      std::string_view piece = chunk.substr(0, nl);
      if (!skipping) pending.append(piece);
      if (!skipping && pending.size() > kMcpMaxMessageBytes) {
        skipping = true;
        pending.clear();
      }
      if (nl == std::string_view::npos) break;
      chunk.remove_prefix(nl + 1);
      if (skipping) {
        skipping = false;
        (void)out.Write(McpErrorJson(
            "null", kJsonRpcInvalidRequest,
            "message is larger than " + std::to_string(kMcpMaxMessageBytes) + " bytes"));
        continue;
      }
      std::string line = std::move(pending);
      pending.clear();
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      dispatch(line);
    }
  }
  // stdin's end (the client's shutdown, stdio.mdx): what is in flight is answered first (a
  // client that will not wait sends SIGTERM). A signal or a gone client: it is cancelled (its
  // command killed) and answered no more.
  if (stopped || out.broken()) {
    for (Worker& w : workers) {
      w.stop = true;
      w.cancel.Cancel();
    }
  }
  for (Worker& w : workers) w.thread.join();
  workers.clear();
  out.Finish(2000);
  handler.reset();  // in-process: every session still running is killed
  if (signals >= 0) ::close(signals);
  return kExitOk;
}

}  // namespace sandrun::api

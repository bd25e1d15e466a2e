#include "runner/api/exec_route.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <variant>

#include "runner/api/connection.h"
#include "runner/api/exec_stream.h"
#include "runner/api/exec_tool.h"
#include "runner/api/foreground_run.h"
#include "runner/api/tool_call.h"

namespace sandrun::api {
namespace {

using Clock = std::chrono::steady_clock;

// The connection as both sides of the run use it: frames out under a write deadline (a client
// that stops reading is dropped), frames in from a reader thread.
class ExecConnection {
 public:
  ExecConnection(UpgradedConnection& conn) : conn_(conn), in_(kMaxClientFrame) {
    in_.Feed(conn.pending);
  }

  // False once the client is gone (or stalled past the write deadline).
  bool Send(char type, std::string_view payload) {
    std::lock_guard<std::mutex> lock(send_mu_);
    if (broken_) return false;
    auto sent =
        conn_.connection->WriteAll(Frame(type, payload), Clock::now() + conn_.write_timeout);
    broken_ = sent.status != Connection::Io::kOk;
    return !broken_;
  }

  // The next client frame; nullopt when the connection ended, broke or sent an invalid frame,
  // or when `stop` became true (checked every 100 ms).
  std::optional<FrameReader::Item> Receive(const std::atomic<bool>& stop) {
    char buf[65536];
    for (;;) {
      if (auto item = in_.Next()) return item;
      if (in_.invalid() || stop.load()) return std::nullopt;
      // The connection serialises this read with Send's writes (one TLS session for both).
      auto got = conn_.connection->ReadSome(buf, sizeof buf,
                                            Clock::now() + std::chrono::milliseconds(100));
      if (got.status == Connection::Io::kTimeout) continue;
      if (got.status != Connection::Io::kOk) return std::nullopt;
      in_.Feed(std::string_view(buf, got.bytes));
    }
  }

 private:
  UpgradedConnection& conn_;
  FrameReader in_;
  std::mutex send_mu_;
  bool broken_ = false;  // guarded by send_mu_
};

// What the client asked of the run, handed from the reader thread to the run once it exists.
class ClientControl {
 public:
  // The run started: stdin queued so far goes to it, a cancel already asked for applies.
  void Attach(ForegroundRun* run) {
    std::unique_lock<std::mutex> lock(mu_);
    run_ = run;
    if (cancelled_) run_->Cancel();
    if (has_early_) (void)run_->WriteStdin(early_);
    if (early_eof_) (void)run_->CloseStdin();
    has_early_ = early_eof_ = false;
    early_.clear();
    cv_.notify_all();
  }
  void Detach() {
    std::lock_guard<std::mutex> lock(mu_);
    run_ = nullptr;
    finished_ = true;
    cv_.notify_all();
  }
  void Cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    token_.Cancel();  // also ends a wait for an approval
    cancelled_ = true;
    if (run_ != nullptr) run_->Cancel();
    cv_.notify_all();
  }
  bool cancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }
  const CancelToken* token() const { return &token_; }
  // Stdin bytes (or EOF when `eof`), dropped after the run ended. Before the run exists (it may
  // wait for an operator's approval first) one data frame and the EOF are kept, so the reader
  // goes on and a cancel frame still gets through; a second data frame waits until the run
  // exists (the client's later frames wait with it): a client cannot make the server buffer
  // more of its stdin than one frame.
  void Stdin(const std::string& data, bool eof) {
    std::unique_lock<std::mutex> lock(mu_);
    if (run_ == nullptr && !finished_ && !cancelled_) {
      if (eof) {
        early_eof_ = true;
        return;
      }
      if (!has_early_) {
        early_ = data;
        has_early_ = true;
        return;
      }
    }
    cv_.wait(lock, [this] { return run_ != nullptr || finished_ || cancelled_; });
    if (run_ == nullptr) return;
    // Held while writing: Detach (after Wait) cannot free the run under us.
    if (eof) {
      (void)run_->CloseStdin();
    } else {
      (void)run_->WriteStdin(data);
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  ForegroundRun* run_ = nullptr;  // guarded by mu_
  CancelToken token_;
  std::string early_;  // the one data frame that came before the run (has_early_)
  bool has_early_ = false;
  bool early_eof_ = false;
  bool cancelled_ = false;
  bool finished_ = false;
};

// The request's exec call, or the refusal to report.
Result<policy::ExecRequest> ParseExecCall(const std::string& body) {
  SANDRUN_ASSIGN_OR_RETURN(ToolCall call, ParseToolCall(body));
  if (call.tool != "exec") {
    return Error::Refusal("invalid-request", "POST /v1/exec takes exec calls");
  }
  return std::move(call.exec);
}

std::string HeaderOf(const HttpRequestInfo& r, const char* name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

}  // namespace

void RefuseExecStream(UpgradedConnection& conn, const Error& refusal) {
  ExecConnection(conn).Send('X', ExecReportToJson(ReportError(refusal, false)));
}

void ServeExecStream(const HttpRequestInfo& request, UpgradedConnection& conn,
                     const std::atomic<bool>& stopping, Runtime& runtime, Principal who) {
  ExecConnection connection(conn);
  auto finish = [&](const ExecReport& report) { connection.Send('X', ExecReportToJson(report)); };

  auto parsed = ParseExecCall(request.body);
  if (!parsed) return finish(ReportError(parsed.error(), false));
  const policy::ExecRequest& exec_request = *parsed;
  // The caller's directories are a request to act in its name: only its own user may make it.
  const std::string cwd = HeaderOf(request, "x-sandrun-cwd");
  const std::string workspace = HeaderOf(request, "x-sandrun-workspace");
  if ((!cwd.empty() || !workspace.empty()) && request.peer_uid != ::geteuid()) {
    return finish(ReportError(
        Error::Refusal("invalid-request",
                       "X-Sandrun-Cwd and X-Sandrun-Workspace are honoured only from the "
                       "server's own user (uid " +
                           std::to_string(::geteuid()) + "); this client is uid " +
                           std::to_string(request.peer_uid) + ": nothing was run"),
        false));
  }
  if (!cwd.empty() && cwd[0] != '/') {
    return finish(
        ReportError(Error::Refusal("invalid-request",
                                   "X-Sandrun-Cwd must be an absolute path: nothing was run"),
                    false));
  }
  if (!cwd.empty()) {
    // The CLI's own view: its --workspace (or none: the config's, else its cwd), not the
    // server's command line.
    who.cwd = cwd;
    who.workspace_root = workspace;
  }

  ClientControl control;
  std::atomic<bool> done{false};
  // Client frames: stdin, EOF, cancel. The connection ending (or a frame over the cap, or an
  // unknown type) is a cancel: the client is gone, so is the run.
  std::thread reader([&] {
    while (auto item = connection.Receive(done)) {
      switch (item->type) {
        case 'I':
          control.Stdin(item->payload, false);
          break;
        case 'E':
          control.Stdin("", true);
          break;
        case 'C':
          control.Cancel();
          break;
        default:
          control.Cancel();
          return;
      }
    }
    if (!done.load()) control.Cancel();
  });

  ForegroundFn run_foreground = [&](exec::Executor& executor,
                                    const exec::Plan& plan) -> Result<exec::ExecOutcome> {
    auto sink = [&](exec::Stream stream, std::string_view bytes) {
      // A client that stopped reading is treated as gone: the run is killed.
      if (!connection.Send(stream == exec::Stream::kStderr ? 'R' : 'O', bytes)) control.Cancel();
    };
    SANDRUN_ASSIGN_OR_RETURN(auto run, ForegroundRun::Start(executor, plan, sink));
    control.Attach(run.get());
    exec::ExecOutcome outcome = run->Wait();
    control.Detach();
    return outcome;
  };
  if (control.cancelled() || stopping.load()) {
    done = true;
    reader.join();
    return;
  }
  // `--wait`: the client's stderr says what it waits for and how an operator answers.
  auto on_wait = [&](const ExecToolResult& pending) {
    const std::string slug = pending.approval_id.substr(0, 8);
    (void)connection.Send('R', "sandrun: waiting for an operator to approve " +
                                   pending.approval_id + " (sandrun approvals approve " + slug +
                                   " allow-once|deny); Ctrl-C stops waiting, the approval stays "
                                   "pending\n");
  };
  ExecToolResult result = runtime.ExecForeground(who, exec_request, std::move(run_foreground),
                                                 control.token(), on_wait);
  control.Detach();  // a run that never started: stdin frames are dropped from now on
  ExecReport report = ReportExec(result, control.cancelled() ? SIGTERM : 0);
  // The caller's stderr is not this server's: what the config loaders said goes to it too.
  report.diagnostics = result.config_warnings;
  finish(report);
  done = true;
  reader.join();
}

}  // namespace sandrun::api

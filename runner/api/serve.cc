#include "runner/api/serve.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <variant>

#include "runner/api/apply_patch_tool.h"
#include "runner/api/approval_broker.h"
#include "runner/api/exec_tool.h"
#include "runner/api/http_server.h"
#include "runner/api/policy_cmd.h"
#include "runner/api/server_client.h"
#include "runner/api/tool_call.h"
#include "runner/config/config.h"
#include "runner/config/ids.h"
#include "runner/config/state_dir.h"
#include "runner/sessions/manager.h"
#include "runner/sessions/process_request.h"
#include "sandbox/base/json.h"
#include "sandbox/docker/client.h"
#include "sandbox/executors/docker_executor.h"
#include "sandbox/executors/host_executor.h"

namespace sandrun::api {
namespace {

// Fans events out to every connected /v1/events stream; each has a bounded queue so a slow
// client loses old events instead of holding the server's memory.
class EventHub {
 public:
  struct Subscriber {
    std::deque<std::pair<std::string, std::string>> queue;  // (event, data)
    std::condition_variable wake;
  };

  std::shared_ptr<Subscriber> Subscribe() {
    auto s = std::make_shared<Subscriber>();
    std::lock_guard<std::mutex> lock(mu_);
    subscribers_.push_back(s);
    return s;
  }
  void Unsubscribe(const std::shared_ptr<Subscriber>& s) {
    std::lock_guard<std::mutex> lock(mu_);
    subscribers_.remove(s);
  }
  void Publish(const std::string& event, const std::string& data) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : subscribers_) {
      if (s->queue.size() >= kMaxQueued) s->queue.pop_front();
      s->queue.emplace_back(event, data);
      s->wake.notify_all();
    }
  }
  // Waits up to `ms` for an event; false on timeout.
  bool Next(const std::shared_ptr<Subscriber>& s, std::pair<std::string, std::string>* out,
            int ms) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!s->wake.wait_for(lock, std::chrono::milliseconds(ms),
                          [&] { return closed_ || !s->queue.empty(); }) ||
        s->queue.empty()) {
      return false;
    }
    *out = std::move(s->queue.front());
    s->queue.pop_front();
    return true;
  }
  // Ends every stream's wait (server shutdown).
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    for (auto& s : subscribers_) s->wake.notify_all();
  }

 private:
  static constexpr size_t kMaxQueued = 1000;
  std::mutex mu_;
  std::list<std::shared_ptr<Subscriber>> subscribers_;
  bool closed_ = false;
};

std::string Header(const HttpRequestInfo& r, const char* name, const std::string& fallback) {
  auto it = r.headers.find(name);
  return it == r.headers.end() || it->second.empty() ? fallback : it->second;
}

// The server's callers: provider "api", the client's user name (SO_PEERCRED) as sender.
policy::Caller ApiCaller(const HttpRequestInfo& r, const GlobalOptions& g) {
  policy::Caller caller;
  caller.provider = "api";
  caller.sender = UserName(r.peer_uid);
  caller.agent_id = g.agent;
  caller.session_key = g.session;
  return caller;
}

HttpReply ErrorReply(int status, const std::string& code, const std::string& message) {
  return JsonReply(status, RenderError(ToolError{code, message}));
}

HttpServerLimits LimitsFrom(const config::ServerSettings& s) {
  HttpServerLimits limits;
  limits.max_connections = static_cast<size_t>(s.max_connections);
  limits.header_timeout = std::chrono::milliseconds(s.header_timeout_ms);
  limits.idle_timeout = std::chrono::milliseconds(s.idle_timeout_ms);
  limits.max_body_bytes = static_cast<size_t>(s.max_body_bytes);
  limits.max_buffered_bytes = static_cast<size_t>(s.max_buffered_bytes);
  return limits;
}

}  // namespace

int RunServeCommand(const GlobalOptions& global, const ServeOptions& options) {
  auto state_dir = config::StateDirPath();
  if (!state_dir) {
    PrintError(state_dir.error().ToString());
    return kExitFailure;
  }
  if (auto ok = config::EnsureStateDir(*state_dir); !ok) {
    PrintError(ok.error().ToString());
    return kExitFailure;
  }
  auto cfg = config::LoadConfigFor(global.config_file, *state_dir);
  if (!cfg) {
    PrintError(cfg.error().ToString());
    return kExitRefused;
  }
  for (const auto& w : cfg->warnings) PrintWarning(w);
  // Before any call: concurrent first calls must find it, not race to create it.
  if (auto instance = config::LoadOrCreateInstanceId(*state_dir); !instance) {
    PrintError(instance.error().ToString());
    return kExitFailure;
  }

  // Signals go to one thread that stops the server; every other thread blocks them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Declared before the session manager: sessions re-adopted by Recover use these executors,
  // so they must outlive it.
  ExecServices services;
  sessions::Options session_options;
  session_options.state_dir = *state_dir;
  config::AgentSettings defaults = cfg->ForAgent(global.agent);
  session_options.cleanup_ms = defaults.exec.cleanup_ms;
  session_options.pending_max_chars = static_cast<size_t>(defaults.exec.pending_max_output_chars);
  session_options.max_output_chars = static_cast<size_t>(defaults.exec.max_output_chars);
  session_options.executor_for = [&services](exec::ProcessKind kind) -> exec::Executor* {
    return (kind == exec::ProcessKind::kContainer ? services.docker : services.host).get();
  };
  sessions::SessionManager manager(session_options);

  EventHub events;
  manager.SetEventSink([&events](const sessions::Event& e) {
    events.Publish(sessions::Event::TypeName(e.type), e.ToJson());
  });

  services.sessions = &manager;
  const std::string socket =
      !options.socket.empty() ? options.socket : ServerSocketPath(global, *state_dir);
  // Host commands must not reach this server's socket, the state dir or the engine.
  services.host =
      std::make_shared<exec::HostExecutor>(HostExecutorOptions(global, *state_dir, {socket}));
  // Created once, before any call: sessions started by concurrent calls share it. (Making the
  // client does not contact the engine; an unreachable engine fails each sandbox call closed.)
  if (auto client = docker::Client::FromEnvironment(); client) {
    services.docker = std::make_shared<exec::DockerExecutor>(std::move(client).value());
  } else {
    PrintWarning("sandbox calls will fail: " + client.error().ToString());
  }
  // After the executors exist: sandbox sessions that outlived a restart are re-adopted.
  auto recovered = manager.Recover();
  if (!recovered) {
    PrintError(recovered.error().ToString());
    return kExitFailure;
  }
  for (const auto& w : recovered->warnings) PrintWarning(w);

  // Approved commands run as background sessions of the caller that asked.
  ApprovalBroker broker(
      *state_dir,
      [&services](const PendingApproval& p, const std::string& command) -> Result<std::string> {
        exec::Plan plan = p.gated.plan;
        plan.command = command;
        ExecServices run_services = services;
        run_services.tenant = p.tenant;
        return StartBackgroundSession(
            run_services, p.caller, plan,
            {p.command, p.notify_on_exit, p.notify_on_exit_empty_success});
      },
      [&events](const std::string& type, const std::string& json) { events.Publish(type, json); });
  services.approvals = &broker;
  std::atomic<uint64_t> requests{0}, refused{0};

  HttpServer server(LimitsFrom(cfg->server));
  server.Route("GET", "/healthz", [&](const HttpRequestInfo&) {
    return JsonReply(200, "{\"ok\":true,\"sessions\":" + std::to_string(manager.size()) + "}");
  });
  server.Route("GET", "/metrics", [&](const HttpRequestInfo&) {
    std::string text =
        "# HELP sandrun_requests_total Tool calls handled.\n# TYPE sandrun_requests_total counter\n"
        "sandrun_requests_total " +
        std::to_string(requests.load()) +
        "\n# HELP sandrun_refused_total Tool calls refused before anything ran.\n"
        "# TYPE sandrun_refused_total counter\nsandrun_refused_total " +
        std::to_string(refused.load()) +
        "\n# HELP sandrun_sessions Background sessions held.\n# TYPE sandrun_sessions gauge\n"
        "sandrun_sessions " +
        std::to_string(manager.size()) + "\n";
    return HttpReply{200, "text/plain; version=0.0.4", text};
  });

  auto request_global = [&](const HttpRequestInfo& r) {
    GlobalOptions g = global;
    g.agent = Header(r, "x-sandrun-agent", "main");
    g.session = Header(r, "x-sandrun-session", "main");
    // A client may pick its workspace only if it is this server's own user: another user must
    // not get a directory of ours mounted into a sandbox.
    std::string workspace = Header(r, "x-sandrun-workspace", "");
    if (!workspace.empty() && r.peer_uid == ::geteuid()) g.workspace = workspace;
    return g;
  };

  // POST routes that take one tool call of one kind: counted, parsed, and refused with 400 when
  // the body is not such a call.
  using ToolHandler = std::function<HttpReply(const HttpRequestInfo&, const ToolCall&)>;
  auto tool_route = [&](const std::string& path, const std::string& tool, ToolHandler handle) {
    server.Route("POST", path, [&, path, tool, handle](const HttpRequestInfo& r) {
      ++requests;
      auto parsed = ParseToolCall(r.body);
      if (auto* error = std::get_if<ToolError>(&parsed)) {
        ++refused;
        return JsonReply(400, RenderError(*error));
      }
      const ToolCall& call = std::get<ToolCall>(parsed);
      if (call.tool != tool) {
        ++refused;
        return ErrorReply(400, "invalid-request",
                          "POST " + path + " takes " + tool + " tool calls");
      }
      return handle(r, call);
    });
  };

  tool_route("/v1/tools/exec", "exec", [&](const HttpRequestInfo& r, const ToolCall& call) {
    GlobalOptions g = request_global(r);
    policy::Caller caller = ApiCaller(r, g);
    ExecServices call_services = services;  // shared executors, never replaced while serving
    ExecToolResult result = RunExecTool(g, caller, call.exec, nullptr, nullptr, &call_services);
    if (result.refused) ++refused;
    int status = result.refused ? 400 : result.internal ? 500 : 200;
    return JsonReply(status, result.json);
  });

  tool_route(
      "/v1/tools/apply_patch", "apply_patch", [&](const HttpRequestInfo& r, const ToolCall& call) {
        GlobalOptions g = request_global(r);
        ApplyPatchToolResult result = RunApplyPatchTool(g, ApiCaller(r, g), call.apply_patch);
        if (result.refused) ++refused;
        return JsonReply(result.refused ? 400 : result.internal ? 500 : 200, result.json);
      });

  server.Route("POST", "/v1/tools/process", [&](const HttpRequestInfo& r) {
    ++requests;
    auto parsed = sessions::ParseProcessRequest(std::string_view(r.body));
    if (auto* error = std::get_if<sessions::ProcessError>(&parsed)) {
      ++refused;
      return JsonReply(400, sessions::RenderProcessError(*error));
    }
    GlobalOptions g = request_global(r);
    if (auto bad = config::CallerIdsError(g.agent, g.session)) {  // X-Sandrun-Agent/-Session
      ++refused;
      return ErrorReply(400, "invalid-request", *bad);
    }
    sessions::Scope scope{services.tenant, g.agent, g.session};
    sessions::ProcessResult result =
        manager.Process(std::get<sessions::ProcessRequest>(parsed), scope);
    if (result.refused) ++refused;
    return JsonReply(result.refused ? 400 : 200, result.json);
  });

  tool_route("/v1/policy/check", "exec", [&](const HttpRequestInfo& r, const ToolCall& call) {
    GlobalOptions g = request_global(r);
    return JsonReply(200, PolicyCheckJson(g, ApiCaller(r, g), call.exec));
  });

  server.Route("GET", "/v1/approvals", [&](const HttpRequestInfo&) {
    return JsonReply(200, broker.ListJson(services.tenant));
  });
  server.RoutePrefix("POST", "/v1/approvals/", [&](const HttpRequestInfo& r) {
    ++requests;
    const std::string id = r.path.substr(std::string("/v1/approvals/").size());
    auto doc = ParseJson(r.body);
    if (!doc || !doc->IsObject() || !JsonMember(*doc, "decision") ||
        !JsonMember(*doc, "decision")->IsString()) {
      ++refused;
      return ErrorReply(400, "invalid-request",
                        "POST /v1/approvals/{id} takes {\"decision\": \"allow-once|allow-always|"
                        "deny\"}");
    }
    ApprovalBroker::Answer a = broker.Decide(id, JsonString(*doc, "decision"), services.tenant);
    if (a.status != 200) ++refused;
    return JsonReply(a.status, a.json);
  });

  server.RouteStream("/v1/events", [&](const HttpRequestInfo&, const EventWriter& write,
                                       const std::atomic<bool>& stopping) {
    auto sub = events.Subscribe();
    if (write("ready", "{}")) {
      while (!stopping.load()) {
        std::pair<std::string, std::string> event;
        if (events.Next(sub, &event, 15000)) {
          if (!write(event.first, event.second)) break;
        } else if (!write("ping", "{}")) {  // keeps proxies and dead clients honest
          break;
        }
      }
    }
    events.Unsubscribe(sub);
  });

  if (auto listening = server.ListenUnix(socket, 0600); !listening) {
    PrintError(listening.error().ToString());
    return kExitFailure;
  }
  std::fprintf(stderr, "sandrun: serving on %s (%d finished and %d lost sessions recovered)\n",
               socket.c_str(), recovered->finished, recovered->lost);

  std::atomic<bool> served{false};
  std::thread signal_thread([&] {
    // Polls so it also ends when Serve returned for another reason (accept failed).
    while (!served.load()) {
      timespec slice{0, 200 * 1000 * 1000};
      int sig = sigtimedwait(&stop_signals, nullptr, &slice);
      if (sig <= 0) continue;
      std::fprintf(stderr, "sandrun: %s: shutting down\n", sigabbrev_np(sig));
      server.Stop();
      events.Close();
      return;
    }
  });
  server.Serve();  // returns once calls in flight are done
  served = true;
  signal_thread.join();
  broker.Shutdown();
  manager.Shutdown(/*kill_host_processes=*/!options.keep_host_processes);
  std::fprintf(stderr, "sandrun: stopped\n");
  return kExitOk;
}

}  // namespace sandrun::api

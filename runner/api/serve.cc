#include "runner/api/serve.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "runner/api/exec_inputs.h"
#include "runner/api/exec_route.h"
#include "runner/api/exec_stream.h"
#include "runner/api/http_server.h"
#include "runner/api/listen_address.h"
#include "runner/api/mcp_route.h"
#include "runner/api/mcp_server.h"
#include "runner/api/runtime.h"
#include "runner/api/server_auth.h"
#include "runner/api/server_client.h"
#include "runner/api/tool_call.h"
#include "runner/auth/tokens.h"
#include "runner/config/state_dir.h"
#include "runner/wire/tool_result.h"

namespace sandrun::api {
namespace {

HttpReply Reply(const RuntimeReply& r) {
  HttpReply reply = JsonReply(r.status, r.json);
  if (r.retry_after_seconds > 0) {
    reply.headers.emplace_back("Retry-After", std::to_string(r.retry_after_seconds));
  }
  return reply;
}

// A route's handler given the principal the request speaks for (ServerAuth): the gate refused
// what it would refuse, but the tokens may have changed since, so it is asked again.
template <typename Fn>
HttpServer::Handler As(ServerAuth& auth, Fn fn) {
  return [&auth, fn](const HttpRequestInfo& r) -> HttpReply {
    auto decided = auth.Authorize(r);
    if (auto* refusal = std::get_if<HttpReply>(&decided)) return std::move(*refusal);
    return fn(r, std::get<Principal>(decided));
  };
}

// Whose events and metrics a caller sees: an admin that names no tenant (X-Sandrun-Tenant) sees
// every tenant's, anyone else its own tenant's only.
TenantFilter FilterFor(const HttpRequestInfo& r, const Principal& who) {
  if (who.role == "admin" && r.headers.count("x-sandrun-tenant") == 0) return TenantFilter::All();
  return TenantFilter::Tenant(who.tenant);
}

// Connections held per tenant of token callers: an event stream holds its connection for as long
// as its client likes, and a tool call for as long as it runs (an exec's yield window, a wait for
// an approval, an MCP call up to mcp.maxBlockMs). One tenant may hold at most an eighth of
// server.maxConnections with them and can never lock the others out (the local socket's owner is
// not counted). Hold() gives a slot back when its last holder goes, whatever became of the
// request (a reply never written, a stream never started).
class StreamSlots {
 public:
  explicit StreamSlots(size_t max_connections)
      : per_tenant_(std::max<size_t>(1, max_connections / 8)) {}
  size_t per_tenant() const { return per_tenant_; }
  bool Take(const std::string& tenant) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t& n = open_[tenant];
    if (n >= per_tenant_) return false;
    ++n;
    return true;
  }
  void Give(const std::string& tenant) {
    std::lock_guard<std::mutex> lock(mu_);
    if (--open_[tenant] == 0) open_.erase(tenant);
  }
  // A slot for `who` (null when its tenant holds them all); a local caller's (no token) is not
  // counted and never refused.
  std::shared_ptr<void> Hold(const Principal& who) {
    if (who.token_name.empty()) return std::make_shared<int>(0);
    if (!Take(who.tenant)) return nullptr;
    return std::make_shared<Slot>(this, who.tenant);
  }
  // The refusal for a caller whose tenant holds every slot (429): nothing was run.
  Error BusyError(const Principal& who) const {
    return Error::Refusal("quota-exceeded", "tenant \"" + who.tenant + "\" already holds " +
                                                std::to_string(per_tenant_) +
                                                " calls in progress and event streams (an eighth "
                                                "of server.maxConnections); nothing was run");
  }
  RuntimeReply Busy(const Principal& who) const {
    return {429, RenderToolError(BusyError(who)), 1};
  }

 private:
  // A taken slot: given back when it goes.
  struct Slot {
    Slot(StreamSlots* owner, std::string of) : slots(owner), tenant(std::move(of)) {}
    ~Slot() { slots->Give(tenant); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    StreamSlots* slots;
    std::string tenant;
  };
  const size_t per_tenant_;
  std::mutex mu_;
  std::map<std::string, size_t> open_;
};

// Last-Event-ID: a decimal event id; nullopt when absent, an error text when malformed.
std::variant<std::optional<uint64_t>, std::string> LastEventId(const HttpRequestInfo& r) {
  auto it = r.headers.find("last-event-id");
  if (it == r.headers.end() || it->second.empty()) return std::optional<uint64_t>();
  const std::string& v = it->second;
  uint64_t id = 0;
  for (char c : v) {
    if (c < '0' || c > '9' || id > (UINT64_MAX - 9) / 10) {
      return "Last-Event-ID must be an event id (a decimal number), got \"" + v.substr(0, 40) +
             "\"";
    }
    id = id * 10 + static_cast<uint64_t>(c - '0');
  }
  return std::optional<uint64_t>(id);
}

// /v1/agents/{agent}/sessions[/{key}[/directive]]: the ids (percent-decoded; the runtime
// checks them); nullopt for any other shape.
struct SessionPath {
  std::string agent;
  std::string key;  // "" for the list
  bool directive = false;
};
std::optional<SessionPath> ParseSessionPath(const std::string& path) {
  std::vector<std::string> parts;
  std::string_view rest = std::string_view(path).substr(std::string_view("/v1/agents/").size());
  for (;;) {
    size_t slash = rest.find('/');
    parts.push_back(UrlDecode(rest.substr(0, slash)));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (parts.size() < 2 || parts.size() > 4 || parts[1] != "sessions") return std::nullopt;
  SessionPath out{parts[0], parts.size() > 2 ? parts[2] : "", false};
  if (parts.size() == 4) {
    if (parts[3] != "directive") return std::nullopt;
    out.directive = true;
  }
  if (parts.size() > 2 && out.key.empty()) return std::nullopt;
  return out;
}

HttpReply NoSuchRoute(const HttpRequestInfo& r) {
  return JsonReply(404, RenderToolError("not-found", "no route for " + r.method + " " + r.path));
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
  // Signals go to one thread that stops the server; every other thread blocks them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // The TCP listener's address and TLS files are checked before anything starts.
  auto tcp = PlanTcpListener(options.listen, options.tls_cert, options.tls_key);
  if (!tcp) {
    PrintError(tcp.error().ToString());
    return kExitRefused;
  }

  std::string socket = options.socket;
  if (socket.empty()) {
    auto state_dir = config::StateDirPath();
    if (!state_dir) {
      PrintError(state_dir.error().ToString());
      return kExitFailure;
    }
    socket = ServerSocketPath(global, *state_dir);
  }
  auto started = Runtime::Start(global, {socket, options.keep_host_processes});
  if (!started) {
    PrintError(started.error().ToString());
    return started.error().WireCode() == "invalid-config" ? kExitRefused : kExitFailure;
  }
  Runtime& runtime = **started;

  ServerAuth auth(auth::TokensPath(runtime.state_dir()), options.require_tokens, ::geteuid());
  if (Status loaded = auth.Load(); !loaded) {
    PrintError("cannot start without the tokens file: " + loaded.error().ToString());
    return kExitRefused;
  }

  HttpServer server(LimitsFrom(runtime.server_settings()));
  StreamSlots streams(static_cast<size_t>(runtime.server_settings().max_connections));
  // Nothing is read past a request's headers, routed or upgraded before its caller is known.
  server.SetGate([&](const HttpRequestInfo& r) { return auth.Refusal(r); });
  server.Route("GET", "/healthz", [&](const HttpRequestInfo&) {
    return JsonReply(200,
                     "{\"ok\":true,\"sessions\":" + std::to_string(runtime.session_count()) + "}");
  });
  server.Route(
      "GET", "/metrics", As(auth, [&](const HttpRequestInfo& r, const Principal& who) {
        return HttpReply{
            200, "text/plain; version=0.0.4", runtime.MetricsText(FilterFor(r, who)), {}, nullptr};
      }));
  server.Route("POST", "/v1/tools/exec",
               As(auth, [&](const HttpRequestInfo& r, const Principal& who) {
                 // Every call may hold its connection for a while (its yield window, a wait for its
                 // approval): a token caller's share the tenant's slots with its event streams.
                 std::shared_ptr<void> slot = streams.Hold(who);
                 if (!slot) return Reply(streams.Busy(who));
                 if (r.body.find("\"wait\"") == std::string::npos)
                   return Reply(runtime.Exec(who, r.body));
                 // A wait ends when its client goes away (the approval stays).
                 PeerWatch peer(r);
                 return Reply(runtime.Exec(who, r.body, &peer.gone()));
               }));
  // MCP's Streamable HTTP transport (mcp_route.h): one McpServer for every caller.
  McpServer mcp(runtime, "http");
  server.Route("POST", "/mcp", As(auth, [&](const HttpRequestInfo& r, const Principal& who) {
                 return McpHttpReply(r, who, mcp, [&streams, &who] { return streams.Hold(who); });
               }));
  for (const char* method : {"GET", "DELETE"}) {
    // 2026-07-28 streamable-http.mdx: no GET stream and no sessions to delete.
    server.Route(method, "/mcp", [](const HttpRequestInfo&) {
      HttpReply reply = JsonReply(405, McpErrorJson("null", kJsonRpcInvalidRequest,
                                                    "POST /mcp only: no GET stream, no sessions"));
      reply.headers.emplace_back("Allow", "POST");
      return reply;
    });
  }
  server.Route("POST", "/v1/tools/apply_patch",
               As(auth, [&](const HttpRequestInfo& r, const Principal& who) {
                 return Reply(runtime.ApplyPatch(who, r.body));
               }));
  // `sandrun exec` through the server: the exec stream (exec_route.h), upgraded from POST.
  server.RouteUpgrade(
      "POST", "/v1/exec", kExecUpgrade,
      [&](const HttpRequestInfo& r, UpgradedConnection& conn, const std::atomic<bool>& stopping) {
        auto decided = auth.Authorize(r);
        if (auto* who = std::get_if<Principal>(&decided)) {
          // The stream holds its connection for the whole run: one of the tenant's slots.
          std::shared_ptr<void> slot = streams.Hold(*who);
          if (!slot) return RefuseExecStream(conn, streams.BusyError(*who));
          ServeExecStream(r, conn, stopping, runtime, *who);
        }
      });
  server.Route("POST", "/v1/tools/process",
               As(auth, [&](const HttpRequestInfo& r, const Principal& who) {
                 // A poll may wait (up to 2 minutes): one of the tenant's slots.
                 std::shared_ptr<void> slot = streams.Hold(who);
                 if (!slot) return Reply(streams.Busy(who));
                 return Reply(runtime.Process(who, r.body));
               }));
  server.Route("POST", "/v1/policy/check",
               As(auth, [&](const HttpRequestInfo& r, const Principal& who) {
                 return Reply(runtime.PolicyCheck(who, r.body));
               }));
  server.Route("GET", "/v1/approvals", As(auth, [&](const HttpRequestInfo&, const Principal& who) {
                 return Reply(runtime.ListApprovals(who));
               }));
  server.RoutePrefix("POST", "/v1/approvals/",
                     As(auth, [&](const HttpRequestInfo& r, const Principal& who) {
                       const std::string id = r.path.substr(std::string("/v1/approvals/").size());
                       return Reply(runtime.DecideApproval(who, id, r.body));
                     }));
  server.RoutePrefix("GET", "/v1/approvals/",
                     As(auth, [&](const HttpRequestInfo& r, const Principal& who) {
                       const std::string id = r.path.substr(std::string("/v1/approvals/").size());
                       // An agent token reads its own agent's approvals only.
                       return Reply(runtime.ShowApproval(who, id, who.role == "agent"));
                     }));
  // Session state (session_admin.h): operators and admins only (ServerAuth).
  auto sessions = [&](const char* method) {
    return As(auth, [&runtime, &auth, method](const HttpRequestInfo& r, const Principal& who) {
      auto at = ParseSessionPath(r.path);
      const std::string m = method;
      if (!at || at->directive != (m == "POST") || (at->key.empty() && m != "GET")) {
        return NoSuchRoute(r);
      }
      // The path's agent must be one the token may act for (its --agents), as a header's is.
      HttpRequestInfo as_path = r;
      as_path.headers["x-sandrun-agent"] = at->agent;
      auto decided = auth.Authorize(as_path);
      if (auto* refusal = std::get_if<HttpReply>(&decided)) return std::move(*refusal);
      if (m == "GET") {
        return Reply(at->key.empty() ? runtime.ListSessionStates(who, at->agent)
                                     : runtime.ShowSessionState(who, at->agent, at->key));
      }
      const char* action = m == "PATCH" ? "patch" : m == "DELETE" ? "clear" : "directive";
      return Reply(runtime.ChangeSessionState(who, at->agent, at->key, action, r.body));
    });
  };
  for (const char* method : {"GET", "PATCH", "DELETE", "POST"}) {
    server.RoutePrefix(method, "/v1/agents/", sessions(method));
  }
  server.Route("GET", "/v1/sandboxes", As(auth, [&](const HttpRequestInfo&, const Principal& who) {
                 return Reply(runtime.ListSandboxes(who));
               }));
  server.RoutePrefix("DELETE", "/v1/sandboxes/",
                     As(auth, [&](const HttpRequestInfo& r, const Principal& who) {
                       const std::string name = r.path.substr(std::string("/v1/sandboxes/").size());
                       return Reply(runtime.RemoveSandbox(who, name));
                     }));
  server.RouteStream("/v1/events", [&](const HttpRequestInfo& r, const EventWriter& write,
                                       const std::atomic<bool>& stopping) {
    auto decided = auth.Authorize(r);
    const Principal* who = std::get_if<Principal>(&decided);
    if (who == nullptr) return;
    auto after = LastEventId(r);
    if (auto* bad = std::get_if<std::string>(&after)) {
      // The stream's headers are out: the refusal is its one event, then it ends.
      (void)write("error", RenderToolError(Error::Refusal("invalid-request", *bad)), 0);
      return;
    }
    // Replays what the ring still holds after Last-Event-ID, then live events.
    const bool counted = !who->token_name.empty();
    if (counted && !streams.Take(who->tenant)) {
      (void)write("error",
                  RenderToolError(Error::Refusal(
                      "quota-exceeded", "tenant \"" + who->tenant + "\" already holds " +
                                            std::to_string(streams.per_tenant()) +
                                            " event streams (an eighth of server.maxConnections)")),
                  0);
      return;
    }
    struct Release {
      StreamSlots& slots;
      const std::string& tenant;
      bool counted;
      ~Release() {
        if (counted) slots.Give(tenant);
      }
    } release{streams, who->tenant, counted};
    // An agent token hears its own agent's events only (they carry commands and output).
    TenantFilter filter = FilterFor(r, *who);
    if (who->role == "agent") filter.agent = who->agent;
    auto sub = runtime.Subscribe(filter, std::get<std::optional<uint64_t>>(after));
    if (write("ready", "{}", 0)) {
      while (!stopping.load()) {
        Runtime::Event event;
        const bool got = runtime.NextEvent(sub, &event, 15000);
        // The token is checked again before each event: one revoked (or expired) while its
        // stream was open gets no more of its tenant's events, its stream ends.
        auto still = auth.Authorize(r);
        if (auto* refusal = std::get_if<HttpReply>(&still)) {
          (void)write("error", refusal->body, 0);
          break;
        }
        if (got) {
          if (!write(event.type, event.json, event.id)) break;
        } else if (!write("ping", "{}", 0)) {  // keeps proxies and dead clients honest
          break;
        }
      }
    }
    runtime.Unsubscribe(sub);
  });

  if (auto listening = server.ListenUnix(socket, 0600); !listening) {
    PrintError(listening.error().ToString());
    return kExitFailure;
  }
  std::fprintf(stderr, "sandrun: serving on %s (%d finished and %d lost sessions recovered)\n",
               socket.c_str(), runtime.recovered_finished(), runtime.recovered_lost());
  if (!options.listen.empty()) {
    auto port = server.ListenTcp(tcp->address.host, tcp->address.port, tcp->tls);
    if (!port) {
      PrintError(port.error().ToString());
      return kExitFailure;
    }
    std::fprintf(stderr, "sandrun: listening on %s\n",
                 ListenUrl(tcp->address, *port, tcp->tls != nullptr).c_str());
  }

  std::atomic<bool> served{false};
  std::thread signal_thread([&] {
    // Polls so it also ends when Serve returned for another reason (accept failed).
    while (!served.load()) {
      timespec slice{0, 200 * 1000 * 1000};
      int sig = sigtimedwait(&stop_signals, nullptr, &slice);
      if (sig <= 0) continue;
      if (sig == SIGHUP) {
        // Reload, not stop: tokens (a revocation) and config take effect at the next request.
        Status tokens = auth.Reload();
        Status config = runtime.Reload();
        if (!tokens) {
          PrintWarning("SIGHUP: tokens not reloaded (the ones loaded stay in force): " +
                       tokens.error().ToString());
        }
        if (!config) {
          PrintWarning("SIGHUP: config not reloaded (the one loaded stays in force): " +
                       config.error().ToString());
        }
        std::fprintf(stderr, "sandrun: SIGHUP: %s reloaded\n",
                     tokens && config ? "tokens and config"
                     : tokens         ? "tokens (not the config)"
                     : config         ? "config (not the tokens)"
                                      : "nothing");
        continue;
      }
      std::fprintf(stderr, "sandrun: %s: shutting down\n", sigabbrev_np(sig));
      server.Stop();
      runtime.CloseEvents();
      return;
    }
  });
  server.Serve();  // returns once calls in flight are done
  served = true;
  signal_thread.join();
  runtime.Shutdown();
  std::fprintf(stderr, "sandrun: stopped\n");
  return kExitOk;
}

}  // namespace sandrun::api

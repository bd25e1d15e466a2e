// A small HTTP/1.1 server on a unix socket and TCP listeners, plain or TLS (Boost.Beast over
// connection.h), for `sandrun serve`: one thread per connection, keep-alive, JSON
// request/response handlers, and server-sent event streams. Knows nothing of tools: routes are
// handlers given by the caller; every listener serves the same routes.
//
// Bounded by HttpServerLimits, so that no client can hold the server's threads or memory:
//   - connections beyond max_connections (all listeners together) are answered 503 at once and
//     closed, never queued (on a TLS listener, closed at once: a reply would need a handshake);
//   - a request's headers must arrive within header_timeout (counted from the connection for its
//     first request, TLS handshake included, from the request's first byte on a keep-alive
//     connection), else the connection is closed;
//   - a keep-alive connection idle for idle_timeout between requests is closed; so is one whose
//     body does not arrive within idle_timeout of its headers, or that does not take a reply (or
//     an event) within idle_timeout of it being sent;
//   - a body over max_body_bytes is answered 413: before any of it is read when its
//     Content-Length says so, where it crosses the limit when it is chunked;
//   - a body holds its declared size (a chunked one: max_body_bytes) against max_buffered_bytes,
//     shared by every connection, from its headers until its request is handled: a body that
//     does not fit is answered 503.
// Event streams (RouteStream) count as connections; while one is open the idle timeout does not
// apply to it (the server reads nothing more from it), only the write deadline does: a client
// that stops reading its events for idle_timeout is dropped.
// Every limit refusal closes the connection.
//
// Pattern of use:
//   HttpServer server(limits);
//   server.Route("POST", "/v1/tools/exec", [&](const HttpRequestInfo& r) { return Reply(...); });
//   SANDRUN_RETURN_IF_ERROR(server.ListenUnix(path, 0600));
//   auto port = server.ListenTcp("127.0.0.1", 0, tls);  // optional; tls null: plain
//   server.Serve();            // until Stop() from another thread (e.g. a signal watcher)
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

// %XX escapes decoded, '+' read as a space (query strings; path segments of ids, which have
// neither).
std::string UrlDecode(std::string_view s);

class Connection;
class TlsContext;

struct HttpRequestInfo {
  std::string method;
  std::string target;  // path + query
  std::string path;    // without the query
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // lowercased names; repeats joined by ", "
  std::string body;
  uid_t peer_uid = static_cast<uid_t>(-1);  // SO_PEERCRED of the unix-socket client
  // "unix" (the local socket: peer_uid is known) or "tcp" (a TCP listener, TLS or loopback
  // plain): a TCP client has no uid and must present a token.
  std::string transport = "unix";
  std::string remote;  // the TCP peer "host:port" ("" on the unix socket)
  // Whether the client has closed the connection (polled without reading: a handler that holds
  // a request for long, such as an exec waiting for its approval, stops when it is gone).
  std::function<bool()> peer_gone;
};

// Writes one server-sent event (`id` > 0: with an `id:` line, for Last-Event-ID); false once the
// client went away.
using EventWriter =
    std::function<bool(const std::string& event, const std::string& data, uint64_t id)>;

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra response headers (WWW-Authenticate on a 401, Retry-After on a 429).
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the reply is an event stream instead of `body` (the handler chose it after reading
  // the request: MCP's SSE responses): the head goes out (200, text/event-stream, `headers`),
  // then this writes the events; the connection closes when it returns.
  std::function<void(const EventWriter& write)> stream;
};

struct HttpServerLimits {
  size_t max_connections = 0;                   // open connections (event streams included)
  std::chrono::milliseconds header_timeout{0};  // for a request's headers
  std::chrono::milliseconds idle_timeout{0};    // between requests; for a body; for each write
  size_t max_body_bytes = 0;                    // one request body
  size_t max_buffered_bytes = 0;                // request bodies held, all connections
};

// A connection switched to another protocol (101 Switching Protocols) for its handler: the
// connection (plain or TLS, still owned by the server; one thread may read it while another
// writes), the bytes the client sent past its request, and the server's write deadline
// (idle_timeout) for the handler's own writes.
struct UpgradedConnection {
  Connection* connection = nullptr;
  std::string pending;
  std::chrono::milliseconds write_timeout{0};
};

class HttpServer {
 public:
  using Handler = std::function<HttpReply(const HttpRequestInfo&)>;
  // Holds the connection for an event stream: called with a writer, returns when the stream
  // should end (client gone or server stopping: check `stopping`).
  using StreamHandler = std::function<void(const HttpRequestInfo&, const EventWriter& write,
                                           const std::atomic<bool>& stopping)>;

  explicit HttpServer(const HttpServerLimits& limits);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Route(const std::string& method, const std::string& path, Handler handler);
  // Routes every path starting with `prefix` (e.g. "/v1/approvals/").
  void RoutePrefix(const std::string& method, const std::string& prefix, Handler handler);
  void RouteStream(const std::string& path, StreamHandler handler);
  // Holds an upgraded connection: the request must carry `Upgrade: <protocol>` (else 426); it
  // is answered 101 and the handler speaks the protocol until it returns (then the connection
  // closes). Counts as a connection like a stream; no idle timeout applies to it.
  using UpgradeHandler = std::function<void(const HttpRequestInfo&, UpgradedConnection& conn,
                                            const std::atomic<bool>& stopping)>;
  void RouteUpgrade(const std::string& method, const std::string& path, const std::string& protocol,
                    UpgradeHandler handler);

  // Checked for every request once its headers are in, before its body is read or any route
  // (stream and upgrade ones too) sees it: a reply refuses the request (and, when its body was
  // not read, closes the connection); nullopt lets it through. The request has no body yet.
  using Gate = std::function<std::optional<HttpReply>(const HttpRequestInfo&)>;
  void SetGate(Gate gate);

  // Binds `path` (a stale socket file nobody answers on is replaced; a live one is an error),
  // chmod `mode`.
  Status ListenUnix(const std::string& path, unsigned mode);
  // Listens on TCP at `host` (a numeric IPv4 or IPv6 address) and `port` (0: a free one), with
  // TLS when `tls` is set; returns the bound port. Its requests have transport "tcp", the peer's
  // "ip:port" as remote and no uid. Whether an address may go without TLS is the caller's call.
  Result<uint16_t> ListenTcp(const std::string& host, uint16_t port,
                             std::shared_ptr<const TlsContext> tls);
  // Accepts until Stop(); returns after every connection thread ended (in-flight requests finish).
  void Serve();
  // Stops accepting and asks connections to finish; safe from any thread (not from a signal
  // handler: use a self-pipe and call it from a thread).
  void Stop();
  bool stopping() const { return stopping_.load(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stopping_{false};
};

HttpReply JsonReply(int status, std::string body);

// Watches a request's client while a handler holds the request (an exec waiting for its
// approval, an MCP call): gone() is cancelled once the client has closed its connection (looked
// at every 100 ms by a thread of its own, stopped and joined by the destructor).
class PeerWatch {
 public:
  explicit PeerWatch(const HttpRequestInfo& r);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  const CancelToken& gone() const { return gone_; }

 private:
  CancelToken gone_;
  std::mutex mu_;
  std::condition_variable wake_;  // the destructor's: it never waits out a look's interval
  bool done_ = false;             // guarded by mu_
  std::thread thread_;
};

}  // namespace sandrun::api

#include "runner/api/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include "runner/api/body_budget.h"
#include "runner/api/connection.h"
#include "runner/api/deadline_stream.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::api {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Local = asio::local::stream_protocol;
using Clock = std::chrono::steady_clock;
using BoostError = boost::system::error_code;

// A complete reply that ends the connection, e.g. a refusal sent before reading anything.
std::string ClosingReply(int status, const char* reason, const std::string& json) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nServer: sandrun\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(json.size()) + "\r\nConnection: close\r\n\r\n" + json;
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && Hex(s[i + 1]) >= 0 && Hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(Hex(s[i + 1]) * 16 + Hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i] == '+' ? ' ' : s[i]);
    }
  }
  return out;
}

namespace {

void ParseTarget(HttpRequestInfo& info) {
  size_t q = info.target.find('?');
  info.path = info.target.substr(0, q);
  if (q == std::string::npos) return;
  std::string_view rest = std::string_view(info.target).substr(q + 1);
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    size_t eq = pair.find('=');
    info.query[UrlDecode(pair.substr(0, eq))] =
        eq == std::string_view::npos ? "" : UrlDecode(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
}

}  // namespace

HttpReply JsonReply(int status, std::string body) {
  return HttpReply{status, "application/json", std::move(body), {}, nullptr};
}

PeerWatch::PeerWatch(const HttpRequestInfo& r) {
  if (!r.peer_gone) return;
  thread_ = std::thread([this, gone = r.peer_gone] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      if (gone()) {
        gone_.Cancel();
        return;
      }
      wake_.wait_for(lock, std::chrono::milliseconds(100));
    }
  });
}

PeerWatch::~PeerWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

struct HttpServer::Impl {
  struct RouteEntry {
    std::string method;
    std::string path;
    bool prefix = false;
    Handler handler;
    StreamHandler stream;
    std::string protocol;  // for upgrade routes
    UpgradeHandler upgrade;
  };

  // A socket Serve() accepts on: the unix socket (the acceptor's) or a TCP one (owned).
  struct Listener {
    int fd = -1;
    UniqueFd owned;
    bool tcp = false;
    std::shared_ptr<const TlsContext> tls;  // null: plain
  };

  explicit Impl(const HttpServerLimits& l) : limits(l), budget(l.max_buffered_bytes) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
      wake_read.reset(fds[0]);
      wake_write.reset(fds[1]);
    }
  }

  const HttpServerLimits limits;
  ByteBudget budget;
  asio::io_context io;
  std::unique_ptr<Local::acceptor> acceptor;
  std::vector<Listener> listeners;  // set up before Serve()
  // Stop() writes a byte: Serve() waits on every listener and this at once.
  UniqueFd wake_read, wake_write;
  std::vector<RouteEntry> routes;
  Gate gate;
  std::mutex mu;
  std::set<int> live_fds;  // guarded by mu
  size_t active = 0;       // connection threads running, guarded by mu
  std::condition_variable idle;
  std::string socket_path;

  const RouteEntry* Find(const std::string& method, const std::string& path, bool* wrong_method) {
    *wrong_method = false;
    for (const auto& r : routes) {
      bool match = r.prefix ? path.rfind(r.path, 0) == 0 : path == r.path;
      if (!match) continue;
      if (r.method == method) return &r;
      *wrong_method = true;
    }
    return nullptr;
  }

  // Takes a connection slot for `fd`; false when every slot is taken.
  bool Admit(int fd) {
    std::lock_guard<std::mutex> lock(mu);
    if (active >= limits.max_connections) return false;
    live_fds.insert(fd);
    ++active;
    return true;
  }
  // Gives the slot back. Called before the fd is closed, so Stop never shuts down a reused
  // descriptor, and a client that saw its connection end can count on the slot being free.
  void Leave(int fd) {
    std::lock_guard<std::mutex> lock(mu);
    live_fds.erase(fd);
    if (--active == 0) idle.notify_all();
  }

  // `remote`: the TCP peer ("" on the unix socket).
  void ServeConnection(int fd, const Listener& listener, const std::string& remote,
                       const std::atomic<bool>& stopping);
  // Serves one event stream on the connection; returns when it ends.
  void ServeStream(DeadlineStream& stream, const RouteEntry& route, const HttpRequestInfo& info,
                   unsigned version, const std::atomic<bool>& stopping);
  // Sends an event stream's head (200, text/event-stream, `headers`), then lets `body` write its
  // events; the connection ends after it.
  void ServeEvents(DeadlineStream& stream, unsigned version,
                   const std::vector<std::pair<std::string, std::string>>& headers,
                   const std::function<void(const EventWriter&)>& body);
  // Writes a JSON reply; false if the client did not take it in time.
  bool Reply(DeadlineStream& stream, unsigned version, const HttpReply& reply, bool keep_alive);
};

namespace {

const char* kBusyConnections = "too many connections (server.maxConnections); retry later";

}  // namespace

bool HttpServer::Impl::Reply(DeadlineStream& stream, unsigned version, const HttpReply& reply,
                             bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
  res.set(http::field::content_type, reply.content_type);
  res.set(http::field::server, "sandrun");
  for (const auto& [name, value] : reply.headers) res.set(name, value);
  res.body() = reply.body;
  res.keep_alive(keep_alive);
  res.prepare_payload();
  stream.ExpiresAfter(limits.idle_timeout);
  BoostError ec;
  http::write(stream, res, ec);
  return !ec;
}

void HttpServer::Impl::ServeStream(DeadlineStream& stream, const RouteEntry& route,
                                   const HttpRequestInfo& info, unsigned version,
                                   const std::atomic<bool>& stopping) {
  ServeEvents(stream, version, {},
              [&](const EventWriter& writer) { route.stream(info, writer, stopping); });
}

void HttpServer::Impl::ServeEvents(DeadlineStream& stream, unsigned version,
                                   const std::vector<std::pair<std::string, std::string>>& headers,
                                   const std::function<void(const EventWriter&)>& body) {
  http::response<http::empty_body> head{http::status::ok, version};
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  // Proxies (nginx) must pass events on as they come, not buffer them.
  head.set("X-Accel-Buffering", "no");
  for (const auto& [name, value] : headers) head.set(name, value);
  head.keep_alive(false);
  http::response_serializer<http::empty_body> sr{head};
  stream.ExpiresAfter(limits.idle_timeout);
  BoostError ec;
  http::write_header(stream, sr, ec);
  if (ec) return;
  EventWriter writer = [&](const std::string& event, const std::string& data, uint64_t id) {
    std::string frame = id > 0 ? "id: " + std::to_string(id) + "\n" : std::string();
    frame += "event: " + event + "\n";
    size_t start = 0;
    for (size_t nl; (nl = data.find('\n', start)) != std::string::npos; start = nl + 1) {
      frame += "data: " + data.substr(start, nl - start) + "\n";
    }
    frame += "data: " + data.substr(start) + "\n\n";
    // Each event must be taken within the idle timeout; the stream itself may last for ever.
    stream.ExpiresAfter(limits.idle_timeout);
    BoostError e;
    asio::write(stream, asio::buffer(frame), e);
    return !e;
  };
  body(writer);
}

void HttpServer::Impl::ServeConnection(int fd, const Listener& listener, const std::string& remote,
                                       const std::atomic<bool>& stopping) {
  // Only the unix socket has a peer uid; a TCP client is nobody's (it presents a token).
  uid_t uid = static_cast<uid_t>(-1);
  if (!listener.tcp) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) uid = cred.uid;
  }
  const Clock::time_point accepted = Clock::now();
  std::unique_ptr<Connection> conn = listener.tls ? std::make_unique<Connection>(fd, *listener.tls)
                                                  : std::make_unique<Connection>(fd);
  // The handshake is part of the first request's header time: a client that never sends its
  // ClientHello holds its slot no longer than one that never sends its headers. A failed
  // handshake (plain HTTP, an old protocol, garbage) ends this connection only.
  if (conn->Handshake(accepted + limits.header_timeout).status != Connection::Io::kOk) return;
  DeadlineStream stream(*conn);
  beast::flat_buffer buffer;
  for (bool first = true;; first = false) {
    // The first request's headers must be complete within the header timeout of the connection;
    // later ones within the header timeout of their first byte, which must come within the idle
    // timeout.
    if (!first && buffer.size() == 0) {
      stream.ExpiresAfter(limits.idle_timeout);
      BoostError ec;
      if (!stream.WaitReadable(ec)) break;
    }
    stream.ExpiresAt((first ? accepted : Clock::now()) + limits.header_timeout);

    http::request_parser<http::string_body> parser;
    parser.body_limit(limits.max_body_bytes);  // a larger Content-Length fails at the header
    BoostError ec;
    http::read_header(stream, buffer, parser, ec);
    auto too_large = [&] {
      (void)Reply(
          stream, 11,
          JsonReply(413, RenderToolError("body-too-large",
                                         "the request body is over server.maxBodyBytes (" +
                                             std::to_string(limits.max_body_bytes) + " bytes)")),
          false);
    };
    if (ec == http::error::body_limit) {
      too_large();
      break;
    }
    if (ec) break;
    const unsigned version = parser.get().version();

    HttpRequestInfo info;
    {
      auto& head = parser.get();
      info.method = std::string(head.method_string());
      info.target = std::string(head.target());
      info.peer_uid = uid;
      info.peer_gone = [fd, &stopping] {
        pollfd p{fd, POLLRDHUP, 0};
        // Stop() shuts the read side of every connection, which reads as the peer's hang-up: a
        // call in flight is not its client's to lose then (it finishes and is answered).
        const int gone = stopping.load() ? (POLLHUP | POLLERR) : (POLLRDHUP | POLLHUP | POLLERR);
        return ::poll(&p, 1, 0) > 0 && (p.revents & gone) != 0;
      };
      if (listener.tcp) {
        info.transport = "tcp";
        info.remote = remote;
      }
      for (const auto& field : head) {
        // A repeated field is one comma-separated list (RFC 9110 §5.3), never "the last one
        // wins": a second Authorization or X-Sandrun-Tenant must not replace the one a proxy
        // checked. The joined value is no valid token, tenant, agent or session: refused.
        auto [it, fresh] = info.headers.try_emplace(Lower(std::string(field.name_string())),
                                                    std::string(field.value()));
        if (!fresh) it->second += ", " + std::string(field.value());
      }
      ParseTarget(info);
    }
    if (gate) {
      if (std::optional<HttpReply> refusal = gate(info)) {
        // A body not read cannot be skipped safely: the connection ends with the reply.
        bool keep_alive = parser.is_done() && parser.get().keep_alive() && !stopping.load();
        if (!Reply(stream, version, *refusal, keep_alive) || !keep_alive) break;
        continue;
      }
    }

    Reservation reservation;
    if (!parser.is_done()) {
      // What the body will hold once read: its declared length, or for a chunked body the most
      // it may grow to.
      size_t need = static_cast<size_t>(parser.content_length().value_or(limits.max_body_bytes));
      if (!budget.TryReserve(need)) {
        (void)Reply(stream, version,
                    JsonReply(503, RenderToolError("server-busy",
                                                   "request bodies being received fill "
                                                   "server.maxBufferedBytes; retry later")),
                    false);
        break;
      }
      reservation = Reservation(&budget, need);
      if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        http::response<http::empty_body> go_on{http::status::continue_, version};
        stream.ExpiresAfter(limits.idle_timeout);
        http::write(stream, go_on, ec);
        if (ec) break;
      }
      stream.ExpiresAfter(limits.idle_timeout);
      http::read(stream, buffer, parser, ec);
      if (ec == http::error::body_limit) {
        too_large();
        break;
      }
      if (ec) break;
    }

    auto& req = parser.get();
    info.body = std::move(req.body());
    bool wrong_method = false;
    const RouteEntry* route = Find(info.method, info.path, &wrong_method);
    if (route != nullptr && route->upgrade) {
      reservation = Reservation();
      if (!beast::iequals(req[http::field::upgrade], route->protocol)) {
        (void)Reply(stream, version,
                    JsonReply(426, RenderToolError("upgrade-required",
                                                   info.method + " " + info.path +
                                                       " needs Upgrade: " + route->protocol)),
                    false);
        break;
      }
      const std::string head =
          "HTTP/1.1 101 Switching Protocols\r\nServer: sandrun\r\nUpgrade: " + route->protocol +
          "\r\nConnection: Upgrade\r\n\r\n";
      stream.ExpiresAfter(limits.idle_timeout);
      BoostError e;
      asio::write(stream, asio::buffer(head), e);
      if (e) break;
      UpgradedConnection upgraded;
      upgraded.connection = conn.get();
      upgraded.pending.assign(static_cast<const char*>(buffer.data().data()), buffer.size());
      upgraded.write_timeout = limits.idle_timeout;
      route->upgrade(info, upgraded, stopping);
      break;
    }
    if (route != nullptr && route->stream) {
      reservation = Reservation();
      ServeStream(stream, *route, info, version, stopping);
      break;
    }
    HttpReply reply;
    if (route != nullptr) {
      reply = route->handler(info);
    } else {
      reply = JsonReply(wrong_method ? 405 : 404,
                        RenderToolError(wrong_method ? "method-not-allowed" : "not-found",
                                        "no route for " + info.method + " " + info.path));
    }
    if (reply.stream) {
      reservation = Reservation();
      ServeEvents(stream, version, reply.headers, reply.stream);
      break;
    }
    info = HttpRequestInfo();
    reservation = Reservation();  // the body is gone
    bool keep_alive = req.keep_alive() && !stopping.load();
    if (!Reply(stream, version, reply, keep_alive) || !keep_alive) break;
  }
}

HttpServer::HttpServer(const HttpServerLimits& limits) : impl_(std::make_unique<Impl>(limits)) {}

HttpServer::~HttpServer() {
  Stop();
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    impl_->idle.wait(lock, [this] { return impl_->active == 0; });
  }
  if (!impl_->socket_path.empty()) ::unlink(impl_->socket_path.c_str());
}

void HttpServer::Route(const std::string& method, const std::string& path, Handler handler) {
  impl_->routes.push_back({method, path, false, std::move(handler), nullptr, "", nullptr});
}

void HttpServer::RoutePrefix(const std::string& method, const std::string& prefix,
                             Handler handler) {
  impl_->routes.push_back({method, prefix, true, std::move(handler), nullptr, "", nullptr});
}

void HttpServer::SetGate(Gate gate) { impl_->gate = std::move(gate); }

void HttpServer::RouteStream(const std::string& path, StreamHandler handler) {
  impl_->routes.push_back({"GET", path, false, nullptr, std::move(handler), "", nullptr});
}

void HttpServer::RouteUpgrade(const std::string& method, const std::string& path,
                              const std::string& protocol, UpgradeHandler handler) {
  impl_->routes.push_back({method, path, false, nullptr, nullptr, protocol, std::move(handler)});
}

Status HttpServer::ListenUnix(const std::string& path, unsigned mode) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return Error(ErrorCode::kInvalidArgument, "socket path too long: " + path);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Error(ErrorCode::kConflict, path + " exists and is not a socket");
    }
    // A live server answers a connect; a stale file from a crash does not.
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    bool live = ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(probe);
    if (live) return Error(ErrorCode::kConflict, "a server already listens on " + path);
    ::unlink(path.c_str());
  }
  boost::system::error_code ec;
  // Created with a tight umask so the socket is never reachable by others, even for a moment.
  mode_t old_umask = ::umask(0177);
  impl_->acceptor = std::make_unique<Local::acceptor>(impl_->io);
  impl_->acceptor->open(Local(), ec);
  if (!ec) impl_->acceptor->bind(Local::endpoint(path), ec);
  ::umask(old_umask);
  if (!ec) impl_->acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error(ErrorCode::kIo, "cannot listen on " + path + ": " + ec.message());
  if (::chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) {
    return Error::FromErrno(errno, "chmod " + path);
  }
  impl_->socket_path = path;
  const int fd = impl_->acceptor->native_handle();
  (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);  // Serve polls, then accepts
  impl_->listeners.push_back({fd, UniqueFd(), false, nullptr});
  return Ok();
}

Result<uint16_t> HttpServer::ListenTcp(const std::string& host, uint16_t port,
                                       std::shared_ptr<const TlsContext> tls) {
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    addr_len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    addr_len = sizeof *v6;
  } else {
    return Error(ErrorCode::kInvalidArgument, "not a numeric IP address: " + host);
  }
  const std::string where = host + ":" + std::to_string(port);
  UniqueFd fd(::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Error::FromErrno(errno, "socket for " + where);
  const int on = 1;
  // A restarted server binds again at once (its old connections may linger in TIME_WAIT); an
  // IPv6 address means that address only, not the IPv4 ones too.
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (addr.ss_family == AF_INET6) {
    (void)::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), addr_len) != 0 ||
      ::listen(fd.get(), SOMAXCONN) != 0) {
    return Error::FromErrno(errno, "cannot listen on " + where);
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    return Error::FromErrno(errno, "getsockname for " + where);
  }
  const uint16_t bound_port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  const int raw = fd.get();
  impl_->listeners.push_back({raw, std::move(fd), true, std::move(tls)});
  return bound_port;
}

namespace {

// "ip:port" of a TCP peer ("[ip]:port" for IPv6).
std::string PeerAddress(const sockaddr_storage& addr) {
  char ip[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(v4->sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof ip);
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(v6->sin6_port));
  }
  return "";
}

}  // namespace

void HttpServer::Serve() {
  const std::string busy =
      ClosingReply(503, "Service Unavailable", RenderToolError("server-busy", kBusyConnections));
  // Every listener and the wake pipe, waited on together.
  std::vector<pollfd> waits;
  waits.push_back({impl_->wake_read.get(), POLLIN, 0});
  for (const auto& l : impl_->listeners) waits.push_back({l.fd, POLLIN, 0});
  while (!stopping_.load()) {
    for (auto& w : waits) w.revents = 0;
    if (::poll(waits.data(), waits.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (stopping_.load() || waits[0].revents != 0) break;
    bool broken = false;
    for (size_t i = 1; i < waits.size() && !stopping_.load(); ++i) {
      if (waits[i].revents == 0) continue;
      const Impl::Listener& listener = impl_->listeners[i - 1];
      sockaddr_storage peer{};
      socklen_t peer_len = sizeof peer;
      // Non-blocking, like every read and write of the connection (connection.h).
      UniqueFd conn(::accept4(listener.fd, reinterpret_cast<sockaddr*>(&peer), &peer_len,
                              SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (stopping_.load()) break;
      if (!conn.valid()) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED ||
            errno == EPROTO) {
          continue;
        }
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors or memory for now: connections wait in the backlog meanwhile.
          ::poll(nullptr, 0, 50);
          continue;
        }
        broken = true;  // a listening socket was shut down (Stop) or broke
        break;
      }
      const int fd = conn.get();
      // Refused at once, not queued: the reply fits in an empty socket buffer, so it never
      // blocks. A TLS client gets no reply (it would take a handshake): the connection closes.
      auto refuse = [&] {
        if (!listener.tls) (void)::send(fd, busy.data(), busy.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      };
      if (!impl_->Admit(fd)) {
        refuse();
        continue;
      }
      std::string remote = listener.tcp ? PeerAddress(peer) : "";
      if (listener.tcp) {
        // A reply goes out in several writes (head, body; TLS records): without this, Nagle's
        // algorithm holds the last one for the client's delayed ACK (~40 ms a request).
        const int on = 1;
        (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      }
      // Detached: a long-running server must not collect finished threads; Serve waits for the
      // count of active ones to reach zero instead.
      try {
        std::thread([this, fd, &listener, remote = std::move(remote)]() {
          UniqueFd owned(fd);
          impl_->ServeConnection(fd, listener, remote, stopping_);
          impl_->Leave(fd);
          ::shutdown(fd, SHUT_RDWR);
        }).detach();
        (void)conn.release();  // the thread owns it now
      } catch (const std::system_error&) {
        // No thread to be had (a resource limit): the same answer as a full server.
        impl_->Leave(fd);
        refuse();
      }
    }
    if (broken) break;
  }
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->idle.wait(lock, [this] { return impl_->active == 0; });
}

void HttpServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (impl_->wake_write.valid()) (void)!::write(impl_->wake_write.get(), "x", 1);
  for (const auto& l : impl_->listeners) ::shutdown(l.fd, SHUT_RDWR);
  // Idle keep-alive connections wake from their read (a TLS one too: its socket ends); a
  // request being handled still gets its reply written (only the read side is shut).
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (int fd : impl_->live_fds) ::shutdown(fd, SHUT_RD);
}

}  // namespace sandrun::api

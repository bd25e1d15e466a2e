#include "runner/api/http_server.h"

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
#include <thread>

#include "sandbox/base/strings.h"

namespace sandrun::api {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Local = asio::local::stream_protocol;

constexpr size_t kMaxBody = 8u << 20;  // a tool call is at most 4 MiB

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

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
  return HttpReply{status, "application/json", std::move(body)};
}

struct HttpServer::Impl {
  struct RouteEntry {
    std::string method;
    std::string path;
    bool prefix = false;
    Handler handler;
    StreamHandler stream;
  };
  asio::io_context io;
  std::unique_ptr<Local::acceptor> acceptor;
  std::vector<RouteEntry> routes;
  std::mutex mu;
  std::set<int> live_fds;  // guarded by mu
  int active = 0;          // connection threads running, guarded by mu
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
};

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {}

HttpServer::~HttpServer() {
  Stop();
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    impl_->idle.wait(lock, [this] { return impl_->active == 0; });
  }
  if (!impl_->socket_path.empty()) ::unlink(impl_->socket_path.c_str());
}

void HttpServer::Route(const std::string& method, const std::string& path, Handler handler) {
  impl_->routes.push_back({method, path, false, std::move(handler), nullptr});
}

void HttpServer::RoutePrefix(const std::string& method, const std::string& prefix,
                             Handler handler) {
  impl_->routes.push_back({method, prefix, true, std::move(handler), nullptr});
}

void HttpServer::RouteStream(const std::string& path, StreamHandler handler) {
  impl_->routes.push_back({"GET", path, false, nullptr, std::move(handler)});
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
  return Ok();
}

void HttpServer::Serve() {
  while (!stopping_.load()) {
    Local::socket socket(impl_->io);
    boost::system::error_code ec;
    impl_->acceptor->accept(socket, ec);
    if (ec || stopping_.load()) break;
    int fd = socket.native_handle();
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      impl_->live_fds.insert(fd);
      ++impl_->active;
    }
    // Detached: a long-running server must not collect finished threads; Serve waits for the
    // count of active ones to reach zero instead.
    std::thread([this, socket = std::move(socket), fd]() mutable {
      ucred cred{};
      socklen_t len = sizeof cred;
      uid_t uid = static_cast<uid_t>(-1);
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) uid = cred.uid;
      beast::flat_buffer buffer;
      for (;;) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(kMaxBody);
        boost::system::error_code rec;
        http::read(socket, buffer, parser, rec);
        if (rec) break;
        auto& req = parser.get();
        HttpRequestInfo info;
        info.method = std::string(req.method_string());
        info.target = std::string(req.target());
        info.body = std::move(req.body());
        info.peer_uid = uid;
        for (const auto& field : req) {
          info.headers[Lower(std::string(field.name_string()))] = std::string(field.value());
        }
        ParseTarget(info);
        bool wrong_method = false;
        const auto* route = impl_->Find(info.method, info.path, &wrong_method);
        if (route != nullptr && route->stream) {
          http::response<http::empty_body> head{http::status::ok, req.version()};
          head.set(http::field::content_type, "text/event-stream");
          head.set(http::field::cache_control, "no-cache");
          head.keep_alive(false);
          http::response_serializer<http::empty_body> sr{head};
          boost::system::error_code wec;
          http::write_header(socket, sr, wec);
          if (wec) break;
          EventWriter writer = [&socket](const std::string& event, const std::string& data) {
            std::string frame = "event: " + event + "\n";
            size_t start = 0;
            for (size_t nl; (nl = data.find('\n', start)) != std::string::npos; start = nl + 1) {
              frame += "data: " + data.substr(start, nl - start) + "\n";
            }
            frame += "data: " + data.substr(start) + "\n\n";
            boost::system::error_code e;
            asio::write(socket, asio::buffer(frame), e);
            return !e;
          };
          route->stream(info, writer, stopping_);
          break;
        }
        HttpReply reply;
        if (route != nullptr) {
          reply = route->handler(info);
        } else {
          reply = JsonReply(wrong_method ? 405 : 404,
                            std::string(R"({"error":{"code":")") +
                                (wrong_method ? "method-not-allowed" : "not-found") +
                                R"(","message":"no route for )" + info.method + " " + info.path +
                                "\"}}");
        }
        http::response<http::string_body> res{static_cast<http::status>(reply.status),
                                              req.version()};
        res.set(http::field::content_type, reply.content_type);
        res.set(http::field::server, "sandrun");
        res.body() = std::move(reply.body);
        res.keep_alive(req.keep_alive() && !stopping_.load());
        res.prepare_payload();
        boost::system::error_code wec;
        http::write(socket, res, wec);
        if (wec || !res.keep_alive()) break;
      }
      {
        // Forget the fd before closing it, so Stop never shuts down a reused descriptor.
        std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->live_fds.erase(fd);
      }
      boost::system::error_code ignored;
      socket.shutdown(Local::socket::shutdown_both, ignored);
      socket.close(ignored);
      std::lock_guard<std::mutex> lock(impl_->mu);
      if (--impl_->active == 0) impl_->idle.notify_all();
    }).detach();
  }
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->idle.wait(lock, [this] { return impl_->active == 0; });
}

void HttpServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (impl_->acceptor) ::shutdown(impl_->acceptor->native_handle(), SHUT_RDWR);
  // Idle keep-alive connections wake from their read; a request being handled still gets its
  // reply written (only the read side is shut).
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (int fd : impl_->live_fds) ::shutdown(fd, SHUT_RD);
}

}  // namespace sandrun::api

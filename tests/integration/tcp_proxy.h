// A loopback TCP proxy to the local engine's unix socket, for tests that need a tcp:// engine
// endpoint (as a remote engine has): the client then has no host pid it could map, and the
// runner treats the engine as remote. One thread per connection copies bytes both ways until
// both sides are done (hijacked exec streams half-close); the destructor ends everything.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sandrun::testing {

class TcpProxy {
 public:
  explicit TcpProxy(std::string unix_path = "/var/run/docker.sock")
      : unix_path_(std::move(unix_path)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~TcpProxy() {
    stop_ = true;
    if (listener_ >= 0) ::shutdown(listener_, SHUT_RDWR);
    if (acceptor_.joinable()) acceptor_.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : pipes_) t.join();
    for (int fd : fds_) ::close(fd);
    if (listener_ >= 0) ::close(listener_);
  }
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }  // 0: the proxy could not listen

 private:
  void Accept() {
    while (!stop_) {
      int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) return;
      int engine = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      unix_path_.copy(addr.sun_path, sizeof addr.sun_path - 1);
      if (engine < 0 || ::connect(engine, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(client);
        if (engine >= 0) ::close(engine);
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      fds_.push_back(client);
      fds_.push_back(engine);
      pipes_.emplace_back([client, engine] { Pipe(client, engine); });
    }
  }

  // Copies both ways; a side's EOF is passed on as a half-close; ends when both are done.
  static void Pipe(int a, int b) {
    bool a_open = true, b_open = true;
    char buf[65536];
    while (a_open || b_open) {
      pollfd fds[2] = {{a, static_cast<short>(a_open ? POLLIN : 0), 0},
                       {b, static_cast<short>(b_open ? POLLIN : 0), 0}};
      if (::poll(fds, 2, -1) < 0) return;
      for (int i = 0; i < 2; ++i) {
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const int from = i == 0 ? a : b, to = i == 0 ? b : a;
        ssize_t n = ::read(from, buf, sizeof buf);
        if (n <= 0) {
          (i == 0 ? a_open : b_open) = false;
          ::shutdown(to, SHUT_WR);
          if (n < 0) return;
          continue;
        }
        for (ssize_t off = 0; off < n;) {
          ssize_t w = ::write(to, buf + off, static_cast<size_t>(n - off));
          if (w <= 0) return;
          off += w;
        }
      }
    }
  }

  std::string unix_path_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> pipes_;
};

}  // namespace sandrun::testing

// A raw client for `sandrun serve`'s unix socket, for tests that must send partial or malformed
// requests (a slow client, a flood, a body that never comes). Every wait has a deadline.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "sandbox/os/unique_fd.h"

namespace sandrun::testing {

class RawHttpClient {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to `socket_path`; false if the connection failed.
  bool Connect(const std::string& socket_path) {
    fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    socket_path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    return fd_.valid() &&
           ::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }

  // Sends all of `bytes`; false once the server closed its side.
  bool Send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::send(fd_.get(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads until `text` has arrived (true), or until the server closes or `timeout` passes
  // (false). What was read stays in received().
  bool ReadUntil(const std::string& text, std::chrono::milliseconds timeout) {
    return Read(timeout, [&] { return received_.find(text) != std::string::npos; });
  }

  // Reads one whole response (headers and Content-Length body); true when it arrived.
  bool ReadResponse(std::chrono::milliseconds timeout) {
    return Read(timeout, [&] {
      size_t end = received_.find("\r\n\r\n");
      if (end == std::string::npos) return false;
      size_t cl = received_.find("Content-Length: ");
      if (cl == std::string::npos || cl > end) return true;
      size_t length = std::stoul(received_.substr(cl + 16));
      return received_.size() >= end + 4 + length;
    });
  }

  // Waits for the server to close the connection (true), reading whatever comes first.
  bool WaitClosed(std::chrono::milliseconds timeout) {
    return Read(timeout, [&] { return closed_; });
  }

  const std::string& received() const { return received_; }
  void Clear() { received_.clear(); }
  bool closed() const { return closed_; }
  void Close() { fd_.reset(); }
  int fd() const { return fd_.get(); }

 private:
  // Reads until `done()` (true), or the end of the stream or the timeout before it (false).
  template <typename Done>
  bool Read(std::chrono::milliseconds timeout, Done done) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
      if (done()) return true;
      if (closed_) return false;
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[65536];
      ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;  // the end of the stream, or a reset: either way the server let go
        continue;
      }
      received_.append(buf, static_cast<size_t>(n));
    }
  }

  UniqueFd fd_;
  std::string received_;
  bool closed_ = false;
};

}  // namespace sandrun::testing

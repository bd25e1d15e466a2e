// One accepted connection of the HTTP server, plain (a unix or TCP socket) or TLS (OpenSSL on
// the same non-blocking socket), for everything that reads or writes it: Beast's parser and
// serializer (through the server's DeadlineStream), the event-stream writer and an upgraded
// connection's handler (the exec stream reads in one thread and writes in another).
//
// Every operation is non-blocking and waits (poll) outside any lock, under a deadline: a peer
// that stalls gets kTimeout instead of holding a thread. An SSL object is not safe for
// concurrent SSL_read/SSL_write, so each TLS call holds the connection's mutex for the call only
// (never while waiting), which lets a reader and a writer share one connection.
//
// The socket itself stays owned by the server (it shuts it down on Stop: a waiting read then
// sees the end of the stream, with or without TLS). OpenSSL writes with write(2): the process
// must ignore SIGPIPE (`sandrun serve` does).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "sandbox/base/result.h"

struct ssl_st;  // OpenSSL's SSL and SSL_CTX, kept out of this header
struct ssl_ctx_st;

namespace sandrun::api {

// A server certificate and its key, loaded once (TLS 1.2 and later only). Shared by every
// connection of a listener.
class TlsContext {
 public:
  // Loads a PEM certificate chain and its private key; an unreadable or mismatched pair is an
  // error naming the file and OpenSSL's reason.
  static Result<std::shared_ptr<TlsContext>> Load(const std::string& cert_file,
                                                  const std::string& key_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  ssl_ctx_st* get() const { return ctx_; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

class Connection {
 public:
  using Clock = std::chrono::steady_clock;

  enum class Io { kOk, kEof, kTimeout, kError };
  struct IoResult {
    Io status = Io::kOk;
    size_t bytes = 0;  // with kOk
    int error = 0;     // errno with kError, when there is one
    std::string what;  // with kError: OpenSSL's reason, when there is one
  };

  // A plain connection on `fd` (not owned).
  explicit Connection(int fd);
  // A TLS server connection on `fd` (not owned); Handshake before anything else.
  Connection(int fd, const TlsContext& tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  bool tls() const { return ssl_ != nullptr; }

  // The TLS handshake, done by `deadline` (plain: nothing to do).
  IoResult Handshake(Clock::time_point deadline);
  // Reads what is there (at least one byte) by `deadline`: kOk with the count, kEof at the end
  // of the stream.
  IoResult ReadSome(void* buf, size_t size, Clock::time_point deadline);
  // Writes some of `data` (at least one byte) by `deadline`.
  IoResult WriteSome(const void* data, size_t size, Clock::time_point deadline);
  // Writes all of `data` by `deadline`.
  IoResult WriteAll(std::string_view data, Clock::time_point deadline);
  // Waits until a byte (or the end of the stream) can be read; false at `deadline`. A TLS
  // connection may have decrypted bytes already buffered: those count.
  bool WaitReadable(Clock::time_point deadline);

 private:
  enum class Want { kNone, kRead, kWrite };
  // One non-blocking attempt: kOk with bytes, or `*want` set to what to wait for.
  IoResult TryRead(void* buf, size_t size, Want* want);
  IoResult TryWrite(const void* data, size_t size, Want* want);
  IoResult TryHandshake(Want* want);
  // One TLS call's outcome (under mu_): `ret` from SSL_read/SSL_write/SSL_do_handshake.
  IoResult TlsOutcome(int ret, Want* want);
  // poll() for `want` until `deadline`; false at the deadline or on a poll error.
  bool Wait(Want want, Clock::time_point deadline);

  const int fd_;
  std::mutex mu_;  // guards ssl_'s state across a reader and a writer thread
  ssl_st* ssl_ = nullptr;
  // The TLS session failed (or never got its state): no close_notify on it. Guarded by mu_.
  bool broken_ = false;
};

}  // namespace sandrun::api

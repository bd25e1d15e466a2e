#include "runner/api/connection.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace sandrun::api {
namespace {

// OpenSSL's reasons for the last failure of this thread, and the queue cleared.
std::string TakeSslErrors() {
  std::string out;
  for (unsigned long e; (e = ERR_get_error()) != 0;) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no reason given" : out;
}

// A key file with a passphrase must fail to load, never prompt on the server's terminal.
int NoPassphrase(char*, int, int, void*) { return 0; }

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::Load(const std::string& cert_file,
                                                     const std::string& key_file) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Error(ErrorCode::kInternal, "TLS: " + TakeSslErrors());
  std::shared_ptr<TlsContext> tls(new TlsContext(ctx));
  // TLS 1.2 and 1.3 only; no renegotiation (a TLS 1.2 client could otherwise make a read need
  // a write), no tickets or session cache (no resumption: every connection is a full handshake,
  // and nothing about a session outlives its connection).
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                               SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF);
  // Forward-secret AEAD suites for TLS 1.2 (TLS 1.3's are all of that kind).
  SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20");
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  // Writes behave like send(2): a partial count, and a retry may pass the rest from elsewhere.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_default_passwd_cb(ctx, NoPassphrase);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return Error(ErrorCode::kInvalidArgument,
                 "cannot load the TLS certificate " + cert_file + ": " + TakeSslErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Error(ErrorCode::kInvalidArgument,
                 "cannot load the TLS private key " + key_file + ": " + TakeSslErrors());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return Error(ErrorCode::kInvalidArgument, "the TLS private key " + key_file +
                                                  " does not match the certificate " + cert_file +
                                                  ": " + TakeSslErrors());
  }
  return tls;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Connection::Connection(int fd) : fd_(fd) {}

Connection::Connection(int fd, const TlsContext& tls) : fd_(fd), ssl_(SSL_new(tls.get())) {
  if (ssl_ != nullptr && SSL_set_fd(ssl_, fd) == 1) {
    SSL_set_accept_state(ssl_);
  } else {
    // No memory for the connection's state: every operation fails and the connection closes.
    SSL_free(ssl_);
    ssl_ = nullptr;
    broken_ = true;
  }
}

Connection::~Connection() {
  if (ssl_ == nullptr) return;
  // A close_notify when the session is sound, without waiting: the server closes the socket
  // next whatever happens.
  if (!broken_ && SSL_is_init_finished(ssl_)) {
    ERR_clear_error();
    (void)SSL_shutdown(ssl_);
  }
  ERR_clear_error();
  SSL_free(ssl_);
}

Connection::IoResult Connection::TlsOutcome(int ret, Want* want) {
  int err = SSL_get_error(ssl_, ret);
  switch (err) {
    case SSL_ERROR_WANT_READ:
      *want = Want::kRead;
      return {};
    case SSL_ERROR_WANT_WRITE:
      *want = Want::kWrite;
      return {};
    case SSL_ERROR_ZERO_RETURN:  // close_notify, or the end of the socket (IGNORE_UNEXPECTED_EOF)
      return {Io::kEof, 0, 0, ""};
    case SSL_ERROR_SYSCALL: {
      int e = errno;
      broken_ = true;
      std::string what = TakeSslErrors();
      return {Io::kError, 0, e, "TLS: " + what};
    }
    default:
      broken_ = true;
      return {Io::kError, 0, 0, "TLS: " + TakeSslErrors()};
  }
}

Connection::IoResult Connection::TryHandshake(Want* want) {
  if (ssl_ == nullptr) return broken_ ? IoResult{Io::kError, 0, 0, "TLS: no memory"} : IoResult{};
  std::lock_guard<std::mutex> lock(mu_);
  ERR_clear_error();
  int ret = SSL_do_handshake(ssl_);
  if (ret == 1) return {};
  return TlsOutcome(ret, want);
}

Connection::IoResult Connection::TryRead(void* buf, size_t size, Want* want) {
  if (ssl_ == nullptr) {
    if (broken_) return {Io::kError, 0, 0, "TLS: no memory"};
    for (;;) {
      ssize_t n = ::recv(fd_, buf, size, MSG_DONTWAIT);
      if (n > 0) return {Io::kOk, static_cast<size_t>(n), 0, ""};
      if (n == 0) return {Io::kEof, 0, 0, ""};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        *want = Want::kRead;
        return {};
      }
      return {Io::kError, 0, errno, ""};
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ERR_clear_error();
  int ret = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(size, INT_MAX)));
  if (ret > 0) return {Io::kOk, static_cast<size_t>(ret), 0, ""};
  return TlsOutcome(ret, want);
}

Connection::IoResult Connection::TryWrite(const void* data, size_t size, Want* want) {
  if (ssl_ == nullptr) {
    if (broken_) return {Io::kError, 0, 0, "TLS: no memory"};
    for (;;) {
      ssize_t n = ::send(fd_, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n >= 0) return {Io::kOk, static_cast<size_t>(n), 0, ""};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        *want = Want::kWrite;
        return {};
      }
      return {Io::kError, 0, errno, ""};
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ERR_clear_error();
  int ret = SSL_write(ssl_, data, static_cast<int>(std::min<size_t>(size, INT_MAX)));
  if (ret > 0) return {Io::kOk, static_cast<size_t>(ret), 0, ""};
  return TlsOutcome(ret, want);
}

bool Connection::Wait(Want want, Clock::time_point deadline) {
  const short events = want == Want::kWrite ? POLLOUT : POLLIN;
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd_, events, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (ready > 0) return true;  // POLLHUP/POLLERR too: the next call reports them
    if (ready < 0 && errno != EINTR) return false;
  }
}

Connection::IoResult Connection::Handshake(Clock::time_point deadline) {
  for (;;) {
    Want want = Want::kNone;
    IoResult r = TryHandshake(&want);
    if (want == Want::kNone) return r;
    if (!Wait(want, deadline)) return {Io::kTimeout, 0, 0, ""};
  }
}

Connection::IoResult Connection::ReadSome(void* buf, size_t size, Clock::time_point deadline) {
  if (size == 0) return {};
  for (;;) {
    Want want = Want::kNone;
    IoResult r = TryRead(buf, size, &want);
    if (want == Want::kNone) return r;
    if (!Wait(want, deadline)) return {Io::kTimeout, 0, 0, ""};
  }
}

Connection::IoResult Connection::WriteSome(const void* data, size_t size,
                                           Clock::time_point deadline) {
  if (size == 0) return {};
  for (;;) {
    Want want = Want::kNone;
    IoResult r = TryWrite(data, size, &want);
    if (want == Want::kNone && (r.status != Io::kOk || r.bytes > 0)) return r;
    if (!Wait(want == Want::kNone ? Want::kWrite : want, deadline)) {
      return {Io::kTimeout, 0, 0, ""};
    }
  }
}

Connection::IoResult Connection::WriteAll(std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    IoResult r = WriteSome(data.data(), data.size(), deadline);
    if (r.status != Io::kOk) return r;
    data.remove_prefix(r.bytes);
  }
  return {};
}

bool Connection::WaitReadable(Clock::time_point deadline) {
  if (ssl_ != nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    if (SSL_has_pending(ssl_) == 1) return true;
  }
  return Wait(Want::kRead, deadline);
}

}  // namespace sandrun::api

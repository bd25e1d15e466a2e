// `sandrun serve --listen HOST:PORT [--tls-cert --tls-key]` through the binary (issue 14): a
// TLS listener on loopback with a self-signed certificate made here with `openssl`, spoken to by
// curl and by an OpenSSL client of this file; the server.* limits on TCP; the refusals that
// start nothing. Every TCP request carries a bearer token (`sandrun token create`), as the
// server will require. No Docker needed: commands run on the host (sandbox.mode off).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "runner/api/exec_stream.h"
#include "sandbox/os/unique_fd.h"
#include "tests/e2e/raw_http_client.h"
#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A TCP connection to 127.0.0.1:port, or an invalid fd.
UniqueFd ConnectTcp(uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fd.reset();
  return fd;
}

// A port nothing listens on right now.
uint16_t FreePort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  (void)::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  (void)::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

// Waits until the peer closes `fd` (true), reading and dropping what comes first.
bool WaitClosed(int fd, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
}

// Reads from `fd` until `text` arrived or the peer closed or `timeout` passed: what was read.
std::string ReadUntil(int fd, const std::string& text, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  std::string got;
  char buf[4096];
  while (got.find(text) == std::string::npos) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// An OpenSSL client on a non-blocking socket that verifies the server against `ca_file`, and
// pumps bytes both ways under a deadline (the exec stream's client reads while it writes).
class TlsClient {
 public:
  ~TlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  }

  bool Connect(uint16_t port, const std::string& ca_file) {
    fd_ = ConnectTcp(port);
    if (!fd_.valid()) return false;
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr) != 1) return false;
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_.get());
    SSL_set1_host(ssl_, "localhost");
    (void)::fcntl(fd_.get(), F_SETFL, O_NONBLOCK);
    auto deadline = Clock::now() + milliseconds(5000);
    for (;;) {
      int ret = SSL_connect(ssl_);
      if (ret == 1) return true;
      int err = SSL_get_error(ssl_, ret);
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) return false;
      if (!WaitFor(err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, deadline)) return false;
    }
  }

  // Queues bytes for the server.
  void Send(const std::string& bytes) { out_ += bytes; }

  // Writes what is queued and reads, until `done()` (true) or the server closed or the timeout
  // passed (false).
  template <typename Done>
  bool Pump(Done done, milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    char buf[16384];
    for (;;) {
      if (done()) return true;
      if (closed_ || Clock::now() >= deadline) return false;
      bool progress = false;
      if (!out_.empty()) {
        int n =
            SSL_write(ssl_, out_.data(), static_cast<int>(std::min<size_t>(out_.size(), 16384)));
        if (n > 0) {
          out_.erase(0, static_cast<size_t>(n));
          progress = true;
        } else if (!Retry(n)) {
          closed_ = true;
        }
      }
      int n = SSL_read(ssl_, buf, sizeof buf);
      if (n > 0) {
        in_.append(buf, static_cast<size_t>(n));
        progress = true;
      } else if (!Retry(n)) {
        closed_ = true;
      }
      if (!progress && !closed_) {
        pollfd p{fd_.get(), static_cast<short>(POLLIN | (out_.empty() ? 0 : POLLOUT)), 0};
        (void)::poll(&p, 1, 20);
      }
    }
  }

  bool ReadUntil(const std::string& text, milliseconds timeout) {
    return Pump([&] { return in_.find(text) != std::string::npos; }, timeout);
  }

  std::string& in() { return in_; }
  bool closed() const { return closed_; }

 private:
  bool Retry(int ret) {
    int err = SSL_get_error(ssl_, ret);
    ERR_clear_error();
    return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE;
  }

  bool WaitFor(short events, Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd_.get(), events, 0};
    return left > 0 && ::poll(&p, 1, static_cast<int>(left)) > 0;
  }

  UniqueFd fd_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::string out_, in_;
  bool closed_ = false;
};

class TlsListener : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    std::tie(cert_, key_) = SelfSignedCert();
  }

  void TearDown() override {
    StopServer();
    SandrunHome::TearDown();
  }

  // config.json with host execution and the given server.* members; a token to send.
  void Prepare(const std::string& server_keys = "") {
    Config(R"({"sandbox": {"mode": "off"}, "server": {)" + server_keys + "}}");
    auto created = Sandrun({"token", "create", "--tenant", "t1", "--role", "admin"});
    ASSERT_EQ(created.exit_code, 0) << created.err;
    token_ = created.out.substr(0, created.out.find('\n'));
    ASSERT_FALSE(token_.empty());
  }

  // Starts `sandrun serve ARGS...`, waits for its "listening on" line (up to 10 s) and returns
  // the URL it names.
  std::string StartListening(const std::vector<std::string>& serve_args) {
    const std::string err_file = home_ + "/serve.err";
    LaunchServe(serve_args, err_file);
    const std::string marker = "sandrun: listening on ";
    for (int i = 0; i < 400; ++i) {
      std::ifstream in(err_file);
      std::stringstream text;
      text << in.rdbuf();
      std::string s = text.str();
      size_t at = s.find(marker);
      if (at != std::string::npos && s.find('\n', at) != std::string::npos) {
        std::string url = s.substr(at + marker.size(), s.find('\n', at) - at - marker.size());
        port_ = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
        return url;
      }
      if (waitpid(server_pid_, nullptr, WNOHANG) == server_pid_) {
        server_pid_ = -1;
        ADD_FAILURE() << "the server exited: " << s;
        return "";
      }
      ::poll(nullptr, 0, 25);
    }
    ADD_FAILURE() << "no \"listening on\" line";
    return "";
  }

  std::string StartTls() {
    return StartListening({"--listen", "127.0.0.1:0", "--tls-cert", cert_, "--tls-key", key_});
  }

  std::string Https(const std::string& path) {
    return "https://127.0.0.1:" + std::to_string(port_) + path;
  }

  // curl with the CA and the token, and `args`.
  ProcessResult Curl(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        "/usr/bin/curl", "-sS", "--max-time", "10",
        "--cacert",      cert_, "-H",         "Authorization: Bearer " + token_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv);
  }

  // A fresh https GET /healthz answered 200.
  bool Healthy() {
    auto r = Curl({"-f", Https("/healthz")});
    return r.exit_code == 0 && r.out.find("\"ok\":true") != std::string::npos;
  }

  // Retries Healthy() for up to 5 s: a freed slot comes back when the server sees the close.
  bool HealthySoon() {
    for (int i = 0; i < 100; ++i) {
      if (Healthy()) return true;
      ::poll(nullptr, 0, 50);
    }
    return false;
  }

  // Runs `sandrun serve ARGS...` that must refuse: its result, after it exited (10 s at most).
  ProcessResult RefusedServe(const std::vector<std::string>& serve_args) {
    std::vector<std::string> args = {"serve"};
    args.insert(args.end(), serve_args.begin(), serve_args.end());
    return Sandrun(args);
  }

  std::string cert_, key_, token_;
  uint16_t port_ = 0;
};

// Old code: `serve` had no --listen; nothing answered on TCP.
TEST_F(TlsListener, HttpsHealthzWithCurlKeepsTheConnectionAlive) {
  Prepare();
  std::string url = StartTls();
  EXPECT_EQ(url, "https://127.0.0.1:" + std::to_string(port_));
  auto r = Curl({"-v", Https("/healthz"), Https("/healthz")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"ok\":true,\"sessions\":0}{\"ok\":true,\"sessions\":0}") << r.out;
  EXPECT_NE(r.err.find("Re-using existing connection"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SSL certificate verify ok"), std::string::npos) << r.err;
  // TLS 1.2 works too (its suites are the forward-secret AEAD ones); TLS 1.1 does not.
  auto v12 = Curl({"-f", "--tlsv1.2", "--tls-max", "1.2", "-v", Https("/healthz")});
  EXPECT_EQ(v12.exit_code, 0) << v12.err;
  EXPECT_NE(v12.err.find("TLSv1.2"), std::string::npos) << v12.err;
  auto v11 =
      RunProcess({"/usr/bin/openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port_),
                  "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"},
                 {}, "");
  EXPECT_NE(v11.exit_code, 0) << v11.out;
}

TEST_F(TlsListener, PlainHttpAndGarbageToTheTlsPortFailAndTheServerStaysHealthy) {
  Prepare();
  StartTls();
  auto plain = Curl({"http://127.0.0.1:" + std::to_string(port_) + "/healthz"});
  EXPECT_NE(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(plain.out.find("\"ok\""), std::string::npos) << plain.out;
  UniqueFd garbage = ConnectTcp(port_);
  ASSERT_TRUE(garbage.valid());
  const std::string junk(3000, '\x16');
  (void)::send(garbage.get(), junk.data(), junk.size(), MSG_NOSIGNAL);
  EXPECT_TRUE(WaitClosed(garbage.get(), milliseconds(5000))) << "a failed handshake closes";
  EXPECT_TRUE(Healthy());
}

// A client that connects and never sends a ClientHello holds its slot only until
// server.headerTimeoutMs; meanwhile the full server turns others away.
TEST_F(TlsListener, ASilentClientIsDroppedAtTheHeaderTimeoutAndItsSlotFreed) {
  Prepare(R"("maxConnections": 1, "headerTimeoutMs": 600)");
  StartTls();
  auto start = Clock::now();
  UniqueFd silent = ConnectTcp(port_);
  ASSERT_TRUE(silent.valid());
  EXPECT_FALSE(Healthy()) << "the only slot is the silent client's";
  EXPECT_TRUE(WaitClosed(silent.get(), milliseconds(5000)));
  double waited = SecondsSince(start);
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 3.0);
  EXPECT_TRUE(HealthySoon());
}

// max_connections counts the unix socket and TCP together; a plain loopback listener gets the
// usual 503.
TEST_F(TlsListener, PlainLoopbackListenerWorksAndMaxConnectionsRefusesOverTcp) {
  Prepare(R"("maxConnections": 2)");
  std::string url = StartListening({"--listen", "localhost:0"});
  EXPECT_EQ(url, "http://127.0.0.1:" + std::to_string(port_));
  const std::string http = "http://127.0.0.1:" + std::to_string(port_) + "/healthz";
  auto ok = Curl({"-f", http});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "{\"ok\":true,\"sessions\":0}");

  UniqueFd over_tcp = ConnectTcp(port_);
  ASSERT_TRUE(over_tcp.valid());
  const std::string get =
      "GET /healthz HTTP/1.1\r\nHost: sandrun\r\nAuthorization: Bearer " + token_ + "\r\n\r\n";
  ASSERT_EQ(::send(over_tcp.get(), get.data(), get.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(get.size()));
  std::string reply = ReadUntil(over_tcp.get(), "}", milliseconds(5000));
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;  // kept alive: it holds a slot
  // The second slot, through the unix socket. The first curl's slot may not be free yet (the
  // server sees its close a moment later): then this one is refused, and tried again.
  auto over_unix = std::make_unique<RawHttpClient>();
  for (int i = 0; i < 100; ++i) {
    over_unix = std::make_unique<RawHttpClient>();
    ASSERT_TRUE(over_unix->Connect(home_ + "/sandrun.sock"));
    ASSERT_TRUE(over_unix->Send("GET /healthz HTTP/1.1\r\nHost: sandrun\r\n\r\n"));
    ASSERT_TRUE(over_unix->ReadResponse(milliseconds(5000))) << over_unix->received();
    if (over_unix->received().rfind("HTTP/1.1 200", 0) == 0) break;
    EXPECT_NE(over_unix->received().find("server-busy"), std::string::npos)
        << over_unix->received();
    ::poll(nullptr, 0, 50);
  }
  ASSERT_EQ(over_unix->received().rfind("HTTP/1.1 200", 0), 0u) << over_unix->received();
  auto busy = Curl({"-i", http});
  EXPECT_NE(busy.out.find("HTTP/1.1 503"), std::string::npos) << busy.out << busy.err;
  EXPECT_NE(busy.out.find("server-busy"), std::string::npos) << busy.out;
  over_unix->Close();
  over_tcp.reset();
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    served = Curl({"-f", http}).exit_code == 0;
    if (!served) ::poll(nullptr, 0, 50);
  }
  EXPECT_TRUE(served);
}

TEST_F(TlsListener, NonLoopbackWithoutTlsIsRefusedAndNothingListens) {
  Prepare();
  const uint16_t port = FreePort();
  for (std::string host : {"0.0.0.0", "[::]", "192.0.2.1"}) {
    const std::string where = host + ":" + std::to_string(port);
    auto r = RefusedServe({"--listen", where});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "sandrun: --listen " + where +
                         " is not a loopback address: it needs --tls-cert and --tls-key\n");
    EXPECT_FALSE(ConnectTcp(port).valid()) << "something listens on " << port;
    EXPECT_FALSE(std::filesystem::exists(home_ + "/sandrun.sock")) << "the server started";
  }
  // Names are not looked up; a missing port is an error.
  for (std::string bad : {"example.com:8443", "127.0.0.1", "[::1]", "127.0.0.1:70000"}) {
    auto r = RefusedServe({"--listen", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--listen " + bad), std::string::npos) << r.err;
  }
}

TEST_F(TlsListener, CertificateAndKeyProblemsAreRefusedAtStart) {
  Prepare();
  const std::string port = std::to_string(FreePort());
  const std::string listen = "127.0.0.1:" + port;
  auto cert_only = RefusedServe({"--listen", listen, "--tls-cert", cert_});
  EXPECT_EQ(cert_only.exit_code, 2);
  EXPECT_EQ(cert_only.err, "sandrun: --tls-cert needs --tls-key\n");
  auto key_only = RefusedServe({"--listen", listen, "--tls-key", key_});
  EXPECT_EQ(key_only.exit_code, 2);
  EXPECT_EQ(key_only.err, "sandrun: --tls-key needs --tls-cert\n");

  const std::string garbage = home_ + "/garbage.pem";
  std::ofstream(garbage) << "-----BEGIN CERTIFICATE-----\nnot base64 at all\n";
  auto bad_cert = RefusedServe({"--listen", listen, "--tls-cert", garbage, "--tls-key", key_});
  EXPECT_EQ(bad_cert.exit_code, 2);
  EXPECT_NE(bad_cert.err.find("cannot load the TLS certificate " + garbage), std::string::npos)
      << bad_cert.err;
  auto missing =
      RefusedServe({"--listen", listen, "--tls-cert", home_ + "/none.pem", "--tls-key", key_});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot load the TLS certificate"), std::string::npos) << missing.err;
  // A key of another certificate.
  const std::string other_key = home_ + "/other-key.pem";
  ASSERT_EQ(RunProcess({"/usr/bin/openssl", "genrsa", "-out", other_key, "2048"}).exit_code, 0);
  auto mismatch = RefusedServe({"--listen", listen, "--tls-cert", cert_, "--tls-key", other_key});
  EXPECT_EQ(mismatch.exit_code, 2);
  EXPECT_NE(mismatch.err.find("cannot load the TLS private key " + other_key), std::string::npos)
      << mismatch.err;
  EXPECT_NE(mismatch.err.find("key values mismatch"), std::string::npos) << mismatch.err;
  for (const auto* r : {&bad_cert, &missing, &mismatch}) {
    EXPECT_EQ(r->err.find("serving on"), std::string::npos) << r->err;
  }
  EXPECT_FALSE(ConnectTcp(static_cast<uint16_t>(std::stoi(port))).valid());
  EXPECT_FALSE(std::filesystem::exists(home_ + "/sandrun.sock"));
}

// The exec stream over TLS: the server reads stdin frames in one thread while it writes the
// command's output in another, on one TLS session.
TEST_F(TlsListener, ExecStreamOverTlsReadsAndWritesConcurrently) {
  Prepare();
  StartTls();
  TlsClient client;
  ASSERT_TRUE(client.Connect(port_, cert_));
  const std::string body = R"({"tool":"exec","command":"cat"})";
  client.Send("POST /v1/exec HTTP/1.1\r\nHost: sandrun\r\nAuthorization: Bearer " + token_ +
              "\r\nUpgrade: " + api::kExecUpgrade +
              "\r\nConnection: Upgrade\r\nContent-Type: application/json\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_TRUE(client.ReadUntil("\r\n\r\n", milliseconds(10000))) << client.in();
  ASSERT_EQ(client.in().rfind("HTTP/1.1 101", 0), 0u) << client.in();
  client.in().erase(0, client.in().find("\r\n\r\n") + 4);

  // 4 MiB in 64 KiB frames, more than the pipes and socket buffers hold: the server must keep
  // reading stdin while cat's output comes back, or both sides stall.
  std::string sent;
  for (int i = 0; i < 64; ++i) {
    std::string chunk(api::kMaxClientFrame, static_cast<char>('a' + i % 26));
    chunk[0] = static_cast<char>('0' + i % 10);
    sent += chunk;
    client.Send(api::Frame('I', chunk));
  }
  client.Send(api::Frame('E', ""));
  api::FrameReader frames(api::kMaxServerFrame);
  std::string out, report;
  bool finished = client.Pump(
      [&] {
        frames.Feed(client.in());
        client.in().clear();
        while (auto f = frames.Next()) {
          if (f->type == 'O') out += f->payload;
          if (f->type == 'X') report = f->payload;
        }
        return !report.empty();
      },
      milliseconds(60000));
  ASSERT_TRUE(finished) << "closed: " << client.closed() << ", output " << out.size();
  EXPECT_EQ(out.size(), sent.size());
  EXPECT_TRUE(out == sent) << "the output differs from the input";
  auto parsed = api::ExecReportFromJson(report);
  ASSERT_TRUE(parsed) << report;
  EXPECT_EQ(parsed->exit_code, 0) << report;
}

// The event stream's writer works over TLS: the ready event, then a background session's.
TEST_F(TlsListener, EventStreamOverTls) {
  Prepare();
  StartTls();
  TlsClient events;
  ASSERT_TRUE(events.Connect(port_, cert_));
  events.Send("GET /v1/events HTTP/1.1\r\nHost: sandrun\r\nAuthorization: Bearer " + token_ +
              "\r\n\r\n");
  ASSERT_TRUE(events.ReadUntil("event: ready", milliseconds(5000))) << events.in();
  EXPECT_EQ(events.in().rfind("HTTP/1.1 200", 0), 0u) << events.in();
  EXPECT_NE(events.in().find("text/event-stream"), std::string::npos) << events.in();
  auto r = Curl({"-f", "-H", "Content-Type: application/json", "--data",
                 R"({"tool":"exec","command":"echo over-tls","background":true})",
                 Https("/v1/tools/exec")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("running"), std::string::npos) << r.out;
  EXPECT_TRUE(events.ReadUntil("event: exec.finished", milliseconds(10000))) << events.in();
}

// Stop() wakes an idle keep-alive TLS connection (its socket's read side is shut): SIGTERM
// does not wait for server.idleTimeoutMs.
TEST_F(TlsListener, ShutdownDoesNotWaitForAnIdleTlsConnection) {
  Prepare(R"("idleTimeoutMs": 60000)");
  StartTls();
  TlsClient idle;
  ASSERT_TRUE(idle.Connect(port_, cert_));
  idle.Send("GET /healthz HTTP/1.1\r\nHost: sandrun\r\nAuthorization: Bearer " + token_ +
            "\r\n\r\n");
  ASSERT_TRUE(idle.ReadUntil("\"ok\":true", milliseconds(5000))) << idle.in();
  auto start = Clock::now();
  StopServer();  // exits 0
  EXPECT_LT(SecondsSince(start), 5.0);
  EXPECT_FALSE(idle.Pump([] { return false; }, milliseconds(2000)));
  EXPECT_TRUE(idle.closed()) << "the idle connection was closed";
}

}  // namespace
}  // namespace sandrun::testing

// Endpoint parsing, and transport faults that a real engine cannot produce (a daemon that hangs,
// answers garbage or drops the connection), served by a tiny fake on a unix socket.
#include "sandbox/docker/transport.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "sandbox/docker/client.h"

namespace sandrun::docker {
namespace {

TEST(EndpointTest, DefaultsToTheLocalSocket) {
  auto ep = ParseEndpoint("", "", "");
  ASSERT_TRUE(ep);
  EXPECT_EQ(ep->kind, Endpoint::Kind::kUnix);
  EXPECT_EQ(ep->socket_path, "/var/run/docker.sock");
  EXPECT_EQ(ep->ToString(), "unix:///var/run/docker.sock");
}

TEST(EndpointTest, ParsesUnixAndTcp) {
  auto unix_ep = ParseEndpoint("unix:///run/user/1000/docker.sock", "", "");
  ASSERT_TRUE(unix_ep);
  EXPECT_EQ(unix_ep->socket_path, "/run/user/1000/docker.sock");
  auto tcp = ParseEndpoint("tcp://10.1.2.3:2375", "", "");
  ASSERT_TRUE(tcp);
  EXPECT_EQ(tcp->kind, Endpoint::Kind::kTcp);
  EXPECT_EQ(tcp->host, "10.1.2.3");
  EXPECT_EQ(tcp->port, 2375);
  EXPECT_FALSE(tcp->tls);
}

TEST(EndpointTest, TlsFromEnvironmentValues) {
  auto ep = ParseEndpoint("tcp://docker.example:2376", "1", "/certs");
  ASSERT_TRUE(ep);
  EXPECT_TRUE(ep->tls);
  EXPECT_TRUE(ep->tls_verify);
  EXPECT_EQ(ep->cert_dir, "/certs");
  auto default_port = ParseEndpoint("tcp://docker.example", "1", "/certs");
  ASSERT_TRUE(default_port);
  EXPECT_EQ(default_port->port, 2376);
}

TEST(EndpointTest, RejectsBadValues) {
  for (const char* bad : {"ssh://user@host", "unix://relative.sock", "tcp://:2375", "tcp://h:0",
                          "tcp://h:99999", "tcp://h:12ab", "npipe:////./pipe/docker"}) {
    auto ep = ParseEndpoint(bad, "", "");
    ASSERT_FALSE(ep) << bad;
    EXPECT_EQ(ep.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(ep.error().message.find("DOCKER_HOST"), std::string::npos);
  }
}

// Serves one behaviour per accepted connection on a unix socket.
class FakeDaemon {
 public:
  explicit FakeDaemon(std::function<void(int fd)> behaviour) : behaviour_(std::move(behaviour)) {
    dir_ = std::filesystem::temp_directory_path() /
           ("sandrun-fake-" + std::to_string(getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "docker.sock").string();
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path_.copy(addr.sun_path, sizeof addr.sun_path - 1);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(listen_fd_, 8), 0);
    thread_ = std::thread([this] {
      for (;;) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0 || stop_) {
          if (fd >= 0) close(fd);
          return;
        }
        behaviour_(fd);
        close(fd);
      }
    });
  }
  ~FakeDaemon() {
    stop_ = true;
    shutdown(listen_fd_, SHUT_RDWR);
    close(listen_fd_);
    thread_.join();
    std::filesystem::remove_all(dir_);
  }
  Endpoint endpoint() const {
    Endpoint ep;
    ep.socket_path = path_;
    return ep;
  }

 private:
  static inline std::atomic<int> counter_{0};
  std::function<void(int)> behaviour_;
  std::filesystem::path dir_;
  std::string path_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void ReadRequestHead(int fd) {
  std::string got;
  char buf[4096];
  while (got.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return;
    got.append(buf, static_cast<size_t>(n));
  }
}

void WriteAll(int fd, const std::string& s) {
  ssize_t n = write(fd, s.data(), s.size());
  (void)n;
}

HttpRequest Ping(std::chrono::milliseconds deadline) {
  HttpRequest req;
  req.target = "/_ping";
  req.options.deadline = Deadline::After(deadline);
  return req;
}

TEST(TransportFaultTest, NothingListeningIsUnreachableAndFast) {
  Endpoint ep;
  ep.socket_path = "/tmp/sandrun-no-such-dir/docker.sock";
  auto t = CurlTransport::Create(ep);
  ASSERT_TRUE(t);
  auto start = std::chrono::steady_clock::now();
  auto resp = (*t)->Send(Ping(std::chrono::seconds(10)));
  ASSERT_FALSE(resp);
  EXPECT_EQ(resp.error().code, ErrorCode::kDockerUnreachable);
  EXPECT_NE(resp.error().message.find("/tmp/sandrun-no-such-dir/docker.sock"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(TransportFaultTest, RefusedTcpPortIsUnreachable) {
  auto t = CurlTransport::Create(*ParseEndpoint("tcp://127.0.0.1:1", "", ""));
  ASSERT_TRUE(t);
  auto resp = (*t)->Send(Ping(std::chrono::seconds(10)));
  ASSERT_FALSE(resp);
  EXPECT_EQ(resp.error().code, ErrorCode::kDockerUnreachable);
}

TEST(TransportFaultTest, HangingDaemonHitsTheDeadline) {
  std::atomic<bool> release{false};
  FakeDaemon daemon([&](int fd) {
    ReadRequestHead(fd);
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  auto t = CurlTransport::Create(daemon.endpoint());
  auto start = std::chrono::steady_clock::now();
  auto resp = (*t)->Send(Ping(std::chrono::milliseconds(300)));
  auto took = std::chrono::steady_clock::now() - start;
  release = true;
  ASSERT_FALSE(resp);
  EXPECT_EQ(resp.error().code, ErrorCode::kTimeout) << resp.error().ToString();
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST(TransportFaultTest, CancellationStopsAHangingCall) {
  std::atomic<bool> release{false};
  FakeDaemon daemon([&](int fd) {
    ReadRequestHead(fd);
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  auto t = CurlTransport::Create(daemon.endpoint());
  CancelToken token;
  HttpRequest req = Ping(std::chrono::seconds(30));
  req.options.cancel = &token;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    token.Cancel();
  });
  auto start = std::chrono::steady_clock::now();
  auto resp = (*t)->Send(req);
  auto took = std::chrono::steady_clock::now() - start;
  canceller.join();
  release = true;
  ASSERT_FALSE(resp);
  EXPECT_EQ(resp.error().code, ErrorCode::kCancelled) << resp.error().ToString();
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(TransportFaultTest, GarbageAnswerIsAnErrorNotACrash) {
  FakeDaemon daemon([](int fd) {
    ReadRequestHead(fd);
    WriteAll(fd, "SSH-2.0-OpenSSH_9.2\r\n\x01\x02\x03 garbage");
  });
  auto t = CurlTransport::Create(daemon.endpoint());
  auto resp = (*t)->Send(Ping(std::chrono::seconds(5)));
  ASSERT_FALSE(resp);
  EXPECT_NE(resp.error().code, ErrorCode::kDockerUnreachable);
}

TEST(TransportFaultTest, DroppedConnectionIsAnError) {
  FakeDaemon daemon([](int fd) { ReadRequestHead(fd); });  // closes without answering
  auto t = CurlTransport::Create(daemon.endpoint());
  auto resp = (*t)->Send(Ping(std::chrono::seconds(5)));
  ASSERT_FALSE(resp);
  EXPECT_EQ(resp.error().code, ErrorCode::kIo) << resp.error().ToString();
}

TEST(TransportFaultTest, HijackErrorStatusCarriesTheEngineMessage) {
  FakeDaemon daemon([](int fd) {
    ReadRequestHead(fd);
    std::string body = R"({"message":"No such exec instance: abc"})";
    WriteAll(fd, "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  auto t = CurlTransport::Create(daemon.endpoint());
  HttpRequest req = Ping(std::chrono::seconds(5));
  req.method = "POST";
  req.target = "/v1.41/exec/abc/start";
  auto stream = (*t)->Hijack(req);
  ASSERT_FALSE(stream);
  EXPECT_EQ(stream.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(stream.error().http_status, 404);
  EXPECT_EQ(stream.error().message, "No such exec instance: abc");
}

TEST(TransportFaultTest, HijackKeepsBytesThatArriveWithTheHead) {
  FakeDaemon daemon([](int fd) {
    ReadRequestHead(fd);
    WriteAll(fd,
             "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
             "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\nearly bytes");
  });
  auto t = CurlTransport::Create(daemon.endpoint());
  HttpRequest req = Ping(std::chrono::seconds(5));
  req.method = "POST";
  auto stream = (*t)->Hijack(req);
  ASSERT_TRUE(stream) << stream.error().ToString();
  EXPECT_EQ((*stream)->content_type(), "application/vnd.docker.raw-stream");
  std::string got;
  char buf[64];
  for (;;) {
    auto n = (*stream)->Read(buf, sizeof buf, req.options);
    ASSERT_TRUE(n);
    if (*n == 0) break;
    got.append(buf, *n);
  }
  EXPECT_EQ(got, "early bytes");
}

TEST(TransportFaultTest, ClientRefusesAnEngineThatIsTooOld) {
  FakeDaemon daemon([](int fd) {
    ReadRequestHead(fd);
    std::string body = R"({"Version":"19.03.1","ApiVersion":"1.40","MinAPIVersion":"1.12"})";
    WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  auto t = CurlTransport::Create(daemon.endpoint());
  Client client(std::shared_ptr<Transport>(std::move(t).value()));
  auto api = client.ApiVersion();
  ASSERT_FALSE(api);
  EXPECT_NE(api.error().message.find("too old"), std::string::npos) << api.error().message;
}

}  // namespace
}  // namespace sandrun::docker

// `sandrun serve`'s limits through the real server on its unix socket (server.* in config.json):
// a connection flood is refused at once while an established client is still served, slow
// headers and idle keep-alive connections are closed, an oversized body gets 413 unread, and the
// bodies in flight share one budget. Event streams outlive the idle timeout. No Docker needed.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "tests/e2e/raw_http_client.h"
#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

const char kHealth[] = "GET /healthz HTTP/1.1\r\nHost: sandrun\r\n\r\n";
const char kProcessList[] = R"({"tool":"process","action":"list"})";

std::string Post(const std::string& path, size_t content_length, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: sandrun\r\nContent-Type: application/json\r\n" +
         extra + "Content-Length: " + std::to_string(content_length) + "\r\n\r\n";
}

// A process-list call padded with spaces to `size` bytes (JSON allows them).
std::string PaddedProcessList(size_t size) {
  std::string body = kProcessList;
  body.resize(size, ' ');
  return body;
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class ServerLimits : public SandrunHome {
 protected:
  void TearDown() override {
    StopServer();
    SandrunHome::TearDown();
  }

  void Serve(const std::string& server_keys) {
    Config(R"({"sandbox": {"mode": "off"}, "server": {)" + server_keys + "}}");
    StartServer();
  }

  std::string SocketPath() const { return home_ + "/sandrun.sock"; }

  std::unique_ptr<RawHttpClient> Connect() {
    auto c = std::make_unique<RawHttpClient>();
    EXPECT_TRUE(c->Connect(SocketPath()));
    return c;
  }

  // A fresh connection's GET /healthz answered 200 within 5 s.
  bool Healthy() {
    RawHttpClient c;
    return c.Connect(SocketPath()) && c.Send(kHealth) && c.ReadResponse(milliseconds(5000)) &&
           c.received().rfind("HTTP/1.1 200", 0) == 0;
  }
};

// Old code: every connection got a thread and waited; the flood got no answer at all.
TEST_F(ServerLimits, ConnectionFloodIsRefusedAtOnceWhileAnEstablishedClientIsServed) {
  Serve(R"("maxConnections": 4)");
  RawHttpClient established;
  ASSERT_TRUE(established.Connect(SocketPath()));
  ASSERT_TRUE(established.Send(kHealth));
  ASSERT_TRUE(established.ReadResponse(milliseconds(5000))) << established.received();
  EXPECT_EQ(established.received().rfind("HTTP/1.1 200", 0), 0u) << established.received();

  std::vector<std::unique_ptr<RawHttpClient>> idle;  // three more fill the four slots
  for (int i = 0; i < 3; ++i) idle.push_back(Connect());

  auto start = Clock::now();
  for (int i = 0; i < 30; ++i) {
    RawHttpClient flood;
    ASSERT_TRUE(flood.Connect(SocketPath()));
    ASSERT_TRUE(flood.ReadResponse(milliseconds(2000)))
        << "connection " << i << " over maxConnections was not refused at once";
    EXPECT_EQ(flood.received().rfind("HTTP/1.1 503", 0), 0u) << flood.received();
    EXPECT_NE(flood.received().find("server-busy"), std::string::npos) << flood.received();
    EXPECT_TRUE(flood.WaitClosed(milliseconds(2000)));
  }
  EXPECT_LT(SecondsSince(start), 5.0);

  // The CLI reports the busy server instead of quietly running the call somewhere else.
  auto cli = Sandrun({"process", "list"});
  EXPECT_EQ(cli.exit_code, 1) << cli.out << cli.err;
  EXPECT_NE(cli.out.find("server-busy"), std::string::npos) << cli.out;

  established.Clear();
  ASSERT_TRUE(established.Send(kHealth));
  ASSERT_TRUE(established.ReadResponse(milliseconds(5000))) << "the established client";
  EXPECT_EQ(established.received().rfind("HTTP/1.1 200", 0), 0u) << established.received();

  idle.clear();  // slots come back as the server sees them close
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    served = Healthy();
    if (!served) ::poll(nullptr, 0, 20);
  }
  EXPECT_TRUE(served);
}

// Old code: a half-sent request held its connection (and thread) for ever.
TEST_F(ServerLimits, SlowHeadersAreClosedAfterTheHeaderTimeout) {
  Serve(R"("headerTimeoutMs": 300)");
  auto start = Clock::now();
  RawHttpClient stalled, silent, trickle;
  ASSERT_TRUE(stalled.Connect(SocketPath()));
  ASSERT_TRUE(silent.Connect(SocketPath()));  // sends nothing at all
  ASSERT_TRUE(trickle.Connect(SocketPath()));
  ASSERT_TRUE(stalled.Send("POST /v1/tools/exec HTTP/1.1\r\nHost: sandrun\r\n"));
  ASSERT_TRUE(trickle.Send("POST /v1/tools/exec HTTP/1.1\r\nX-Slow: "));

  // A header line that never ends, one byte every 50 ms: closed anyway.
  bool trickle_cut = false;
  for (int i = 0; i < 100 && !trickle_cut; ++i) {
    trickle_cut = !trickle.Send("a") || trickle.WaitClosed(milliseconds(50));
  }
  EXPECT_TRUE(trickle_cut) << "a header sent byte by byte was not cut";
  EXPECT_TRUE(stalled.WaitClosed(milliseconds(5000))) << "half-sent headers held the connection";
  EXPECT_TRUE(silent.WaitClosed(milliseconds(5000))) << "a silent connection was held";
  EXPECT_GE(SecondsSince(start), 0.25);
  EXPECT_TRUE(Healthy());
}

// Old code: an idle keep-alive connection was held for ever.
TEST_F(ServerLimits, IdleKeepAliveConnectionIsClosed) {
  Serve(R"("idleTimeoutMs": 300)");
  RawHttpClient c;
  ASSERT_TRUE(c.Connect(SocketPath()));
  ASSERT_TRUE(c.Send(kHealth));
  ASSERT_TRUE(c.ReadResponse(milliseconds(5000)));
  auto answered = Clock::now();
  EXPECT_TRUE(c.WaitClosed(milliseconds(5000))) << "an idle keep-alive connection was held";
  EXPECT_GE(SecondsSince(answered), 0.25);
}

// The idle timeout is for connections between requests, not for a live event stream.
TEST_F(ServerLimits, EventStreamOutlivesTheIdleTimeout) {
  Serve(R"("idleTimeoutMs": 300)");
  RawHttpClient events;
  ASSERT_TRUE(events.Connect(SocketPath()));
  ASSERT_TRUE(events.Send("GET /v1/events HTTP/1.1\r\nHost: sandrun\r\n\r\n"));
  ASSERT_TRUE(events.ReadUntil("event: ready", milliseconds(5000))) << events.received();
  // Three idle timeouts without traffic: the stream stays open.
  EXPECT_FALSE(events.WaitClosed(milliseconds(900))) << events.received();

  auto r = Exec({"--background"}, "echo stream-alive");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(events.ReadUntil("event: exec.finished", milliseconds(10000))) << events.received();
  EXPECT_NE(events.received().find("stream-alive"), std::string::npos) << events.received();
}

// Old code: a Content-Length over the limit closed the connection without an answer.
TEST_F(ServerLimits, OversizedBodyGets413WithoutBeingRead) {
  Serve(R"("maxBodyBytes": 4096)");
  RawHttpClient declared;
  ASSERT_TRUE(declared.Connect(SocketPath()));
  ASSERT_TRUE(declared.Send(Post("/v1/tools/exec", 9u << 20)));  // and no body at all
  ASSERT_TRUE(declared.ReadResponse(milliseconds(2000))) << "no answer before the body";
  EXPECT_EQ(declared.received().rfind("HTTP/1.1 413", 0), 0u) << declared.received();
  EXPECT_NE(declared.received().find("body-too-large"), std::string::npos);
  EXPECT_TRUE(declared.WaitClosed(milliseconds(2000)));

  // A chunked body is cut where it grows over the limit.
  RawHttpClient chunked;
  ASSERT_TRUE(chunked.Connect(SocketPath()));
  ASSERT_TRUE(chunked.Send(
      "POST /v1/tools/exec HTTP/1.1\r\nHost: sandrun\r\nTransfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "400\r\n" + std::string(1024, ' ') + "\r\n";
  for (int i = 0; i < 5; ++i) (void)chunked.Send(chunk);
  ASSERT_TRUE(chunked.ReadResponse(milliseconds(2000))) << chunked.received();
  EXPECT_EQ(chunked.received().rfind("HTTP/1.1 413", 0), 0u) << chunked.received();

  // At the limit is fine.
  RawHttpClient at_limit;
  ASSERT_TRUE(at_limit.Connect(SocketPath()));
  ASSERT_TRUE(at_limit.Send(Post("/v1/tools/process", 4096) + PaddedProcessList(4096)));
  ASSERT_TRUE(at_limit.ReadResponse(milliseconds(5000)));
  EXPECT_EQ(at_limit.received().rfind("HTTP/1.1 200", 0), 0u) << at_limit.received();
}

// Old code: every connection buffered its body in full, with no total bound.
TEST_F(ServerLimits, BodiesInFlightShareOneBudget) {
  Serve(R"("maxBodyBytes": 4096, "maxBufferedBytes": 6000)");
  // 4000 of the 6000 bytes are held by a body that is slow to come: the server says 100 Continue
  // once it holds them.
  RawHttpClient slow;
  ASSERT_TRUE(slow.Connect(SocketPath()));
  const std::string slow_body = PaddedProcessList(4000);
  ASSERT_TRUE(slow.Send(Post("/v1/tools/process", 4000, "Expect: 100-continue\r\n")));
  ASSERT_TRUE(slow.ReadUntil("100 Continue\r\n\r\n", milliseconds(5000))) << slow.received();
  slow.Clear();
  ASSERT_TRUE(slow.Send(slow_body.substr(0, 100)));

  RawHttpClient big;
  ASSERT_TRUE(big.Connect(SocketPath()));
  ASSERT_TRUE(big.Send(Post("/v1/tools/process", 4000)));
  ASSERT_TRUE(big.ReadResponse(milliseconds(2000))) << "no answer before the body";
  EXPECT_EQ(big.received().rfind("HTTP/1.1 503", 0), 0u) << big.received();
  EXPECT_NE(big.received().find("server-busy"), std::string::npos) << big.received();

  // Requests without a body, and a body that fits in what is left, are still served.
  EXPECT_TRUE(Healthy());
  RawHttpClient small;
  ASSERT_TRUE(small.Connect(SocketPath()));
  ASSERT_TRUE(small.Send(Post("/v1/tools/process", 1000) + PaddedProcessList(1000)));
  ASSERT_TRUE(small.ReadResponse(milliseconds(5000)));
  EXPECT_EQ(small.received().rfind("HTTP/1.1 200", 0), 0u) << small.received();

  // The slow body completes and is answered; its share is free again.
  ASSERT_TRUE(slow.Send(slow_body.substr(100)));
  ASSERT_TRUE(slow.ReadResponse(milliseconds(5000)));
  EXPECT_EQ(slow.received().rfind("HTTP/1.1 200", 0), 0u) << slow.received();
  RawHttpClient again;
  ASSERT_TRUE(again.Connect(SocketPath()));
  ASSERT_TRUE(again.Send(Post("/v1/tools/process", 4000) + PaddedProcessList(4000)));
  ASSERT_TRUE(again.ReadResponse(milliseconds(5000)));
  EXPECT_EQ(again.received().rfind("HTTP/1.1 200", 0), 0u) << again.received();
}

struct BadServerConfig {
  const char* name;
  const char* server;   // the value of "server"
  const char* message;  // after "config.json:1:COL: "
};

class BadServerKeys : public SandrunHome, public ::testing::WithParamInterface<BadServerConfig> {};

// Old code: the server section was an unknown key, warned about and ignored, and serve started
// (here: ran until `timeout` stopped it, exit 124).
TEST_P(BadServerKeys, ServeRefusesTheConfigWithFileAndLine) {
  Config(std::string(R"({"server": )") + GetParam().server + "}");
  auto r = RunProcess({"/usr/bin/timeout", "20", SANDRUN_BINARY, "serve"}, Env());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(home_ + "/config.json:1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(GetParam().message), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadServerKeys,
    ::testing::Values(
        BadServerConfig{"ConnectionsNotANumber", R"({"maxConnections": "many"})",
                        "server.maxConnections: expected an integer from 1 to 65536, got \"many\""},
        BadServerConfig{"ZeroConnections", R"({"maxConnections": 0})",
                        "server.maxConnections: expected an integer from 1 to 65536, got 0"},
        BadServerConfig{"HeaderTimeoutFraction", R"({"headerTimeoutMs": 1.5})",
                        "server.headerTimeoutMs: expected an integer from 100 to 3600000"},
        BadServerConfig{"IdleTimeoutBool", R"({"idleTimeoutMs": true})",
                        "server.idleTimeoutMs: expected an integer from 100 to 86400000, got true"},
        BadServerConfig{"BodyNotASize", R"({"maxBodyBytes": "big"})",
                        "server.maxBodyBytes: expected a byte count"},
        BadServerConfig{"BufferedNegative", R"({"maxBufferedBytes": -1})",
                        "server.maxBufferedBytes: expected a byte count"},
        BadServerConfig{"BufferedBelowBody", R"({"maxBodyBytes": "8m", "maxBufferedBytes": "1m"})",
                        "server.maxBufferedBytes: server.maxBufferedBytes (1048576) must be at "
                        "least server.maxBodyBytes (8388608)"},
        BadServerConfig{"NotAnObject", "5", "server: expected an object, got 5"}),
    [](const ::testing::TestParamInfo<BadServerConfig>& row) { return row.param.name; });

}  // namespace
}  // namespace sandrun::testing

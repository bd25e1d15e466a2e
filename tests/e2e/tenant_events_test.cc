// GET /v1/events through the binary (issue 14): every event carries an `id:` line, and a client
// that reconnects with Last-Event-ID, even to a restarted server, gets exactly the events it
// missed that the on-disk ring still holds, then live ones; a malformed Last-Event-ID is refused.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/e2e/raw_http_client.h"
#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

struct SseEvent {
  uint64_t id = 0;
  std::string type;
  std::string data;
};

// The complete events in an SSE stream's text (after the HTTP headers).
std::vector<SseEvent> ParseSse(const std::string& stream) {
  std::vector<SseEvent> events;
  size_t body = stream.find("\r\n\r\n");
  size_t at = body == std::string::npos ? 0 : body + 4;
  for (size_t end; (end = stream.find("\n\n", at)) != std::string::npos; at = end + 2) {
    SseEvent e;
    const std::string frame = stream.substr(at, end - at);
    size_t start = 0;
    while (start <= frame.size()) {
      size_t nl = frame.find('\n', start);
      if (nl == std::string::npos) nl = frame.size();
      std::string line = frame.substr(start, nl - start);
      // A chunked body's size lines are not ours.
      if (line.rfind("id: ", 0) == 0) e.id = std::stoull(line.substr(4));
      if (line.rfind("event: ", 0) == 0) e.type = line.substr(7);
      if (line.rfind("data: ", 0) == 0) e.data += line.substr(6);
      start = nl + 1;
    }
    if (!e.type.empty()) events.push_back(e);
  }
  return events;
}

class TenantEvents : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    MinimalSandboxConfig();
  }
  void TearDown() override {
    StopServer();
    SandrunHome::TearDown();
  }
  // Opens /v1/events (with Last-Event-ID when `last_id` is not empty) and waits for `ready`.
  bool OpenEvents(RawHttpClient& client, const std::string& last_id = "") {
    if (!client.Connect(home_ + "/sandrun.sock")) return false;
    std::string req = "GET /v1/events HTTP/1.1\r\nHost: x\r\n";
    if (!last_id.empty()) req += "Last-Event-ID: " + last_id + "\r\n";
    return client.Send(req + "\r\n") && client.ReadUntil("event: ready", std::chrono::seconds(10));
  }
  std::string Background(const std::string& command) {
    auto r = Exec({"--background", "--json"}, command);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return Details(Parsed(r.out), "sessionId");
  }
};

TEST_F(TenantEvents, LastEventIdReplaysWhatWasMissedAcrossARestart) {
  StartServer();
  RawHttpClient live;
  ASSERT_TRUE(OpenEvents(live));
  const std::string first = Background("echo first-run");
  ASSERT_TRUE(live.ReadUntil("Exec completed (" + first.substr(0, 8), std::chrono::seconds(30)))
      << live.received();
  const std::string second = Background("echo second-run");
  ASSERT_TRUE(live.ReadUntil("Exec completed (" + second.substr(0, 8), std::chrono::seconds(30)))
      << live.received();
  std::vector<SseEvent> seen = ParseSse(live.received());
  // ready, then started + finished of each run, every one but ready with an increasing id.
  ASSERT_EQ(seen.size(), 5u) << live.received();
  EXPECT_EQ(seen[0].type, "ready");
  EXPECT_EQ(seen[0].id, 0u);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GT(seen[i].id, seen[i - 1].id) << live.received();
  }
  EXPECT_NE(seen[2].data.find("\"status\":\"completed\""), std::string::npos) << seen[2].data;
  EXPECT_NE(seen[2].data.find("\"exitCode\":0"), std::string::npos) << seen[2].data;

  StopServer();
  StartServer();
  // Resumed after the first run's end: exactly the second run's two events, same ids and data.
  RawHttpClient resumed;
  ASSERT_TRUE(OpenEvents(resumed, std::to_string(seen[2].id))) << resumed.received();
  ASSERT_TRUE(resumed.ReadUntil("Exec completed (" + second.substr(0, 8), std::chrono::seconds(10)))
      << resumed.received();
  std::vector<SseEvent> replayed = ParseSse(resumed.received());
  ASSERT_EQ(replayed.size(), 3u) << resumed.received();  // ready, started, finished
  EXPECT_EQ(replayed[0].type, "ready");
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(replayed[i].id, seen[i + 2].id);
    EXPECT_EQ(replayed[i].type, seen[i + 2].type);
    EXPECT_EQ(replayed[i].data, seen[i + 2].data);
  }
  // Then live events, numbered after the ones before the restart.
  const std::string third = Background("echo third-run");
  ASSERT_TRUE(resumed.ReadUntil("Exec completed (" + third.substr(0, 8), std::chrono::seconds(30)))
      << resumed.received();
  std::vector<SseEvent> after = ParseSse(resumed.received());
  ASSERT_EQ(after.size(), 5u) << resumed.received();
  EXPECT_GT(after[3].id, seen.back().id);
}

TEST_F(TenantEvents, MalformedLastEventIdIsRefused) {
  StartServer();
  RawHttpClient client;
  ASSERT_TRUE(client.Connect(home_ + "/sandrun.sock"));
  ASSERT_TRUE(client.Send("GET /v1/events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 12abc\r\n\r\n"));
  ASSERT_TRUE(client.ReadUntil("invalid-request", std::chrono::seconds(10))) << client.received();
  EXPECT_NE(client.received().find("event: error"), std::string::npos) << client.received();
  EXPECT_NE(client.received().find("Last-Event-ID"), std::string::npos) << client.received();
  EXPECT_EQ(client.received().find("event: ready"), std::string::npos) << client.received();
  EXPECT_TRUE(client.WaitClosed(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace sandrun::testing

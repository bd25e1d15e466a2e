// `serve --listen`'s address: what is loopback, what needs TLS, what is refused.
#include "runner/api/listen_address.h"

#include <gtest/gtest.h>

namespace sandrun::api {
namespace {

TEST(ListenAddress, LoopbackIsOnly127Slash8AndColonColon1) {
  struct Row {
    const char* text;
    const char* host;
    uint16_t port;
    bool loopback;
  };
  for (const Row& row :
       {Row{"127.0.0.1:8443", "127.0.0.1", 8443, true},
        Row{"127.255.0.9:0", "127.255.0.9", 0, true}, Row{"localhost:80", "127.0.0.1", 80, true},
        Row{"[::1]:65535", "::1", 65535, true}, Row{"0.0.0.0:8443", "0.0.0.0", 8443, false},
        Row{"128.0.0.1:1", "128.0.0.1", 1, false}, Row{"10.0.0.1:1", "10.0.0.1", 1, false},
        Row{"[::]:1", "::", 1, false}, Row{"[::ffff:127.0.0.1]:1", "::ffff:127.0.0.1", 1, false}}) {
    auto parsed = ParseListenAddress(row.text);
    ASSERT_TRUE(parsed) << row.text << ": " << parsed.error().ToString();
    EXPECT_EQ(parsed->host, row.host) << row.text;
    EXPECT_EQ(parsed->port, row.port) << row.text;
    EXPECT_EQ(parsed->loopback, row.loopback) << row.text;
  }
}

TEST(ListenAddress, NamesMissingPortsAndBadPortsAreRefused) {
  for (const char* text : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:x", "127.0.0.1:65536",
                           "127.0.0.1:-1", "127.0.0.1:80 ", "example.com:80", "::1:80", "[::1]",
                           "[::1]80", "[127.0.0.1]:80", "[localhost]:80", "127.1:80", "[::1:80"}) {
    auto parsed = ParseListenAddress(text);
    EXPECT_FALSE(parsed) << "\"" << text << "\" was accepted";
  }
}

TEST(ListenAddress, UrlsBracketIpv6) {
  EXPECT_EQ(ListenUrl(*ParseListenAddress("localhost:0"), 4431, true), "https://127.0.0.1:4431");
  EXPECT_EQ(ListenUrl(*ParseListenAddress("[::1]:0"), 8080, false), "http://[::1]:8080");
}

TEST(ListenAddress, PlanRefusesNonLoopbackWithoutTlsAndHalfATlsPair) {
  auto open = PlanTcpListener("0.0.0.0:8443", "", "");
  ASSERT_FALSE(open);
  EXPECT_EQ(open.error().message,
            "--listen 0.0.0.0:8443 is not a loopback address: it needs --tls-cert and --tls-key");
  EXPECT_FALSE(PlanTcpListener("127.0.0.1:1", "cert.pem", ""));
  EXPECT_FALSE(PlanTcpListener("127.0.0.1:1", "", "key.pem"));
  EXPECT_FALSE(PlanTcpListener("", "cert.pem", "key.pem"));
  auto missing = PlanTcpListener("0.0.0.0:1", "/nonexistent/cert.pem", "/nonexistent/key.pem");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot load the TLS certificate /nonexistent/cert.pem"),
            std::string::npos)
      << missing.error().message;
  auto plain = PlanTcpListener("127.0.0.1:0", "", "");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->tls, nullptr);
  auto none = PlanTcpListener("", "", "");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->address.host.empty());
}

}  // namespace
}  // namespace sandrun::api

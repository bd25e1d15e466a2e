#include "runner/api/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>

namespace sandrun::api {
namespace {

Error Bad(const std::string& text, const std::string& why) {
  return Error(
      ErrorCode::kInvalidArgument,
      "--listen " + text + ": " + why + " (HOST:PORT: an IPv4 address, [IPv6] or localhost)");
}

}  // namespace

Result<ListenAddress> ParseListenAddress(const std::string& text) {
  std::string host, port_text;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Bad(text, "an IPv6 address is written [ADDRESS]:PORT");
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) return Bad(text, "no port");
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return Bad(text, "the port must be a number from 0 to 65535");
  }
  ListenAddress out;
  out.port = static_cast<uint16_t>(port);
  in_addr v4{};
  in6_addr v6{};
  const bool bracketed = text[0] == '[';
  if (host == "localhost" && !bracketed) {
    out.host = "127.0.0.1";
    out.loopback = true;
  } else if (!bracketed && ::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    out.host = host;
    out.loopback = (ntohl(v4.s_addr) >> 24) == 127;
  } else if (bracketed && ::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    out.host = host;
    out.loopback = IN6_IS_ADDR_LOOPBACK(&v6);
  } else {
    return Bad(text, "\"" + host + "\" is not a numeric address (names are not looked up)");
  }
  return out;
}

std::string ListenUrl(const ListenAddress& address, uint16_t port, bool tls) {
  const bool v6 = address.host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") +
         (v6 ? "[" + address.host + "]" : address.host) + ":" + std::to_string(port);
}

Result<TcpListenPlan> PlanTcpListener(const std::string& listen, const std::string& tls_cert,
                                      const std::string& tls_key) {
  if (tls_cert.empty() != tls_key.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 tls_cert.empty() ? "--tls-key needs --tls-cert" : "--tls-cert needs --tls-key");
  }
  if (listen.empty()) {
    if (!tls_cert.empty()) {
      return Error(ErrorCode::kInvalidArgument, "--tls-cert and --tls-key need --listen");
    }
    return TcpListenPlan{};
  }
  SANDRUN_ASSIGN_OR_RETURN(ListenAddress address, ParseListenAddress(listen));
  if (!address.loopback && tls_cert.empty()) {
    return Error(
        ErrorCode::kInvalidArgument,
        "--listen " + listen + " is not a loopback address: it needs --tls-cert and --tls-key");
  }
  TcpListenPlan plan;
  plan.address = std::move(address);
  if (!tls_cert.empty()) {
    SANDRUN_ASSIGN_OR_RETURN(plan.tls, TlsContext::Load(tls_cert, tls_key));
  }
  return plan;
}

}  // namespace sandrun::api

// `sandrun serve --listen HOST:PORT [--tls-cert FILE --tls-key FILE]`: the TCP listener's
// address and TLS files, checked before the server starts (a refusal starts nothing).
//   HOST: a numeric IPv4 address, a bracketed IPv6 one ([::1]) or `localhost` (127.0.0.1); no
//   name lookups. PORT: 0-65535 (0: a free port, reported on the "listening on" line).
// A non-loopback address (outside 127.0.0.0/8 and ::1) needs TLS: an agent's token must never
// cross a network in the clear.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runner/api/connection.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

struct ListenAddress {
  std::string host;  // numeric, as bound
  uint16_t port = 0;
  bool loopback = false;
};

// Parses HOST:PORT; an error names what is wrong.
Result<ListenAddress> ParseListenAddress(const std::string& text);

// "https://127.0.0.1:8443", "http://[::1]:8080".
std::string ListenUrl(const ListenAddress& address, uint16_t port, bool tls);

struct TcpListenPlan {
  ListenAddress address;
  std::shared_ptr<const TlsContext> tls;  // null: plain (loopback only)
};

// The listener `--listen` asks for, its TLS files loaded. Refused (kInvalidArgument): a bad
// address, one of --tls-cert/--tls-key without the other, TLS files without --listen, a
// non-loopback address without TLS, a certificate or key that does not load.
Result<TcpListenPlan> PlanTcpListener(const std::string& listen, const std::string& tls_cert,
                                      const std::string& tls_key);

}  // namespace sandrun::api

#include "runner/api/mcp_route.h"

#include <algorithm>
#include <optional>
#include <variant>

#include "sandbox/base/strings.h"

namespace sandrun::api {
namespace {

std::string Header(const HttpRequestInfo& r, const char* name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

// RFC 4648 base64 (with or without padding); nullopt when it is not.
std::optional<std::string> DecodeBase64(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : in) {
    int v = value(c);
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xFF));
    }
  }
  if (count >= 6) return std::nullopt;  // a lone trailing character carries no byte
  return out;
}

// A header value mirrored from the body (Mcp-Name), decoded: `=?base64?...?=` is the
// streamable-http.mdx sentinel for values that are not plain ASCII.
std::optional<std::string> MirroredValue(const std::string& header) {
  constexpr std::string_view kOpen = "=?base64?", kClose = "?=";
  if (header.size() >= kOpen.size() + kClose.size() && header.rfind(kOpen, 0) == 0 &&
      header.compare(header.size() - kClose.size(), kClose.size(), kClose) == 0) {
    return DecodeBase64(std::string_view(header).substr(
        kOpen.size(), header.size() - kOpen.size() - kClose.size()));
  }
  for (char c : header) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7E) {
      return std::nullopt;
    }
  }
  return header;
}

// The 2026-07-28 header rules for a modern request; the refusal when they fail.
std::optional<HttpReply> CheckModernHeaders(const HttpRequestInfo& r, const McpMessage& m) {
  auto mismatch = [&](const std::string& why) {
    return JsonReply(400, McpErrorJson(m.id_json.empty() ? "null" : m.id_json, kMcpHeaderMismatch,
                                       "Header mismatch: " + why));
  };
  const std::string version = Header(r, "mcp-protocol-version");
  if (version != m.protocol_version) {
    return mismatch("MCP-Protocol-Version header '" + version + "' does not match _meta's '" +
                    m.protocol_version + "'");
  }
  const std::string method = Header(r, "mcp-method");
  if (method != m.method) {
    return mismatch("Mcp-Method header '" + method + "' does not match the body's '" + m.method +
                    "'");
  }
  if (m.method == "tools/call") {
    std::optional<std::string> name = MirroredValue(Header(r, "mcp-name"));
    if (!name || *name != m.name) {
      return mismatch("Mcp-Name header does not match params.name '" + m.name + "'");
    }
  }
  return std::nullopt;
}

bool AcceptsEventStream(const HttpRequestInfo& r) {
  return Lower(Header(r, "accept")).find("text/event-stream") != std::string::npos;
}

}  // namespace

bool McpOriginAllowed(const std::string& origin, const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), origin) != allowed.end()) return true;
  std::string rest;
  if (origin.rfind("http://", 0) == 0) {
    rest = origin.substr(7);
  } else if (origin.rfind("https://", 0) == 0) {
    rest = origin.substr(8);
  } else {
    return false;
  }
  for (const char* host : {"localhost", "127.0.0.1", "[::1]"}) {
    const std::string h(host);
    if (rest == h) return true;
    if (rest.size() > h.size() + 1 && rest.rfind(h + ":", 0) == 0 &&
        rest.find_first_not_of("0123456789", h.size() + 1) == std::string::npos) {
      return true;
    }
  }
  return false;
}

HttpReply McpHttpReply(const HttpRequestInfo& r, const Principal& who, McpServer& mcp,
                       const McpSlot& slot) {
  if (auto origin = r.headers.find("origin");
      origin != r.headers.end() &&
      !McpOriginAllowed(origin->second, mcp.Settings().allowed_origins)) {
    return JsonReply(
        403, McpErrorJson("null", kJsonRpcInvalidRequest,
                          "Origin " + origin->second + " is not allowed (mcp.allowedOrigins)"));
  }
  if (Lower(Header(r, "content-type")).find("application/json") == std::string::npos) {
    return JsonReply(415, McpErrorJson("null", kJsonRpcInvalidRequest,
                                       "POST /mcp takes Content-Type: application/json"));
  }
  auto parsed = ParseMcpMessage(r.body);
  if (auto* refusal = std::get_if<McpReply>(&parsed)) {
    return JsonReply(refusal->http_status, refusal->json);
  }
  const McpMessage& m = std::get<McpMessage>(parsed);
  if (!m.protocol_version.empty() && !m.client_response) {
    if (auto refusal = CheckModernHeaders(r, m)) return *refusal;
  } else if (const std::string version = Header(r, "mcp-protocol-version");
             !version.empty() && version != kMcpModernVersion &&
             std::find(kMcpLegacyVersions.begin(), kMcpLegacyVersions.end(), version) ==
                 kMcpLegacyVersions.end()) {
    return JsonReply(400,
                     McpErrorJson(m.id_json.empty() ? "null" : m.id_json, kMcpUnsupportedVersion,
                                  "Unsupported protocol version " + version));
  }
  if (!m.request) {
    (void)mcp.Handle(m, who, nullptr, nullptr);
    return HttpReply{202, "application/json", "", {}, nullptr};
  }
  // A tool call may run for up to mcp.maxBlockMs: it holds one of its tenant's slots.
  std::shared_ptr<void> held;
  if (m.method == "tools/call" && slot) {
    held = slot();
    if (!held) {
      return JsonReply(429, McpErrorJson(m.id_json, kJsonRpcInternalError,
                                         "too many calls in progress for this tenant (an "
                                         "eighth of server.maxConnections); nothing was run"));
    }
  }
  if (m.method != "tools/call" || !AcceptsEventStream(r)) {
    PeerWatch peer(r);
    McpReply reply = mcp.Handle(m, who, nullptr, &peer.gone());
    if (reply.kind != McpReply::Kind::kResponse) {
      // A request always gets a response (202 is for notifications): its client is gone, or it
      // will read that the call was cancelled.
      return JsonReply(200,
                       McpErrorJson(m.id_json, kJsonRpcInternalError, "the request was cancelled"));
    }
    return JsonReply(reply.http_status, reply.json);
  }
  HttpReply stream;
  // `held` goes with the reply: the slot is back once the stream ended or never started.
  stream.stream = [r, who, m, &mcp, held](const EventWriter& write) {
    PeerWatch peer(r);
    McpServer::Notify notify = [&](const std::string& json) { return write("message", json, 0); };
    McpReply reply = mcp.Handle(m, who, notify, &peer.gone());
    if (reply.kind == McpReply::Kind::kResponse) (void)write("message", reply.json, 0);
  };
  return stream;
}

}  // namespace sandrun::api

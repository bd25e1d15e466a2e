// HTTP transport to the Docker engine: plain requests (pooled, reused connections) and
// hijacked connections (`Upgrade: tcp`) for bidirectional exec streams.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(Endpoint ep, EndpointFromEnvironment());
//   SANDRUN_ASSIGN_OR_RETURN(auto transport, CurlTransport::Create(ep));
//   HttpRequest req; req.target = "/_ping";
//   SANDRUN_ASSIGN_OR_RETURN(HttpResponse resp, transport->Send(req));
//
// Thread-safety: a Transport may be used from many threads at once; a RawStream by one reader
// thread and one writer thread at the same time.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"

namespace sandrun::docker {

// Where the engine listens: DOCKER_HOST (+ DOCKER_TLS_VERIFY, DOCKER_CERT_PATH).
struct Endpoint {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kUnix;
  std::string socket_path = "/var/run/docker.sock";  // kUnix
  std::string host;                                  // kTcp
  int port = 0;                                      // kTcp
  bool tls = false;
  bool tls_verify = false;
  std::string cert_dir;  // holds ca.pem, cert.pem, key.pem

  std::string ToString() const;  // "unix:///var/run/docker.sock", "tcp://h:2376 (TLS)"
};

// Parses the three variables' values (empty = unset). Accepts unix:///path, tcp://host:port.
Result<Endpoint> ParseEndpoint(std::string_view docker_host, std::string_view tls_verify,
                               std::string_view cert_path);
Result<Endpoint> EndpointFromEnvironment();

struct HttpRequest {
  std::string method = "GET";
  std::string target;  // path + query, e.g. "/v1.41/containers/json?all=1"
  std::string body;    // sent as-is unless body_reader is set
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;  // extra request headers (empty values skipped)
  // Streaming upload: fills buf with up to cap bytes, returns 0 at the end.
  std::function<Result<size_t>(char* buf, size_t cap)> body_reader;
  int64_t body_size = -1;  // with body_reader: total bytes, or -1 for chunked encoding
  CallOptions options;
};

struct HttpResponse {
  int status = 0;
  std::string body;                            // not filled for 2xx bodies given to a sink
  std::map<std::string, std::string> headers;  // names lowercased

  std::string Header(const std::string& lowercase_name) const;
  bool ok() const { return status >= 200 && status < 300; }
};

// Receives 2xx response bodies as they arrive; returns false to abort (the call then fails with
// kCancelled).
using BodySink = std::function<bool(std::string_view)>;

// A hijacked connection: raw bytes both ways after the HTTP head.
class RawStream {
 public:
  virtual ~RawStream() = default;
  // Reads up to `cap` bytes; 0 means the peer closed. Honors the deadline and cancel token.
  virtual Result<size_t> Read(char* buf, size_t cap, const CallOptions& options) = 0;
  virtual Status Write(std::string_view data, const CallOptions& options) = 0;
  // Half-close: the peer sees EOF on its stdin; reading goes on.
  virtual Status CloseWrite() = 0;
  // The response's Content-Type (raw-stream or multiplexed-stream).
  virtual const std::string& content_type() const = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Performs one request. Errors are transport failures only (unreachable, timeout,
  // cancelled, I/O); an HTTP error status is a response.
  virtual Result<HttpResponse> Send(const HttpRequest& request, const BodySink& sink = nullptr) = 0;
  // Sends the request with `Connection: Upgrade` + `Upgrade: tcp` and returns the raw stream
  // after a 101 (or 200) answer; other statuses become errors carrying http_status.
  virtual Result<std::unique_ptr<RawStream>> Hijack(const HttpRequest& request) = 0;
  virtual const Endpoint& endpoint() const = 0;
};

struct TransportOptions {
  std::chrono::milliseconds connect_timeout{3000};
};

// libcurl-backed transport. Keeps a pool of easy handles so connections are reused.
class CurlTransport final : public Transport {
 public:
  static Result<std::unique_ptr<CurlTransport>> Create(Endpoint endpoint,
                                                       TransportOptions options = {});
  ~CurlTransport() override;

  Result<HttpResponse> Send(const HttpRequest& request, const BodySink& sink = nullptr) override;
  Result<std::unique_ptr<RawStream>> Hijack(const HttpRequest& request) override;
  const Endpoint& endpoint() const override { return endpoint_; }

 private:
  struct Impl;
  CurlTransport(Endpoint endpoint, TransportOptions options);
  Endpoint endpoint_;
  TransportOptions options_;
  std::unique_ptr<Impl> impl_;
};

// An Error for an HTTP error status: kNotFound (404), kConflict (409), else kDockerApi; the
// message is the engine's own ("No such container: x").
Error HttpError(int status, std::string_view body);

}  // namespace sandrun::docker

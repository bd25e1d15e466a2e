#include "sandbox/docker/transport.h"

#include <curl/curl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "sandbox/base/strings.h"
#include "sandbox/docker/curl_lib.h"
#include "sandbox/docker/models.h"

namespace sandrun::docker {
namespace {

// The loaded libcurl. Only valid after CurlTransport::Create succeeded, which every path to a
// handle goes through.
const CurlLib& Curl() { return *LoadCurl().value(); }

struct CurlEasyDeleter {
  void operator()(CURL* c) const { Curl().easy_cleanup(c); }
};
struct CurlSlistDeleter {
  void operator()(curl_slist* l) const { Curl().slist_free_all(l); }
};
using CurlEasy = std::unique_ptr<CURL, CurlEasyDeleter>;
using CurlSlist = std::unique_ptr<curl_slist, CurlSlistDeleter>;

constexpr size_t kMaxBufferedBody = 64u << 20;  // responses we keep in memory
constexpr size_t kMaxHead = 64u << 10;          // hijack response head
constexpr int kPollSliceMs = 100;               // how often blocking waits look at cancellation

// Parses "Name: value" into headers (lowercased name); ignores other lines.
void AddHeaderLine(std::string_view line, std::map<std::string, std::string>& headers) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;
  headers[Lower(std::string(line.substr(0, colon)))] = Trim(line.substr(colon + 1));
}

bool IsConnectFailure(CURLcode rc) {
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
         rc == CURLE_COULDNT_RESOLVE_PROXY;
}

// Waits until fd is ready for `events`, the deadline passes, or the call is cancelled.
Status WaitFd(int fd, short events, const CallOptions& options) {
  for (;;) {
    if (options.cancelled()) return Error(ErrorCode::kCancelled, "cancelled");
    int64_t left = options.deadline.remaining_ms();
    if (left == 0) return Error(ErrorCode::kTimeout, "deadline exceeded on the engine stream");
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, kPollSliceMs)));
    if (rc > 0) return Ok();
    if (rc < 0 && errno != EINTR) return Error::FromErrno(errno, "poll on the engine stream");
  }
}

class CurlRawStream final : public RawStream {
 public:
  CurlRawStream(CurlEasy handle, int fd, bool tls)
      : handle_(std::move(handle)), fd_(fd), tls_(tls) {}

  void set_leftover(std::string bytes) { leftover_ = std::move(bytes); }
  void set_content_type(std::string ct) { content_type_ = std::move(ct); }
  const std::string& content_type() const override { return content_type_; }

  Result<size_t> Read(char* buf, size_t cap, const CallOptions& options) override {
    if (!leftover_.empty()) {
      size_t n = std::min(cap, leftover_.size() - leftover_pos_);
      std::copy_n(leftover_.data() + leftover_pos_, n, buf);
      leftover_pos_ += n;
      if (leftover_pos_ == leftover_.size()) {
        leftover_.clear();
        leftover_pos_ = 0;
      }
      return n;
    }
    for (;;) {
      if (!tls_) {
        // Plain sockets bypass curl so one thread can read while another writes (a curl handle
        // must not be used from two threads at once).
        ssize_t n = ::recv(fd_, buf, cap, 0);
        if (n >= 0) return static_cast<size_t>(n);  // 0 = EOF
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          return Error::FromErrno(errno, "reading the engine stream");
        }
      } else {
        size_t got = 0;
        CURLcode rc;
        {
          std::lock_guard<std::mutex> lock(tls_mu_);
          rc = Curl().easy_recv(handle_.get(), buf, cap, &got);
        }
        if (rc == CURLE_OK) return got;  // 0 = EOF
        if (rc != CURLE_AGAIN) {
          return Error(ErrorCode::kIo,
                       std::string("reading the engine stream: ") + Curl().easy_strerror(rc));
        }
      }
      SANDRUN_RETURN_IF_ERROR(WaitFd(fd_, POLLIN, options));
    }
  }

  Status Write(std::string_view data, const CallOptions& options) override {
    while (!data.empty()) {
      if (!tls_) {
        ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
        if (n >= 0) {
          data.remove_prefix(static_cast<size_t>(n));
          continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          return Error::FromErrno(errno, "writing the engine stream");
        }
      } else {
        size_t sent = 0;
        CURLcode rc;
        {
          std::lock_guard<std::mutex> lock(tls_mu_);
          rc = Curl().easy_send(handle_.get(), data.data(), data.size(), &sent);
        }
        if (rc == CURLE_OK) {
          data.remove_prefix(sent);
          continue;
        }
        if (rc != CURLE_AGAIN) {
          return Error(ErrorCode::kIo,
                       std::string("writing the engine stream: ") + Curl().easy_strerror(rc));
        }
      }
      SANDRUN_RETURN_IF_ERROR(WaitFd(fd_, POLLOUT, options));
    }
    return Ok();
  }

  Status CloseWrite() override {
    if (tls_) {
      // libcurl's TLS layer has no half-close; shutting the socket down under it would corrupt
      // the TLS session.
      return Error(ErrorCode::kInvalidArgument,
                   "closing stdin is not supported over a TLS engine connection");
    }
    if (::shutdown(fd_, SHUT_WR) != 0) return Error::FromErrno(errno, "shutdown(SHUT_WR)");
    return Ok();
  }

 private:
  CurlEasy handle_;
  int fd_;
  bool tls_;
  std::mutex tls_mu_;  // TLS only: curl_easy_send/recv on the one handle, one at a time
  std::string leftover_;
  size_t leftover_pos_ = 0;
  std::string content_type_;
};

// State shared with curl's callbacks during one Send.
struct Transfer {
  CURL* handle = nullptr;
  const BodySink* sink = nullptr;
  const HttpRequest* request = nullptr;
  HttpResponse response;
  bool sink_aborted = false;
  bool body_too_large = false;
  Error reader_error;
  bool reader_failed = false;
};

size_t OnWrite(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * nmemb;
  long code = 0;
  Curl().easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &code);
  if (code >= 200 && code < 300 && t->sink != nullptr && *t->sink) {
    if (!(*t->sink)(std::string_view(data, n))) {
      t->sink_aborted = true;
      return 0;
    }
    return n;
  }
  if (t->response.body.size() + n > kMaxBufferedBody) {
    t->body_too_large = true;
    return 0;
  }
  t->response.body.append(data, n);
  return n;
}

size_t OnHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * nmemb);
  if (line.rfind("HTTP/", 0) == 0) {
    t->response.headers.clear();  // a new header block (e.g. after 100 Continue)
  } else {
    AddHeaderLine(line, t->response.headers);
  }
  return size * nmemb;
}

size_t OnRead(char* buf, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  auto got = t->request->body_reader(buf, size * nmemb);
  if (!got) {
    t->reader_error = std::move(got).error();
    t->reader_failed = true;
    return CURL_READFUNC_ABORT;
  }
  return *got;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->request->options.cancelled() ? 1 : 0;
}

}  // namespace

std::string Endpoint::ToString() const {
  if (kind == Kind::kUnix) return "unix://" + socket_path;
  std::string s = "tcp://" + host + ":" + std::to_string(port);
  if (tls) s += tls_verify ? " (TLS, verified)" : " (TLS)";
  return s;
}

Result<Endpoint> ParseEndpoint(std::string_view docker_host, std::string_view tls_verify,
                               std::string_view cert_path) {
  Endpoint ep;
  std::string value = Trim(docker_host);
  if (value.empty()) return ep;
  if (value.rfind("unix://", 0) == 0) {
    ep.socket_path = value.substr(7);
    if (ep.socket_path.empty() || ep.socket_path.front() != '/') {
      return Error(ErrorCode::kInvalidArgument,
                   "DOCKER_HOST=" + value + ": a unix socket needs an absolute path");
    }
    return ep;
  }
  if (value.rfind("tcp://", 0) != 0) {
    return Error(ErrorCode::kInvalidArgument,
                 "DOCKER_HOST=" + value + ": only unix:// and tcp:// endpoints are supported");
  }
  std::string rest = value.substr(6);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  size_t colon = rest.rfind(':');
  ep.kind = Endpoint::Kind::kTcp;
  ep.tls_verify = !tls_verify.empty() && tls_verify != "0" && tls_verify != "false";
  ep.tls = ep.tls_verify || !cert_path.empty();
  ep.cert_dir = std::string(cert_path);
  if (ep.tls && ep.cert_dir.empty()) {
    const char* home = std::getenv("HOME");
    ep.cert_dir = std::string(home ? home : "") + "/.docker";
  }
  if (colon == std::string::npos) {
    ep.host = rest;
    ep.port = ep.tls ? 2376 : 2375;
  } else {
    ep.host = rest.substr(0, colon);
    std::string_view port = std::string_view(rest).substr(colon + 1);
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), ep.port);
    if (ec != std::errc() || ptr != port.data() + port.size() || ep.port <= 0 || ep.port > 65535) {
      return Error(ErrorCode::kInvalidArgument, "DOCKER_HOST=" + value + ": bad port");
    }
  }
  if (ep.host.empty()) {
    return Error(ErrorCode::kInvalidArgument, "DOCKER_HOST=" + value + ": no host name");
  }
  return ep;
}

Result<Endpoint> EndpointFromEnvironment() {
  auto get = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string_view(v ? v : "");
  };
  return ParseEndpoint(get("DOCKER_HOST"), get("DOCKER_TLS_VERIFY"), get("DOCKER_CERT_PATH"));
}

std::string HttpResponse::Header(const std::string& lowercase_name) const {
  auto it = headers.find(lowercase_name);
  return it == headers.end() ? "" : it->second;
}

Error HttpError(int status, std::string_view body) {
  ErrorCode code = status == 404   ? ErrorCode::kNotFound
                   : status == 409 ? ErrorCode::kConflict
                   : status == 400 ? ErrorCode::kInvalidArgument
                                   : ErrorCode::kDockerApi;
  std::string message = ParseErrorMessage(body);
  if (message.empty()) message = "the Docker engine answered HTTP " + std::to_string(status);
  Error e(code, message);
  e.http_status = status;
  return e;
}

struct CurlTransport::Impl {
  std::mutex mu;
  std::vector<CurlEasy> idle;
  std::string base_url;

  CurlEasy Acquire() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!idle.empty()) {
        CurlEasy h = std::move(idle.back());
        idle.pop_back();
        Curl().easy_reset(h.get());  // keeps the live connection
        return h;
      }
    }
    return CurlEasy(Curl().easy_init());
  }
  void Release(CurlEasy h) {
    std::lock_guard<std::mutex> lock(mu);
    idle.push_back(std::move(h));
  }
};

CurlTransport::CurlTransport(Endpoint endpoint, TransportOptions options)
    : endpoint_(std::move(endpoint)), options_(options), impl_(std::make_unique<Impl>()) {
  if (endpoint_.kind == Endpoint::Kind::kUnix) {
    impl_->base_url = "http://docker";
  } else {
    impl_->base_url = std::string(endpoint_.tls ? "https://" : "http://") + endpoint_.host + ":" +
                      std::to_string(endpoint_.port);
  }
}

CurlTransport::~CurlTransport() = default;

Result<std::unique_ptr<CurlTransport>> CurlTransport::Create(Endpoint endpoint,
                                                             TransportOptions options) {
  SANDRUN_RETURN_IF_ERROR(LoadCurl());
  return std::unique_ptr<CurlTransport>(new CurlTransport(std::move(endpoint), options));
}

namespace {

// Options every handle needs: where to connect, TLS material, timeouts, no signals.
void ConfigureEndpoint(CURL* h, const Endpoint& ep, const TransportOptions& options,
                       char* error_buffer) {
  Curl().easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  Curl().easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  Curl().easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options.connect_timeout.count()));
  if (ep.kind == Endpoint::Kind::kUnix) {
    Curl().easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, ep.socket_path.c_str());
  } else if (ep.tls) {
    std::string ca = ep.cert_dir + "/ca.pem", cert = ep.cert_dir + "/cert.pem",
                key = ep.cert_dir + "/key.pem";
    Curl().easy_setopt(h, CURLOPT_CAINFO, ca.c_str());  // libcurl copies string options
    Curl().easy_setopt(h, CURLOPT_SSLCERT, cert.c_str());
    Curl().easy_setopt(h, CURLOPT_SSLKEY, key.c_str());
    Curl().easy_setopt(h, CURLOPT_SSL_VERIFYPEER, ep.tls_verify ? 1L : 0L);
    Curl().easy_setopt(h, CURLOPT_SSL_VERIFYHOST, ep.tls_verify ? 2L : 0L);
  }
}

Error CurlFailure(CURLcode rc, const char* error_buffer, const Endpoint& ep, CURL* h) {
  std::string detail = error_buffer[0] ? error_buffer : Curl().easy_strerror(rc);
  long connect_os_errno = 0;
  curl_off_t pretransfer_us = 0;  // 0 until a connection (new or reused) carried the request
  Curl().easy_getinfo(h, CURLINFO_OS_ERRNO, &connect_os_errno);
  Curl().easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us);
  if (IsConnectFailure(rc) || (rc == CURLE_OPERATION_TIMEDOUT && pretransfer_us == 0)) {
    // curl's own text names "port 80" even for unix sockets; the OS error is clearer.
    if (connect_os_errno != 0) detail = std::strerror(static_cast<int>(connect_os_errno));
    Error e(ErrorCode::kDockerUnreachable,
            "cannot reach the Docker engine at " + ep.ToString() + ": " + detail);
    e.sys_errno = static_cast<int>(connect_os_errno);
    return e;
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) return Error(ErrorCode::kTimeout, "engine call timed out");
  if (rc == CURLE_ABORTED_BY_CALLBACK) return Error(ErrorCode::kCancelled, "cancelled");
  return Error(ErrorCode::kIo, "talking to the Docker engine at " + ep.ToString() + ": " + detail);
}

}  // namespace

Result<HttpResponse> CurlTransport::Send(const HttpRequest& request, const BodySink& sink) {
  if (request.options.cancelled()) return Error(ErrorCode::kCancelled, "cancelled");
  int64_t left = request.options.deadline.remaining_ms();
  if (left == 0) return Error(ErrorCode::kTimeout, "deadline exceeded before the engine call");

  CurlEasy handle = impl_->Acquire();
  if (!handle) return Error(ErrorCode::kInternal, "curl_easy_init failed");
  CURL* h = handle.get();
  char error_buffer[CURL_ERROR_SIZE] = {0};
  ConfigureEndpoint(h, endpoint_, options_, error_buffer);

  std::string url = impl_->base_url + request.target;
  Curl().easy_setopt(h, CURLOPT_URL, url.c_str());
  if (left != INT64_MAX) Curl().easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(left));

  Transfer t;
  t.handle = h;
  t.sink = &sink;
  t.request = &request;
  Curl().easy_setopt(h, CURLOPT_WRITEFUNCTION, OnWrite);
  Curl().easy_setopt(h, CURLOPT_WRITEDATA, &t);
  Curl().easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  Curl().easy_setopt(h, CURLOPT_HEADERDATA, &t);
  if (request.options.cancel != nullptr) {
    Curl().easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    Curl().easy_setopt(h, CURLOPT_XFERINFOFUNCTION, OnProgress);
    Curl().easy_setopt(h, CURLOPT_XFERINFODATA, &t);
  }

  CurlSlist headers;
  auto add_header = [&](const std::string& line) {
    headers.reset(Curl().slist_append(headers.release(), line.c_str()));
  };
  add_header("Expect:");  // no 100-continue round trip
  add_header("User-Agent: sandrun/" SANDRUN_VERSION);
  for (const auto& [name, value] : request.headers) {
    // A line break would smuggle in another header: such values are dropped, not sent.
    if (value.empty() || value.find_first_of("\r\n") != std::string::npos) continue;
    add_header(name + ": " + value);
  }
  if (request.method == "POST" || request.method == "PUT") {
    add_header("Content-Type: " + request.content_type);
    if (request.body_reader) {
      Curl().easy_setopt(h, CURLOPT_POST, 1L);
      Curl().easy_setopt(h, CURLOPT_READFUNCTION, OnRead);
      Curl().easy_setopt(h, CURLOPT_READDATA, &t);
      Curl().easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(request.body_size));
      if (request.body_size < 0) add_header("Transfer-Encoding: chunked");
    } else {
      Curl().easy_setopt(h, CURLOPT_POSTFIELDS, request.body.c_str());
      Curl().easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(request.body.size()));
    }
    if (request.method == "PUT") Curl().easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
  } else if (request.method == "HEAD") {
    Curl().easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (request.method != "GET") {
    Curl().easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  Curl().easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());

  CURLcode rc = Curl().easy_perform(h);
  long status = 0;
  Curl().easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  Result<HttpResponse> result = Error(ErrorCode::kInternal, "unreachable");
  if (rc == CURLE_OK) {
    t.response.status = static_cast<int>(status);
    result = std::move(t.response);
  } else if (t.sink_aborted) {
    result = Error(ErrorCode::kCancelled, "the receiver stopped the engine stream");
  } else if (t.reader_failed) {
    result = std::move(t.reader_error).Wrap("sending the request body");
  } else if (t.body_too_large) {
    result = Error(ErrorCode::kProtocol, "engine response larger than 64 MiB");
  } else {
    result = CurlFailure(rc, error_buffer, endpoint_, h);
  }
  // The handle goes back to the pool either way: libcurl drops broken connections itself.
  Curl().easy_setopt(h, CURLOPT_HTTPHEADER, static_cast<curl_slist*>(nullptr));
  Curl().easy_setopt(h, CURLOPT_ERRORBUFFER, static_cast<char*>(nullptr));
  impl_->Release(std::move(handle));
  return result;
}

Result<std::unique_ptr<RawStream>> CurlTransport::Hijack(const HttpRequest& request) {
  CurlEasy handle(Curl().easy_init());
  if (!handle) return Error(ErrorCode::kInternal, "curl_easy_init failed");
  CURL* h = handle.get();
  char error_buffer[CURL_ERROR_SIZE] = {0};
  ConfigureEndpoint(h, endpoint_, options_, error_buffer);
  Curl().easy_setopt(h, CURLOPT_URL, impl_->base_url.c_str());
  Curl().easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
  CURLcode rc = Curl().easy_perform(h);
  if (rc != CURLE_OK) return CurlFailure(rc, error_buffer, endpoint_, h);
  Curl().easy_setopt(h, CURLOPT_ERRORBUFFER, static_cast<char*>(nullptr));
  curl_socket_t fd = CURL_SOCKET_BAD;
  if (Curl().easy_getinfo(h, CURLINFO_ACTIVESOCKET, &fd) != CURLE_OK || fd == CURL_SOCKET_BAD) {
    return Error(ErrorCode::kInternal, "no socket after connecting to the engine");
  }
  auto stream = std::make_unique<CurlRawStream>(std::move(handle), fd, endpoint_.tls);

  std::string host = endpoint_.kind == Endpoint::Kind::kUnix
                         ? "docker"
                         : endpoint_.host + ":" + std::to_string(endpoint_.port);
  std::string head =
      request.method + " " + request.target + " HTTP/1.1\r\nHost: " + host +
      "\r\nUser-Agent: sandrun/" SANDRUN_VERSION "\r\nContent-Type: " + request.content_type +
      "\r\nContent-Length: " + std::to_string(request.body.size()) +
      "\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n";
  SANDRUN_RETURN_IF_ERROR(stream->Write(head + request.body, request.options));

  // Read the response head; anything after it already belongs to the stream.
  std::string buffer;
  size_t head_end = std::string::npos;
  char chunk[4096];
  while (head_end == std::string::npos) {
    SANDRUN_ASSIGN_OR_RETURN(size_t n, stream->Read(chunk, sizeof chunk, request.options));
    if (n == 0) return Error(ErrorCode::kProtocol, "the engine closed the connection early");
    buffer.append(chunk, n);
    head_end = buffer.find("\r\n\r\n");
    if (head_end == std::string::npos && buffer.size() > kMaxHead) {
      return Error(ErrorCode::kProtocol, "engine response head too large");
    }
  }
  std::string_view head_view(buffer.data(), head_end);
  size_t line_end = head_view.find("\r\n");
  std::string_view status_line = head_view.substr(0, line_end);
  int status = 0;
  if (size_t sp = status_line.find(' '); sp != std::string_view::npos) {
    std::from_chars(status_line.data() + sp + 1, status_line.data() + status_line.size(), status);
  }
  std::map<std::string, std::string> headers;
  while (line_end != std::string_view::npos) {
    size_t start = line_end + 2;
    line_end = head_view.find("\r\n", start);
    AddHeaderLine(
        head_view.substr(
            start, line_end == std::string_view::npos ? std::string_view::npos : line_end - start),
        headers);
  }
  std::string rest = buffer.substr(head_end + 4);

  if (status == 101 || status == 200) {
    stream->set_leftover(std::move(rest));
    stream->set_content_type(headers["content-type"]);
    return std::unique_ptr<RawStream>(std::move(stream));
  }
  if (status == 0) return Error(ErrorCode::kProtocol, "bad HTTP status line from the engine");
  // An error: read its body (Content-Length, else to EOF) for the engine's message.
  size_t want = kMaxHead;
  if (auto it = headers.find("content-length"); it != headers.end()) {
    std::from_chars(it->second.data(), it->second.data() + it->second.size(), want);
    want = std::min(want, kMaxHead);
  }
  while (rest.size() < want) {
    auto n = stream->Read(chunk, sizeof chunk, request.options);
    if (!n || *n == 0) break;
    rest.append(chunk, *n);
  }
  return HttpError(status, rest);
}

}  // namespace sandrun::docker

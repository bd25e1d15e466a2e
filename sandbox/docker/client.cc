#include "sandbox/docker/client.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <thread>

#include "sandbox/base/json.h"
#include "sandbox/os/file.h"

namespace sandrun::docker {
namespace {

constexpr size_t kReadChunk = 64u << 10;

// Splits newline-separated JSON progress messages that may arrive in pieces.
class LineSplitter {
 public:
  template <typename F>
  void Feed(std::string_view bytes, F&& on_line) {
    pending_.append(bytes);
    size_t start = 0;
    for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (nl > start) on_line(std::string_view(pending_).substr(start, nl - start));
    }
    pending_.erase(0, start);
  }
  template <typename F>
  void Finish(F&& on_line) {
    if (!pending_.empty()) on_line(std::string_view(pending_));
    pending_.clear();
  }

 private:
  std::string pending_;
};

}  // namespace

Result<long> InContainerPid(int64_t host_pid) {
  auto status = ReadFile("/proc/" + std::to_string(host_pid) + "/status", 1u << 16);
  if (!status) {
    return Error(ErrorCode::kNotFound, "cannot map exec pid " + std::to_string(host_pid) +
                                           " into its container (is the engine on another host?)");
  }
  std::istringstream in(*status);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    long pid = 0;
    int levels = 0;
    for (long v; fields >> v; ++levels) pid = v;
    // One level: the process is in this machine's own pid namespace, so not an exec's (a pid of
    // a remote engine that happens to exist here, or one reused since).
    if (pid > 0 && levels >= 2) return pid;
  }
  return Error(ErrorCode::kNotFound,
               "pid " + std::to_string(host_pid) + " is not in a container's pid namespace");
}

// ---------------------------------------------------------------------------------------------
// ExecStream

ExecStream::ExecStream(std::unique_ptr<RawStream> raw, bool tty)
    : raw_(std::move(raw)), tty_(tty), demuxer_([this](StreamKind kind, std::string_view bytes) {
        if (current_sink_ != nullptr && *current_sink_) (*current_sink_)(kind, bytes);
      }) {}

Status ExecStream::WriteStdin(std::string_view data, const CallOptions& options) {
  return raw_->Write(data, options);
}

Status ExecStream::CloseStdin() { return raw_->CloseWrite(); }

Result<bool> ExecStream::Pump(const OutputSink& sink, const CallOptions& options) {
  if (ended_) return false;
  char buf[kReadChunk];
  SANDRUN_ASSIGN_OR_RETURN(size_t n, raw_->Read(buf, sizeof buf, options));
  if (n == 0) {
    ended_ = true;
    if (!tty_) SANDRUN_RETURN_IF_ERROR(demuxer_.Finish());
    return false;
  }
  if (tty_) {
    if (sink) sink(StreamKind::kStdout, std::string_view(buf, n));
    return true;
  }
  current_sink_ = &sink;
  Status fed = demuxer_.Feed(std::string_view(buf, n));
  current_sink_ = nullptr;
  SANDRUN_RETURN_IF_ERROR(fed);
  return true;
}

Status ExecStream::PumpToEnd(const OutputSink& sink, const CallOptions& options) {
  for (;;) {
    SANDRUN_ASSIGN_OR_RETURN(bool more, Pump(sink, options));
    if (!more) return Ok();
  }
}

// ---------------------------------------------------------------------------------------------
// Client

Client::Client(std::shared_ptr<Transport> transport, ClientOptions options)
    : transport_(std::move(transport)), options_(std::move(options)) {}

Result<std::unique_ptr<Client>> Client::FromEnvironment(TransportOptions transport,
                                                        ClientOptions options) {
  SANDRUN_ASSIGN_OR_RETURN(Endpoint endpoint, EndpointFromEnvironment());
  SANDRUN_ASSIGN_OR_RETURN(auto t, CurlTransport::Create(std::move(endpoint), transport));
  return std::make_unique<Client>(std::shared_ptr<Transport>(std::move(t)), std::move(options));
}

CallOptions Client::WithDefaultDeadline(const CallOptions& options) const {
  CallOptions out = options;
  if (out.deadline.is_never()) out.deadline = Deadline::After(options_.default_timeout);
  return out;
}

Result<HttpResponse> Client::Call(const std::string& method, const std::string& path,
                                  std::string body, const CallOptions& options,
                                  const BodySink& sink) {
  SANDRUN_ASSIGN_OR_RETURN(std::string version, ApiVersion(options));
  HttpRequest req;
  req.method = method;
  req.target = "/v" + version + path;
  req.body = std::move(body);
  req.options = options;
  return transport_->Send(req, sink);
}

Result<HttpResponse> Client::CallOk(const std::string& method, const std::string& path,
                                    std::string body, const CallOptions& options, const char* what,
                                    const BodySink& sink) {
  SANDRUN_ASSIGN_OR_RETURN(HttpResponse resp, Call(method, path, std::move(body), options, sink));
  if (!resp.ok()) return HttpError(resp.status, resp.body).Wrap(what);
  return resp;
}

Result<PingInfo> Client::Ping(const CallOptions& options) {
  HttpRequest req;
  req.target = "/_ping";
  req.options = WithDefaultDeadline(options);
  SANDRUN_ASSIGN_OR_RETURN(HttpResponse resp, transport_->Send(req));
  if (!resp.ok()) return HttpError(resp.status, resp.body).Wrap("ping");
  return PingInfo{resp.Header("api-version"), resp.Header("ostype")};
}

Result<VersionInfo> Client::Version(const CallOptions& options) {
  HttpRequest req;
  req.target = "/version";  // unversioned: answers whatever API the engine speaks
  req.options = WithDefaultDeadline(options);
  SANDRUN_ASSIGN_OR_RETURN(HttpResponse resp, transport_->Send(req));
  if (!resp.ok()) return HttpError(resp.status, resp.body).Wrap("version");
  return ParseVersion(resp.body);
}

Result<std::string> Client::ApiVersion(const CallOptions& options) {
  std::lock_guard<std::mutex> lock(version_mu_);
  if (!api_version_.empty()) return api_version_;
  // /_ping answers in about a millisecond with the engine's API version in a header; /version
  // gathers host facts and can take tens. Ask /version only when the header is missing.
  VersionInfo engine;
  auto ping = Ping(options);
  if (ping && !ping->api_version.empty()) {
    engine.api_version = ping->api_version;
  } else {
    SANDRUN_ASSIGN_OR_RETURN(engine, Version(options));
  }
  SANDRUN_ASSIGN_OR_RETURN(api_version_, NegotiateApiVersion(options_.min_api_version,
                                                             options_.max_api_version, engine));
  return api_version_;
}

// ---- images ----

Result<ImageInfo> Client::InspectImage(const std::string& name, const CallOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(HttpResponse resp,
                           CallOk("GET", "/images/" + UrlEncode(name) + "/json", "",
                                  WithDefaultDeadline(options), "image inspect"));
  return ParseImageInspect(resp.body);
}

Result<std::vector<ImageInfo>> Client::ListImages(const CallOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(HttpResponse resp, CallOk("GET", "/images/json", "",
                                                     WithDefaultDeadline(options), "image list"));
  return ParseImageList(resp.body);
}

Result<std::string> Client::ImportImage(const ImportRequest& request, const CallOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(std::string version, ApiVersion(options));
  std::string target = "/v" + version + "/images/create?fromSrc=-&repo=" + UrlEncode(request.repo) +
                       "&tag=" + UrlEncode(request.tag);
  for (const auto& change : request.changes) target += "&changes=" + UrlEncode(change);
  HttpRequest req;
  req.method = "POST";
  req.target = std::move(target);
  req.content_type = "application/x-tar";
  req.body_reader = request.body_reader;
  req.body_size = request.body_size;
  req.options = options;

  // The engine answers 200 and then streams progress; failures arrive as {"error": ...}.
  std::string image_id, failure;
  LineSplitter lines;
  auto on_line = [&](std::string_view line) {
    auto msg = ParseProgressMessage(line);
    if (!msg) return;
    if (!msg->error.empty()) failure = msg->error;
    if (msg->status.rfind("sha256:", 0) == 0) image_id = msg->status;
    if (request.on_progress) request.on_progress(*msg);
  };
  BodySink sink = [&](std::string_view bytes) {
    lines.Feed(bytes, on_line);
    return true;
  };
  SANDRUN_ASSIGN_OR_RETURN(HttpResponse resp, transport_->Send(req, sink));
  lines.Finish(on_line);
  if (!resp.ok()) return HttpError(resp.status, resp.body).Wrap("image import");
  if (!failure.empty()) return Error(ErrorCode::kDockerApi, failure).Wrap("image import");
  if (image_id.empty()) return Error(ErrorCode::kProtocol, "image import: no image id in reply");
  return image_id;
}

Status Client::RemoveImage(const std::string& name, bool force, const CallOptions& options) {
  SANDRUN_RETURN_IF_ERROR(CallOk("DELETE", "/images/" + UrlEncode(name) + (force ? "?force=1" : ""),
                                 "", WithDefaultDeadline(options), "image remove"));
  return Ok();
}

// ---- containers ----

Result<std::string> Client::CreateContainer(const std::string& name, const ContainerSpec& spec,
                                            const CallOptions& options) {
  std::string path = "/containers/create";
  if (!name.empty()) path += "?name=" + UrlEncode(name);
  SANDRUN_ASSIGN_OR_RETURN(HttpResponse resp,
                           CallOk("POST", path, BuildContainerCreateBody(spec),
                                  WithDefaultDeadline(options), "container create"));
  return ParseIdResponse(resp.body);
}

Status Client::StartContainer(const std::string& id, const CallOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(
      HttpResponse resp,
      Call("POST", "/containers/" + UrlEncode(id) + "/start", "", WithDefaultDeadline(options)));
  // 304: already started, which is what the caller wanted.
  if (!resp.ok() && resp.status != 304) {
    return HttpError(resp.status, resp.body).Wrap("container start");
  }
  return Ok();
}

Result<ContainerInfo> Client::InspectContainer(const std::string& id, const CallOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(HttpResponse resp,
                           CallOk("GET", "/containers/" + UrlEncode(id) + "/json", "",
                                  WithDefaultDeadline(options), "container inspect"));
  return ParseContainerInspect(resp.body);
}

Result<std::vector<ContainerSummary>> Client::ListContainers(const std::vector<std::string>& labels,
                                                             bool all, const CallOptions& options) {
  std::string path = "/containers/json?all=" + std::string(all ? "1" : "0");
  if (!labels.empty()) path += "&" + LabelFilterQuery(labels);
  SANDRUN_ASSIGN_OR_RETURN(HttpResponse resp,
                           CallOk("GET", path, "", WithDefaultDeadline(options), "container list"));
  return ParseContainerList(resp.body);
}

Status Client::StopContainer(const std::string& id, int timeout_seconds,
                             const CallOptions& options) {
  CallOptions opts = options;
  if (opts.deadline.is_never()) {
    opts.deadline =
        Deadline::After(options_.default_timeout + std::chrono::seconds(timeout_seconds));
  }
  SANDRUN_ASSIGN_OR_RETURN(
      HttpResponse resp,
      Call("POST", "/containers/" + UrlEncode(id) + "/stop?t=" + std::to_string(timeout_seconds),
           "", opts));
  if (!resp.ok() && resp.status != 304) {  // 304: already stopped
    return HttpError(resp.status, resp.body).Wrap("container stop");
  }
  return Ok();
}

Status Client::KillContainer(const std::string& id, const std::string& signal,
                             const CallOptions& options) {
  SANDRUN_RETURN_IF_ERROR(
      CallOk("POST", "/containers/" + UrlEncode(id) + "/kill?signal=" + UrlEncode(signal), "",
             WithDefaultDeadline(options), "container kill"));
  return Ok();
}

Status Client::RemoveContainer(const std::string& id, bool force, const CallOptions& options) {
  SANDRUN_RETURN_IF_ERROR(
      CallOk("DELETE", "/containers/" + UrlEncode(id) + "?v=1" + (force ? "&force=1" : ""), "",
             WithDefaultDeadline(options), "container remove"));
  return Ok();
}

Status Client::RenameContainer(const std::string& id, const std::string& name,
                               const CallOptions& options) {
  SANDRUN_RETURN_IF_ERROR(CallOk("POST",
                                 "/containers/" + UrlEncode(id) + "/rename?name=" + UrlEncode(name),
                                 "", WithDefaultDeadline(options), "container rename"));
  return Ok();
}

Result<int64_t> Client::WaitContainer(const std::string& id, const CallOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(
      HttpResponse resp,
      CallOk("POST", "/containers/" + UrlEncode(id) + "/wait", "", options, "container wait"));
  return ParseWaitResponse(resp.body);
}

Result<Client::PidsUsage> Client::ContainerPids(const std::string& id, const CallOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(
      HttpResponse resp,
      CallOk("GET", "/containers/" + UrlEncode(id) + "/stats?stream=false&one-shot=true", "",
             WithDefaultDeadline(options), "container stats"));
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(resp.body));
  PidsUsage usage;
  if (const auto* pids = JsonMember(doc, "pids_stats")) {
    usage.current = JsonInt(*pids, "current");
    usage.limit = JsonInt(*pids, "limit");
  }
  return usage;
}

// ---- execs ----

Result<std::string> Client::CreateExec(const std::string& container, const ExecSpec& spec,
                                       const CallOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(
      HttpResponse resp,
      CallOk("POST", "/containers/" + UrlEncode(container) + "/exec", BuildExecCreateBody(spec),
             WithDefaultDeadline(options), "exec create"));
  return ParseIdResponse(resp.body);
}

Status Client::StartExec(const std::string& exec_id, bool tty, const OutputSink& sink,
                         const CallOptions& options) {
  Status stream_error = Ok();
  FrameDemuxer demuxer([&](StreamKind kind, std::string_view bytes) {
    if (sink) sink(kind, bytes);
  });
  BodySink body_sink = [&](std::string_view bytes) {
    if (tty) {
      if (sink) sink(StreamKind::kStdout, bytes);
      return true;
    }
    stream_error = demuxer.Feed(bytes);
    return static_cast<bool>(stream_error);
  };
  auto resp = CallOk("POST", "/exec/" + UrlEncode(exec_id) + "/start",
                     BuildExecStartBody(tty, std::nullopt), options, "exec start", body_sink);
  if (!stream_error) return std::move(stream_error).error();
  if (!resp) return std::move(resp).error();
  if (!tty) SANDRUN_RETURN_IF_ERROR(demuxer.Finish());
  return Ok();
}

Result<std::unique_ptr<ExecStream>> Client::AttachExec(const std::string& exec_id,
                                                       const ExecSpec& spec,
                                                       const CallOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(std::string version, ApiVersion(options));
  HttpRequest req;
  req.method = "POST";
  req.target = "/v" + version + "/exec/" + UrlEncode(exec_id) + "/start";
  req.body = BuildExecStartBody(spec.tty, spec.console_size);
  req.options = WithDefaultDeadline(options);  // bounds the handshake only
  auto raw = transport_->Hijack(req);
  if (!raw) return std::move(raw).error().Wrap("exec attach");
  // ConsoleSize in the start body needs API 1.42; an explicit resize works on every engine. The
  // exec runs from here on: a resize that fails (a short command already ended: "cannot resize
  // a stopped container") leaves the default size and is no reason to drop the stream, whose
  // output and exit status are still to be read.
  if (spec.tty && spec.console_size) {
    (void)ResizeExec(exec_id, spec.console_size->first, spec.console_size->second, options);
  }
  return std::make_unique<ExecStream>(std::move(raw).value(), spec.tty);
}

Result<ExecInfo> Client::InspectExec(const std::string& exec_id, const CallOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(HttpResponse resp,
                           CallOk("GET", "/exec/" + UrlEncode(exec_id) + "/json", "",
                                  WithDefaultDeadline(options), "exec inspect"));
  return ParseExecInspect(resp.body);
}

Status Client::ResizeExec(const std::string& exec_id, unsigned height, unsigned width,
                          const CallOptions& options) {
  SANDRUN_RETURN_IF_ERROR(CallOk("POST",
                                 "/exec/" + UrlEncode(exec_id) + "/resize?h=" +
                                     std::to_string(height) + "&w=" + std::to_string(width),
                                 "", WithDefaultDeadline(options), "exec resize"));
  return Ok();
}

Result<int64_t> Client::WaitExecExit(const std::string& exec_id, const CallOptions& options) {
  CallOptions opts = WithDefaultDeadline(options);
  // The stream can end a moment before the engine records the exit; back off briefly.
  auto delay = std::chrono::microseconds(500);
  for (;;) {
    SANDRUN_ASSIGN_OR_RETURN(ExecInfo info, InspectExec(exec_id, opts));
    if (!info.running && info.exit_code) return *info.exit_code;
    if (opts.cancelled()) return Error(ErrorCode::kCancelled, "cancelled");
    if (opts.deadline.expired()) {
      return Error(ErrorCode::kTimeout,
                   "exec " + exec_id + " still running after its stream ended");
    }
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::microseconds(50000));
  }
}

Result<int64_t> Client::RunExec(const std::string& container, const ExecSpec& spec,
                                const OutputSink& sink, const CallOptions& options) {
  ExecSpec s = spec;
  s.attach_stdin = false;
  SANDRUN_ASSIGN_OR_RETURN(std::string exec_id, CreateExec(container, s, options));
  SANDRUN_RETURN_IF_ERROR(StartExec(exec_id, s.tty, sink, options));
  return WaitExecExit(exec_id, options);
}

}  // namespace sandrun::docker

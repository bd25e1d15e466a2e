// Typed client of the Docker Engine API (v1.41+): images, containers and execs, with typed
// results and errors. Errors distinguish "engine unreachable" (kDockerUnreachable) from "the
// engine said no" (kNotFound / kConflict / kInvalidArgument / kDockerApi with http_status and
// the engine's message).
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(auto client, Client::FromEnvironment());
//   SANDRUN_ASSIGN_OR_RETURN(std::string id, client->CreateContainer("name", spec));
//   SANDRUN_RETURN_IF_ERROR(client->StartContainer(id));
//   ExecSpec exec; exec.cmd = {"/bin/sh", "-lc", "echo hi"};
//   SANDRUN_ASSIGN_OR_RETURN(int64_t code, client->RunExec(id, exec, sink));
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"
#include "sandbox/docker/frame_demuxer.h"
#include "sandbox/docker/models.h"
#include "sandbox/docker/transport.h"

namespace sandrun::docker {

// Receives exec output as it arrives. With a TTY everything arrives as kStdout.
using OutputSink = std::function<void(StreamKind, std::string_view)>;

struct ClientOptions {
  std::string min_api_version = "1.41";  // Docker 20.10
  std::string max_api_version = "1.45";  // newest API whose fields we use unchanged
  // Applied to plain calls whose CallOptions carry no deadline; never to exec streams.
  std::chrono::milliseconds default_timeout{60000};
};

// A running exec attached through a hijacked connection: stdin in, output out.
class ExecStream {
 public:
  ExecStream(std::unique_ptr<RawStream> raw, bool tty);
  Status WriteStdin(std::string_view data, const CallOptions& options = {});
  Status CloseStdin();  // the process sees EOF
  // Reads once and delivers what came to the sink; false once the stream has ended.
  Result<bool> Pump(const OutputSink& sink, const CallOptions& options = {});
  // Pumps until the stream ends.
  Status PumpToEnd(const OutputSink& sink, const CallOptions& options = {});

 private:
  std::unique_ptr<RawStream> raw_;
  bool tty_;
  FrameDemuxer demuxer_;
  const OutputSink* current_sink_ = nullptr;
  bool ended_ = false;
};

struct ImportRequest {
  std::string repo;                  // "sandrun-sandbox"
  std::string tag;                   // "minimal"
  std::vector<std::string> changes;  // Dockerfile instructions: CMD, ENV, LABEL, WORKDIR ...
  std::function<Result<size_t>(char*, size_t)> body_reader;  // the rootfs tar
  int64_t body_size = -1;
  std::function<void(const ProgressMessage&)> on_progress;  // optional
};

// The pid inside its container of a host process (the innermost NSpid in /proc/<pid>/status).
// Only where the engine runs on this machine: kNotFound otherwise, once the process is gone, or
// when it is not in a nested pid namespace.
Result<long> InContainerPid(int64_t host_pid);

class Client {
 public:
  explicit Client(std::shared_ptr<Transport> transport, ClientOptions options = {});
  // A client for DOCKER_HOST (default unix:///var/run/docker.sock).
  static Result<std::unique_ptr<Client>> FromEnvironment(TransportOptions transport = {},
                                                         ClientOptions options = {});

  const Endpoint& endpoint() const { return transport_->endpoint(); }

  // ---- engine ----
  Result<PingInfo> Ping(const CallOptions& options = {});
  Result<VersionInfo> Version(const CallOptions& options = {});
  // The negotiated API version ("1.41"): asked once (from /_ping's API-Version header), then
  // cached. An engine whose minimum is above max_api_version answers later calls with a clear
  // "client version too old" error.
  Result<std::string> ApiVersion(const CallOptions& options = {});

  // ---- images ----
  Result<ImageInfo> InspectImage(const std::string& name, const CallOptions& options = {});
  Result<std::vector<ImageInfo>> ListImages(const CallOptions& options = {});
  // POST /images/create?fromSrc=- : imports a rootfs tar; returns the new image id.
  Result<std::string> ImportImage(const ImportRequest& request, const CallOptions& options = {});
  Status RemoveImage(const std::string& name, bool force, const CallOptions& options = {});

  // ---- containers ----
  Result<std::string> CreateContainer(const std::string& name, const ContainerSpec& spec,
                                      const CallOptions& options = {});
  Status StartContainer(const std::string& id, const CallOptions& options = {});
  Result<ContainerInfo> InspectContainer(const std::string& id, const CallOptions& options = {});
  // Containers carrying every one of `labels` ("k=v" or "k"); all states when `all`.
  Result<std::vector<ContainerSummary>> ListContainers(const std::vector<std::string>& labels,
                                                       bool all, const CallOptions& options = {});
  Status StopContainer(const std::string& id, int timeout_seconds, const CallOptions& options = {});
  Status KillContainer(const std::string& id, const std::string& signal = "SIGKILL",
                       const CallOptions& options = {});
  Status RemoveContainer(const std::string& id, bool force, const CallOptions& options = {});
  // POST /containers/{id}/rename?name=: kConflict when the name is taken.
  Status RenameContainer(const std::string& id, const std::string& name,
                         const CallOptions& options = {});
  // Waits for the container to stop; returns its exit status.
  Result<int64_t> WaitContainer(const std::string& id, const CallOptions& options = {});
  // Processes in the container and its pids limit (0 = none), from one-shot stats.
  struct PidsUsage {
    int64_t current = 0;
    int64_t limit = 0;
  };
  Result<PidsUsage> ContainerPids(const std::string& id, const CallOptions& options = {});

  // ---- execs ----
  Result<std::string> CreateExec(const std::string& container, const ExecSpec& spec,
                                 const CallOptions& options = {});
  // Starts a non-interactive exec and streams its output to `sink` until it ends. No stdin.
  Status StartExec(const std::string& exec_id, bool tty, const OutputSink& sink,
                   const CallOptions& options = {});
  // Starts an exec over a hijacked connection (stdin, TTY).
  Result<std::unique_ptr<ExecStream>> AttachExec(const std::string& exec_id, const ExecSpec& spec,
                                                 const CallOptions& options = {});
  Result<ExecInfo> InspectExec(const std::string& exec_id, const CallOptions& options = {});
  Status ResizeExec(const std::string& exec_id, unsigned height, unsigned width,
                    const CallOptions& options = {});
  // After the output stream ended: the exit code, waiting out the window in which the engine
  // still reports Running.
  Result<int64_t> WaitExecExit(const std::string& exec_id, const CallOptions& options = {});
  // Create + start + wait: runs one command, streaming its output; returns the exit code.
  Result<int64_t> RunExec(const std::string& container, const ExecSpec& spec,
                          const OutputSink& sink, const CallOptions& options = {});

 private:
  Result<HttpResponse> Call(const std::string& method, const std::string& path, std::string body,
                            const CallOptions& options, const BodySink& sink = nullptr);
  // Call, and turn a non-2xx status into an Error naming `what`.
  Result<HttpResponse> CallOk(const std::string& method, const std::string& path, std::string body,
                              const CallOptions& options, const char* what,
                              const BodySink& sink = nullptr);
  CallOptions WithDefaultDeadline(const CallOptions& options) const;

  std::shared_ptr<Transport> transport_;
  ClientOptions options_;
  std::mutex version_mu_;
  std::string api_version_;  // guarded by version_mu_; empty until negotiated
};

}  // namespace sandrun::docker

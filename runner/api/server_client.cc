#include "runner/api/server_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <map>

#include "runner/api/exec_stream.h"
#include "runner/api/tool_call.h"
#include "runner/config/state_dir.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::api {
namespace {

// The server's socket, connected.
Result<UniqueFd> ConnectTo(const std::string& socket) {
  sockaddr_un addr{};
  if (socket.size() >= sizeof addr.sun_path) {
    return Error(ErrorCode::kInvalidArgument, "socket path too long: " + socket);
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error::FromErrno(errno, "socket");
  addr.sun_family = AF_UNIX;
  socket.copy(addr.sun_path, sizeof addr.sun_path - 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Error::FromErrno(errno, "cannot connect to the server at " + socket);
  }
  return fd;
}

// Writes the whole request. A server that refuses (busy, body too large) answers and closes
// without reading on: its answer is still there to read, so a closed connection is no error here.
Status SendRequest(int fd, std::string_view out) {
  while (!out.empty()) {
    ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) break;
    if (n < 0) return Error::FromErrno(errno, "writing to the server");
    out.remove_prefix(static_cast<size_t>(n));
  }
  return Ok();
}

// The server speaks plain HTTP/1.1 on a local socket: a few lines of our own are enough, and a
// one-shot CLI call then never loads libcurl (and its ~30 libraries) at all.
Result<ServerReply> Exchange(const std::string& socket, const std::string& request,
                             std::chrono::milliseconds timeout) {
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd fd, ConnectTo(socket));
  SANDRUN_RETURN_IF_ERROR(SendRequest(fd.get(), request));
  std::string in;
  char buf[65536];
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return Error(ErrorCode::kTimeout, "the server did not answer in time");
    pollfd p{fd.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Error::FromErrno(errno, "poll");
    if (ready == 0) continue;
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    // A refusing server closes without reading our request: the kernel then reports a reset
    // after its reply.
    if (n < 0 && errno == ECONNRESET && !in.empty()) break;
    if (n < 0) return Error::FromErrno(errno, "reading from the server");
    if (n == 0) break;  // Connection: close: the reply ends with the connection
    in.append(buf, static_cast<size_t>(n));
  }
  size_t head_end = in.find("\r\n\r\n");
  size_t space = in.find(' ');
  int status = 0;
  if (head_end == std::string::npos || space == std::string::npos ||
      std::from_chars(in.data() + space + 1, in.data() + in.size(), status).ec != std::errc()) {
    return Error(ErrorCode::kProtocol, "the server's reply is not HTTP");
  }
  return ServerReply{status, in.substr(head_end + 4)};
}

std::string RequestHead(const std::string& method, const std::string& path,
                        const std::map<std::string, std::string>& headers, size_t body_size) {
  std::string head = method + " " + path + " HTTP/1.1\r\nHost: sandrun\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) {
    // A line break in a value would smuggle in another header: such values are not sent.
    if (value.empty() || value.find_first_of("\r\n") != std::string::npos) continue;
    head += name + ": " + value + "\r\n";
  }
  if (method == "POST" || method == "PATCH" || body_size > 0) {
    head +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body_size) + "\r\n";
  }
  return head + "\r\n";
}

}  // namespace

std::string ServerSocketPath(const GlobalOptions& global, const std::string& state_dir) {
  return global.server.empty() ? state_dir + "/sandrun.sock" : global.server;
}

bool ServerAnswers(const std::string& socket) {
  struct stat st {};
  if (::stat(socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  auto reply = Exchange(socket, RequestHead("GET", "/healthz", {}, 0), std::chrono::seconds(2));
  return reply && (reply->status == 200 || reply->status == 503);
}

std::string LiveServer(const GlobalOptions& global) {
  auto state_dir = config::StateDirPath();
  if (!state_dir) return "";
  std::string socket = ServerSocketPath(global, *state_dir);
  return ServerAnswers(socket) ? socket : "";
}

Result<ServerReply> RequestServer(const std::string& socket, const std::string& method,
                                  const std::string& path, const std::string& body,
                                  const GlobalOptions& global) {
  std::map<std::string, std::string> headers = {{"X-Sandrun-Agent", global.agent},
                                                {"X-Sandrun-Session", global.session},
                                                {"X-Sandrun-Workspace", global.workspace}};
  // Long: a poll may wait up to 2 minutes and a foreground exec for its whole timeout.
  return Exchange(socket, RequestHead(method, path, headers, body.size()) + body,
                  std::chrono::hours(24));
}

Result<StreamedReply> RequestStream(const std::string& socket, const std::string& request,
                                    const std::atomic<bool>* stop, const EventFn& on_event) {
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd fd, ConnectTo(socket));
  SANDRUN_RETURN_IF_ERROR(SendRequest(fd.get(), request));
  StreamedReply reply;
  std::string in;
  bool head_read = false;
  char buf[65536];
  for (;;) {
    if (stop != nullptr && stop->load()) return reply;
    pollfd p{fd.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, 200);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Error::FromErrno(errno, "poll");
    if (ready == 0) continue;
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ECONNRESET && head_read && !reply.stream) n = 0;  // a refusal's end
    if (n < 0) return Error::FromErrno(errno, "reading from the server");
    if (n == 0) {
      if (!head_read) return Error(ErrorCode::kProtocol, "the server's reply is not HTTP");
      if (!reply.stream) reply.body = std::move(in);
      return reply;  // the reply (or the stream) ends with the connection
    }
    in.append(buf, static_cast<size_t>(n));
    if (!head_read) {
      size_t end = in.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      size_t space = in.find(' ');
      if (space == std::string::npos || space > end ||
          std::from_chars(in.data() + space + 1, in.data() + end, reply.status).ec != std::errc()) {
        return Error(ErrorCode::kProtocol, "the server's reply is not HTTP");
      }
      std::string head = Lower(in.substr(0, end));
      reply.stream = reply.status == 200 &&
                     head.find("\r\ncontent-type: text/event-stream") != std::string::npos;
      head_read = true;
      in.erase(0, end + 4);
    }
    if (!reply.stream) continue;  // read the reply to its end
    for (size_t end; (end = in.find("\n\n")) != std::string::npos;) {
      std::string type, data;
      std::string_view block(in.data(), end);
      while (!block.empty()) {
        size_t nl = block.find('\n');
        std::string_view line = block.substr(0, nl);
        if (line.rfind("event: ", 0) == 0) type = line.substr(7);
        if (line.rfind("data: ", 0) == 0) {
          data += (data.empty() ? "" : "\n") + std::string(line.substr(6));
        }
        block = nl == std::string_view::npos ? std::string_view() : block.substr(nl + 1);
      }
      in.erase(0, end + 2);
      if (type == "ping") continue;
      if (!on_event(type, data)) return reply;
    }
  }
}

Status FollowEvents(const std::string& socket, const GlobalOptions& global,
                    const std::atomic<bool>* stop, const EventFn& on_event) {
  const std::string head =
      RequestHead("GET", "/v1/events",
                  {{"X-Sandrun-Agent", global.agent}, {"X-Sandrun-Session", global.session}}, 0);
  SANDRUN_ASSIGN_OR_RETURN(StreamedReply reply, RequestStream(socket, head, stop, on_event));
  if (reply.stream || (stop != nullptr && stop->load())) return Ok();
  return Error(ErrorCode::kProtocol, "the server refused the event stream: " + reply.body);
}

Result<StreamedReply> PostMcpToServer(const std::string& socket, const std::string& body,
                                      const GlobalOptions& global, const std::atomic<bool>* stop,
                                      const EventFn& on_event) {
  const std::string head = RequestHead("POST", "/mcp",
                                       {{"Accept", "application/json, text/event-stream"},
                                        {"X-Sandrun-Agent", global.agent},
                                        {"X-Sandrun-Session", global.session},
                                        {"X-Sandrun-Workspace", global.workspace}},
                                       body.size());
  return RequestStream(socket, head + body, stop, on_event);
}

Result<ServerReply> PostToServer(const std::string& socket, const std::string& path,
                                 const std::string& body, const GlobalOptions& global) {
  return RequestServer(socket, "POST", path, body, global);
}

int ExitCodeFor(const ServerReply& reply) {
  if (reply.status >= 200 && reply.status < 300) return kExitOk;
  if (reply.status >= 400 && reply.status < 500) return kExitRefused;
  return kExitFailure;
}

int PrintServerReply(const Result<ServerReply>& reply) {
  if (!reply) {
    std::printf(
        "%s\n",
        RenderToolError(
            Error(reply.error().code, reply.error().ToString()).WithWire("server-unreachable"))
            .c_str());
    return kExitFailure;
  }
  std::printf("%s\n", reply->body.c_str());
  return ExitCodeFor(*reply);
}

}  // namespace sandrun::api

namespace sandrun::api {
namespace {

// Stdin frames waiting for the socket: the client never blocks on a write, so it always reads
// the command's output (a command that writes without reading its stdin cannot deadlock us).
constexpr size_t kMaxOutbound = 256 * 1024;

}  // namespace

Result<ExecReport> ExecThroughServer(const std::string& socket, const std::string& body,
                                     const GlobalOptions& global, const std::string& cwd,
                                     const ExecStreamIo& io) {
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd fd, ConnectTo(socket));
  std::map<std::string, std::string> headers = {{"X-Sandrun-Agent", global.agent},
                                                {"X-Sandrun-Session", global.session},
                                                {"X-Sandrun-Workspace", global.workspace},
                                                {"X-Sandrun-Cwd", cwd},
                                                {"Upgrade", kExecUpgrade}};
  std::string head = RequestHead("POST", "/v1/exec", headers, body.size());
  // Connection: Upgrade replaces the head's Connection: close.
  head.replace(head.find("Connection: close"), 17, "Connection: Upgrade");
  std::string outbound = head + body;
  bool stdin_open = io.stdin_fd >= 0;
  bool cancel_sent = false;
  bool upgraded = false;
  std::string in;
  FrameReader frames(kMaxServerFrame);
  char buf[65536];
  for (;;) {
    if (!cancel_sent && io.cancelled != nullptr && io.cancelled->load()) {
      if (upgraded) outbound += Frame('C', "");
      cancel_sent = true;
      // Before the upgrade there is nothing to cancel yet: the frame follows it.
    }
    pollfd p[2] = {{fd.get(), static_cast<short>(POLLIN | (outbound.empty() ? 0 : POLLOUT)), 0},
                   {io.stdin_fd, POLLIN, 0}};
    bool want_stdin = upgraded && stdin_open && outbound.size() < kMaxOutbound;
    int ready = ::poll(p, want_stdin ? 2 : 1, 50);
    if (ready < 0 && errno != EINTR) return Error::FromErrno(errno, "poll");
    if (ready <= 0) continue;
    if (p[0].revents & POLLOUT) {
      ssize_t n = ::send(fd.get(), outbound.data(), outbound.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) outbound.erase(0, static_cast<size_t>(n));
      // A write error: the read side tells what happened (a reply, or the end).
    }
    if (want_stdin && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n =
          ::read(io.stdin_fd, buf, kMaxClientFrame < sizeof buf ? kMaxClientFrame : sizeof buf);
      if (n > 0) {
        outbound += Frame('I', std::string_view(buf, static_cast<size_t>(n)));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        outbound += Frame('E', "");
        stdin_open = false;
      }
    }
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0 && !upgraded) {
      // Refused before the upgrade (busy, too large, not found): an HTTP reply, then the end.
      size_t head_end = in.find("\r\n\r\n");
      size_t space = in.find(' ');
      int status = 0;
      if (head_end == std::string::npos || space == std::string::npos ||
          std::from_chars(in.data() + space + 1, in.data() + in.size(), status).ec != std::errc()) {
        return Error(ErrorCode::kProtocol, "the server closed the connection without a reply");
      }
      std::string reply = in.substr(head_end + 4);
      auto doc = ParseJson(reply);
      const auto* error = doc ? JsonMember(*doc, "error") : nullptr;
      // The server's refusal as it rendered it: its wire code and message, unchanged.
      Error e = Error(status >= 500 ? ErrorCode::kInternal : ErrorCode::kRefused,
                      error ? JsonString(*error, "message")
                            : "the server answered " + std::to_string(status))
                    .WithWire(error ? JsonString(*error, "code") : "server-error");
      ExecReport report = ReportError(e, status >= 500);
      report.json = reply;
      return report;
    }
    if (n <= 0) return Error(ErrorCode::kProtocol, "the server closed the exec stream early");
    if (!upgraded) {
      in.append(buf, static_cast<size_t>(n));
      size_t head_end = in.find("\r\n\r\n");
      if (head_end == std::string::npos) continue;
      if (in.rfind("HTTP/1.1 101", 0) != 0) continue;  // a refusal: read it to the end
      upgraded = true;
      frames.Feed(std::string_view(in).substr(head_end + 4));
      if (cancel_sent) outbound += Frame('C', "");
      if (!stdin_open) outbound += Frame('E', "");
    } else {
      frames.Feed(std::string_view(buf, static_cast<size_t>(n)));
    }
    while (auto item = frames.Next()) {
      switch (item->type) {
        case 'O':
        case 'R':
          if (io.output) io.output(item->type == 'R', item->payload);
          break;
        case 'W':
          PrintWarning(item->payload);
          break;
        case 'X':
          return ExecReportFromJson(item->payload);
        default:
          return Error(ErrorCode::kProtocol, "the server sent an unknown frame");
      }
    }
    if (frames.invalid()) return Error(ErrorCode::kProtocol, "the server sent an oversized frame");
  }
}

}  // namespace sandrun::api

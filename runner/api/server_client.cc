#include "runner/api/server_client.h"

#include <sys/stat.h>

#include <chrono>

#include "sandbox/docker/transport.h"

namespace sandrun::api {
namespace {

Result<std::unique_ptr<docker::CurlTransport>> TransportTo(const std::string& socket) {
  docker::Endpoint endpoint;
  endpoint.socket_path = socket;
  return docker::CurlTransport::Create(endpoint, {std::chrono::milliseconds(1000)});
}

}  // namespace

std::string ServerSocketPath(const GlobalOptions& global, const std::string& state_dir) {
  return global.server.empty() ? state_dir + "/sandrun.sock" : global.server;
}

bool ServerAnswers(const std::string& socket) {
  struct stat st {};
  if (::stat(socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  auto transport = TransportTo(socket);
  if (!transport) return false;
  docker::HttpRequest req;
  req.target = "/healthz";
  req.options.deadline = Deadline::After(std::chrono::seconds(2));
  auto resp = (*transport)->Send(req);
  return resp && resp->ok();
}

Result<ServerReply> PostToServer(const std::string& socket, const std::string& path,
                                 const std::string& body, const GlobalOptions& global) {
  SANDRUN_ASSIGN_OR_RETURN(auto transport, TransportTo(socket));
  docker::HttpRequest req;
  req.method = "POST";
  req.target = path;
  req.body = body;
  req.headers = {{"X-Sandrun-Agent", global.agent},
                 {"X-Sandrun-Session", global.session},
                 {"X-Sandrun-Workspace", global.workspace}};
  SANDRUN_ASSIGN_OR_RETURN(docker::HttpResponse resp, transport->Send(req));
  return ServerReply{resp.status, std::move(resp.body)};
}

int ExitCodeFor(const ServerReply& reply) {
  if (reply.status >= 200 && reply.status < 300) return kExitOk;
  if (reply.status >= 400 && reply.status < 500) return kExitRefused;
  return kExitFailure;
}

}  // namespace sandrun::api

// Who makes a request to `sandrun serve`, and whether it may (issue 14): the front end's half of
// the multi-tenant server. The runtime below only ever sees the Principal this resolves.
//
//   - A request with `Authorization: Bearer <secret>`, every TCP request, and (with
//     --require-tokens) every unix-socket request is authenticated against tokens.json
//     (runner/auth/tokens.h): 401 with `WWW-Authenticate: Bearer` when the token is missing,
//     invalid, expired or revoked. The principal is the token's tenant and role, the token's name
//     as sender and token_name; an admin names the tenant it acts in with X-Sandrun-Tenant
//     (default ""), anyone else may only repeat its own.
//   - Without a token, a unix-socket peer of the server's uid (SO_PEERCRED) is the local admin of
//     tenant "" (today's paths, its own workspace and cwd headers); a peer of another uid (root:
//     the socket is 0600) is an agent of tenant "" that cannot choose directories.
//   - X-Sandrun-Agent (default "main") must be one of the token's agents (403); the ids are
//     checked as everywhere (config/ids.h: 400).
//   - A token caller never names a host path: X-Sandrun-Workspace and X-Sandrun-Cwd are refused
//     (403). Its tenant's workspaces are the runtime's to choose.
//   - Roles (403 otherwise): tool calls, sessions and events need any role; listing and
//     answering approvals, listing and removing sandboxes, and /metrics need operator or admin. An
//     agent token can never answer an approval.
//
// tokens.json is read at start (a file that does not load stops the server), again on Reload
// (SIGHUP) and whenever it changed on disk (its inode, size or mtime): a revocation takes effect
// at the next request, without a signal. A reload that fails keeps the tokens it had.
//
// Pattern of use (serve.cc):
//   ServerAuth auth(auth::TokensPath(state_dir), options.require_tokens);
//   SANDRUN_RETURN_IF_ERROR(auth.Load());
//   server.SetGate([&](const HttpRequestInfo& r) { return auth.Refusal(r); });
//   auto who = auth.Authorize(r);   // std::variant<Principal, HttpReply>
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include "runner/api/http_server.h"
#include "runner/api/runtime.h"
#include "runner/auth/tokens.h"
#include "sandbox/base/result.h"

namespace sandrun::api {

class ServerAuth {
 public:
  ServerAuth(std::string tokens_path, bool require_tokens, uid_t server_uid);

  // Reads tokens.json; an unusable file is an error (warnings go to stderr).
  Status Load();
  // Reads it again (SIGHUP); on error the tokens already loaded stay in force.
  Status Reload();

  // The principal the request speaks for, or the refusal to send (401, 403, 400) for this
  // request's path and headers.
  std::variant<Principal, HttpReply> Authorize(const HttpRequestInfo& r);
  // Authorize's refusal alone, for the server's gate (before any route, stream or upgrade).
  std::optional<HttpReply> Refusal(const HttpRequestInfo& r);

 private:
  struct FileStamp {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = -1;
    int64_t mtime_ns = -1;
    bool operator==(const FileStamp&) const = default;
  };
  std::shared_ptr<const auth::TokensFile> Current();
  Status LoadLocked(const FileStamp& stamp);
  std::optional<FileStamp> Stamp() const;

  const std::string path_;
  const bool require_tokens_;
  const uid_t server_uid_;
  std::mutex mu_;
  std::shared_ptr<const auth::TokensFile> tokens_;  // guarded by mu_
  FileStamp loaded_;                                // guarded by mu_
};

}  // namespace sandrun::api

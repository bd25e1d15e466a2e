#include "runner/api/server_auth.h"

#include <sys/stat.h>

#include <utility>

#include "runner/api/cli_context.h"
#include "runner/api/exec_inputs.h"
#include "runner/config/ids.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/clock.h"
#include "sandbox/base/strings.h"

namespace sandrun::api {
namespace {

std::string HeaderOf(const HttpRequestInfo& r, const char* name, const std::string& fallback) {
  auto it = r.headers.find(name);
  return it == r.headers.end() || it->second.empty() ? fallback : it->second;
}
bool HasHeader(const HttpRequestInfo& r, const char* name) { return r.headers.count(name) > 0; }

HttpReply Refuse(int status, const std::string& code, const std::string& message) {
  return JsonReply(status, RenderToolError(Error::Refusal(code, message)));
}

// RFC 6750 §3: a request without credentials gets the bare challenge, one with a bad token
// error="invalid_token".
HttpReply Unauthorized(const std::string& message, bool presented) {
  HttpReply reply = Refuse(401, "unauthorized",
                           message +
                               ": this server needs a valid token "
                               "(Authorization: Bearer <secret>)");
  reply.headers.emplace_back(
      "WWW-Authenticate",
      presented ? "Bearer realm=\"sandrun\", error=\"invalid_token\"" : "Bearer realm=\"sandrun\"");
  return reply;
}

// Listing and answering approvals, session state and reading the metrics are an operator's.
// An agent may read one approval (its own agent's: the runtime checks).
bool NeedsOperator(const HttpRequestInfo& r) {
  return r.path == "/v1/approvals" ||
         (r.path.rfind("/v1/approvals/", 0) == 0 && r.method != "GET") ||
         r.path.rfind("/v1/agents/", 0) == 0 || r.path == "/v1/sandboxes" ||
         r.path.rfind("/v1/sandboxes/", 0) == 0 || r.path == "/metrics";
}

// The secret of `Authorization: Bearer <secret>`; nullopt when the header is absent, "" when it
// is not a bearer credential.
std::optional<std::string> BearerOf(const HttpRequestInfo& r) {
  auto it = r.headers.find("authorization");
  if (it == r.headers.end()) return std::nullopt;
  std::string_view v = it->second;
  constexpr std::string_view kScheme = "bearer ";
  if (v.size() <= kScheme.size() || Lower(std::string(v.substr(0, kScheme.size()))) != kScheme) {
    return std::string();
  }
  return Trim(std::string(v.substr(kScheme.size())));
}

// The unix-socket peer without a token (see the header).
Principal LocalPrincipal(const HttpRequestInfo& r, uid_t server_uid) {
  Principal who;
  who.provider = "api";
  who.sender = UserName(r.peer_uid);
  who.uid = r.peer_uid;
  who.role = r.peer_uid == server_uid ? "admin" : "agent";
  who.agent = HeaderOf(r, "x-sandrun-agent", "main");
  who.session = HeaderOf(r, "x-sandrun-session", "main");
  std::string workspace = HeaderOf(r, "x-sandrun-workspace", "");
  if (!workspace.empty() && r.peer_uid == server_uid) who.workspace_root = workspace;
  return who;
}

}  // namespace

ServerAuth::ServerAuth(std::string tokens_path, bool require_tokens, uid_t server_uid)
    : path_(std::move(tokens_path)), require_tokens_(require_tokens), server_uid_(server_uid) {}

std::optional<ServerAuth::FileStamp> ServerAuth::Stamp() const {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{st.st_dev, st.st_ino, st.st_size,
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

Status ServerAuth::LoadLocked(const FileStamp& stamp) {
  std::vector<std::string> warnings;
  auto loaded = auth::LoadTokens(path_, &warnings);
  for (const std::string& w : warnings) PrintWarning(w);
  if (!loaded) return std::move(loaded).error();
  tokens_ = std::make_shared<const auth::TokensFile>(std::move(loaded).value());
  loaded_ = stamp;
  return Ok();
}

Status ServerAuth::Load() {
  std::lock_guard<std::mutex> lock(mu_);
  return LoadLocked(Stamp().value_or(FileStamp{}));
}

Status ServerAuth::Reload() { return Load(); }

std::shared_ptr<const auth::TokensFile> ServerAuth::Current() {
  FileStamp now = Stamp().value_or(FileStamp{});
  std::lock_guard<std::mutex> lock(mu_);
  if (!(now == loaded_)) {
    // A file that no longer loads keeps the tokens in force; the next change is tried again.
    if (Status ok = LoadLocked(now); !ok) {
      PrintWarning("tokens not reloaded (the ones loaded stay in force): " + ok.error().ToString());
      loaded_ = now;
    }
  }
  return tokens_;
}

std::variant<Principal, HttpReply> ServerAuth::Authorize(const HttpRequestInfo& r) {
  std::optional<std::string> bearer = BearerOf(r);
  const bool needs_token = r.transport != "unix" || require_tokens_ || bearer.has_value();
  if (!needs_token) {
    Principal who = LocalPrincipal(r, server_uid_);
    if (who.role != "admin" && NeedsOperator(r)) {
      return Refuse(403, "forbidden",
                    "only the server's own user (uid " + std::to_string(server_uid_) +
                        ") may manage approvals and sandboxes and read the metrics here");
    }
    return who;
  }
  std::shared_ptr<const auth::TokensFile> tokens = Current();
  auto identity =
      auth::Authenticate(tokens ? *tokens : auth::TokensFile{}, bearer.value_or(""), UnixMillis());
  if (!identity) return Unauthorized(identity.error().message, bearer.has_value());

  Principal who;
  who.provider = "api";
  who.token_name = identity->token_name;
  who.sender = identity->token_name;
  who.agent_globs = identity->agents;
  who.role = std::string(auth::RoleName(identity->role));
  who.tenant = identity->tenant;
  if (HasHeader(r, "x-sandrun-tenant")) {
    const std::string tenant = HeaderOf(r, "x-sandrun-tenant", "");
    if (!tenant.empty()) {
      if (auto bad = config::TenantIdError(tenant)) return Refuse(400, "invalid-request", *bad);
    }
    if (identity->role == auth::Role::kAdmin) {
      who.tenant = tenant;
    } else if (tenant != identity->tenant) {
      return Refuse(403, "forbidden",
                    "this token acts for tenant \"" + identity->tenant +
                        "\" only (X-Sandrun-Tenant is an admin's)");
    }
  } else if (identity->role == auth::Role::kAdmin) {
    who.tenant = "";
  }
  who.agent = HeaderOf(r, "x-sandrun-agent", "main");
  who.session = HeaderOf(r, "x-sandrun-session", "main");
  if (auto bad = config::CallerIdsError(who.agent, who.session)) {
    return Refuse(400, "invalid-request", *bad);
  }
  if (!auth::AgentAllowed(*identity, who.agent)) {
    return Refuse(403, "forbidden",
                  "token " + identity->token_name + " may not act for agent " + who.agent);
  }
  if (HasHeader(r, "x-sandrun-workspace") || HasHeader(r, "x-sandrun-cwd")) {
    return Refuse(403, "forbidden",
                  "X-Sandrun-Workspace and X-Sandrun-Cwd are the local user's: a token caller's "
                  "workspace is its tenant's (nothing was run)");
  }
  if (identity->role == auth::Role::kAgent && NeedsOperator(r)) {
    return Refuse(403, "forbidden",
                  "an agent token cannot manage approvals, sessions or sandboxes or read the "
                  "metrics (it needs an operator or admin token)");
  }
  return who;
}

std::optional<HttpReply> ServerAuth::Refusal(const HttpRequestInfo& r) {
  auto decided = Authorize(r);
  if (auto* refusal = std::get_if<HttpReply>(&decided)) return std::move(*refusal);
  return std::nullopt;
}

}  // namespace sandrun::api

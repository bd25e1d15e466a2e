// API tokens of the multi-tenant server, $SANDRUN_HOME/tokens.json: who may call (tenant, role,
// agents), never the secrets themselves.
//
//   { "version": 1,
//     "tokens": [ { "name": "ci-bot", "tenant": "acme", "role": "agent",
//                   "agents": ["main", "build-*"], "createdAt": 1790000000000,
//                   "expiresAt": 1790600000000,      // 0 or absent: never
//                   "revokedAt": 0,                  // 0 or absent: not revoked
//                   "sha256": "<64 hex digits>" } ] }
//
// A secret is "sandrun_" + 64 hex digits (256 bits from getrandom): printed once by `token
// create`, stored only as its SHA-256 (a secret of that entropy needs no salt or slow hash; a
// stolen file gives no way to call). Authenticate hashes the presented secret and compares it
// with every stored digest in constant time (no early exit), so timing says nothing about which
// or how many bytes matched. The file is written through the state-file writer (state_file.h:
// 0600, atomic, locked, never through a symlink) and parsed strictly: an unknown key, a bad
// value or a duplicate name is an error, never a token that grants more than was written.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(auth::NewToken t, auth::CreateToken(path, spec, UnixMillis()));
//   std::cout << t.secret << "\n";
//   SANDRUN_ASSIGN_OR_RETURN(auth::TokensFile f, auth::LoadTokens(path));
//   Result<auth::Identity> who = auth::Authenticate(f, bearer, UnixMillis());
//   if (who && auth::AgentAllowed(*who, agent)) ...
#pragma once

#include <rapidjson/rapidjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::auth {

enum class Role { kAgent, kOperator, kAdmin };
std::string_view RoleName(Role role);
std::optional<Role> RoleFromName(std::string_view name);

struct Token {
  std::string name;    // [a-z0-9][a-z0-9._-]{0,63}, unique in the file
  std::string tenant;  // a tenant id (config/ids.h); "" only for an admin token
  Role role = Role::kAgent;
  std::vector<std::string> agents = {"*"};  // agent ids or globs ('*', '?') it may act for
  int64_t created_ms = 0;
  int64_t expires_ms = 0;  // 0: never
  int64_t revoked_ms = 0;  // 0: not revoked
  std::string sha256;      // lowercase hex digest of the secret
  bool operator==(const Token&) const = default;
};

struct TokensFile {
  std::vector<Token> tokens;
  bool operator==(const TokensFile&) const = default;
};

std::string TokensPath(const std::string& state_dir);
Result<TokensFile> ParseTokens(std::string_view text, const std::string& path,
                               std::vector<std::string>* warnings);
std::string SerializeTokens(const TokensFile& file);

// The members of a token other than its digest (name, tenant, role, agents, createdAt,
// expiresAt, revokedAt) into an open JSON object: for the file and for listings alike.
template <typename Writer>
void WriteTokenFields(Writer& w, const Token& t) {
  auto str = [&w](std::string_view s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  };
  w.Key("name");
  str(t.name);
  w.Key("tenant");
  str(t.tenant);
  w.Key("role");
  str(RoleName(t.role));
  w.Key("agents");
  w.StartArray();
  for (const std::string& a : t.agents) str(a);
  w.EndArray();
  w.Key("createdAt");
  w.Int64(t.created_ms);
  w.Key("expiresAt");
  w.Int64(t.expires_ms);
  w.Key("revokedAt");
  w.Int64(t.revoked_ms);
}

// A missing file has no tokens. Errors: unusable or corrupt file (moved aside, as the approvals
// file), a file others can write.
Result<TokensFile> LoadTokens(const std::string& path,
                              std::vector<std::string>* warnings = nullptr);

struct TokenSpec {
  std::string tenant;
  Role role = Role::kAgent;
  std::string name;                 // "" : "tok-" + 8 random hex digits
  std::vector<std::string> agents;  // empty: {"*"}
  int64_t ttl_ms = 0;               // 0: never expires
};
struct NewToken {
  Token token;
  std::string secret;  // shown once; not stored
};
// Validates `spec` (tenant id, name, agent globs, ttl >= 0; an admin may have tenant "", others
// not) and adds the token; a name already in the file (revoked or not) is refused (kConflict).
Result<NewToken> CreateToken(const std::string& path, const TokenSpec& spec, int64_t now_ms);
// Marks the token revoked (kept, so its name is not reused); unknown name: kNotFound. Revoking a
// revoked token is a no-op that returns it.
Result<Token> RevokeToken(const std::string& path, std::string_view name, int64_t now_ms);

// Who a valid secret belongs to.
struct Identity {
  std::string token_name;
  std::string tenant;
  Role role = Role::kAgent;
  std::vector<std::string> agents;
};
// The token whose digest matches `secret`. Errors (refusals, wire "unauthorized", HTTP 401),
// with a message that names no stored token: "missing token", "invalid token", "token expired",
// "token revoked".
Result<Identity> Authenticate(const TokensFile& file, std::string_view secret, int64_t now_ms);
// Whether the identity may act for `agent` (its agents globs).
bool AgentAllowed(const Identity& who, std::string_view agent);

// The glob rule for agents: '*' any run of characters, '?' one character, nothing else special.
bool AgentGlobMatch(std::string_view pattern, std::string_view agent);

}  // namespace sandrun::auth

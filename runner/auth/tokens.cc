#include "runner/auth/tokens.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <array>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "runner/config/ids.h"
#include "runner/config/json_lines.h"
#include "runner/config/state_file.h"
#include "sandbox/base/json.h"
#include "sandbox/base/sha256.h"
#include "sandbox/base/strings.h"
#include "sandbox/os/random.h"

namespace sandrun::auth {
namespace {

using rapidjson::Value;

constexpr std::string_view kSecretPrefix = "sandrun_";
constexpr size_t kSecretHexDigits = 64;
constexpr size_t kMaxAgents = 64;

const config::StateFileFormat<TokensFile>& TokensFormat() {
  static const config::StateFileFormat<TokensFile> format{"tokens file", ParseTokens,
                                                          SerializeTokens};
  return format;
}

std::string Str(const Value& v) { return std::string(v.GetString(), v.GetStringLength()); }

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::optional<std::string> NameError(std::string_view name) {
  auto ok_first = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  bool ok = !name.empty() && name.size() <= 64 && ok_first(name[0]);
  for (char c : name) ok = ok && (ok_first(c) || c == '.' || c == '_' || c == '-');
  if (ok) return std::nullopt;
  return "invalid token name \"" + std::string(name.substr(0, 80)) +
         "\": use [a-z0-9][a-z0-9._-]{0,63}";
}

// An agent glob is an agent id in which '*' and '?' may stand for characters.
std::optional<std::string> AgentGlobError(std::string_view glob) {
  if (glob == "*") return std::nullopt;
  std::string probe(glob);
  for (char& c : probe) {
    if (c == '*' || c == '?') c = 'x';
  }
  if (!config::AgentIdError(probe)) return std::nullopt;
  return "invalid agent glob \"" + std::string(glob.substr(0, 80)) +
         "\": an agent id ([A-Za-z0-9][A-Za-z0-9._-]{0,63}) in which * and ? match characters";
}

std::optional<std::string> TenantError(std::string_view tenant, Role role) {
  if (tenant.empty()) {
    if (role == Role::kAdmin) return std::nullopt;
    return std::string(
        "a token needs --tenant (only an admin token may have the local tenant \"\")");
  }
  return config::TenantIdError(tenant);
}

// Walks the document strictly: anything unexpected is an error at its position.
class Parser {
 public:
  explicit Parser(const config::JsonLines& lines) : lines_(lines) {}

  Result<TokensFile> Parse(const Value& root) {
    if (!root.IsObject()) return Fail("", "expected an object with \"version\": 1");
    const Value* version = JsonMember(root, "version");
    if (version == nullptr || !version->IsInt() || version->GetInt() != 1) {
      return Fail("version", "expected \"version\": 1");
    }
    TokensFile file;
    std::set<std::string> names;
    std::set<std::string> digests;
    for (const auto& m : root.GetObject()) {
      std::string key = Str(m.name);
      if (key == "version") continue;
      if (key != "tokens") return Fail(key, "unknown key");
      if (!m.value.IsArray()) return Fail("tokens", "expected an array");
      for (rapidjson::SizeType i = 0; i < m.value.Size(); ++i) {
        std::string at = config::JoinIndex("tokens", i);
        SANDRUN_ASSIGN_OR_RETURN(Token token, ParseToken(m.value[i], at));
        if (!names.insert(token.name).second) return Fail(at, "duplicate name " + token.name);
        if (!digests.insert(token.sha256).second) return Fail(at, "duplicate sha256");
        file.tokens.push_back(std::move(token));
      }
    }
    return file;
  }

 private:
  Error Fail(const std::string& path, const std::string& reason) const {
    return Error(ErrorCode::kInvalidArgument,
                 lines_.Where(path) + ": " + (path.empty() ? "" : path + ": ") + reason);
  }

  Result<int64_t> Millis(const Value& v, const std::string& at) const {
    if (!v.IsInt64() || v.GetInt64() < 0) return Fail(at, "expected a non-negative integer");
    return v.GetInt64();
  }

  Result<Token> ParseToken(const Value& v, const std::string& at) const {
    if (!v.IsObject()) return Fail(at, "expected an object");
    Token t;
    t.agents.clear();
    bool has_name = false, has_role = false, has_digest = false, has_agents = false;
    for (const auto& m : v.GetObject()) {
      std::string key = Str(m.name);
      std::string path = config::JoinKey(at, key);
      const Value& value = m.value;
      if (key == "name" || key == "tenant" || key == "role" || key == "sha256") {
        if (!value.IsString()) return Fail(path, "expected a string");
      }
      if (key == "name") {
        t.name = Str(value);
        if (auto bad = NameError(t.name)) return Fail(path, *bad);
        has_name = true;
      } else if (key == "tenant") {
        t.tenant = Str(value);
      } else if (key == "role") {
        auto role = RoleFromName(Str(value));
        if (!role) return Fail(path, "expected agent, operator or admin");
        t.role = *role;
        has_role = true;
      } else if (key == "agents") {
        if (!value.IsArray() || value.Empty() || value.Size() > kMaxAgents) {
          return Fail(path, "expected an array of 1 to 64 agent globs");
        }
        for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
          if (!value[i].IsString()) return Fail(config::JoinIndex(path, i), "expected a string");
          std::string glob = Str(value[i]);
          if (auto bad = AgentGlobError(glob)) return Fail(config::JoinIndex(path, i), *bad);
          t.agents.push_back(std::move(glob));
        }
        has_agents = true;
      } else if (key == "createdAt") {
        SANDRUN_ASSIGN_OR_RETURN(t.created_ms, Millis(value, path));
      } else if (key == "expiresAt") {
        SANDRUN_ASSIGN_OR_RETURN(t.expires_ms, Millis(value, path));
      } else if (key == "revokedAt") {
        SANDRUN_ASSIGN_OR_RETURN(t.revoked_ms, Millis(value, path));
      } else if (key == "sha256") {
        t.sha256 = Str(value);
        if (t.sha256.size() != 64 || !IsLowerHex(t.sha256)) {
          return Fail(path, "expected 64 lowercase hex digits");
        }
        has_digest = true;
      } else {
        return Fail(path, "unknown key");
      }
    }
    if (!has_name || !has_role || !has_digest || !has_agents) {
      return Fail(at, "a token needs name, role, agents and sha256");
    }
    if (auto bad = TenantError(t.tenant, t.role)) return Fail(config::JoinKey(at, "tenant"), *bad);
    return t;
  }

  const config::JsonLines& lines_;
};

// Constant-time equality of two 32-byte digests given as 64 hex digits each.
bool DigestsEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |=
        static_cast<unsigned>(static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kAgent:
      return "agent";
    case Role::kOperator:
      return "operator";
    case Role::kAdmin:
      return "admin";
  }
  return "agent";
}

std::optional<Role> RoleFromName(std::string_view name) {
  if (name == "agent") return Role::kAgent;
  if (name == "operator") return Role::kOperator;
  if (name == "admin") return Role::kAdmin;
  return std::nullopt;
}

std::string TokensPath(const std::string& state_dir) { return state_dir + "/tokens.json"; }

Result<TokensFile> ParseTokens(std::string_view text, const std::string& path,
                               std::vector<std::string>* /*warnings*/) {
  SANDRUN_ASSIGN_OR_RETURN(std::optional<config::JsonFile> json, config::ParseJsonFile(text, path));
  if (!json) return TokensFile{};
  return Parser(json->lines).Parse(json->doc);
}

std::string SerializeTokens(const TokensFile& file) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buffer);
  w.SetIndent(' ', 2);
  w.StartObject();
  w.Key("version");
  w.Int(1);
  w.Key("tokens");
  w.StartArray();
  for (const Token& t : file.tokens) {
    w.StartObject();
    WriteTokenFields(w, t);
    w.Key("sha256");
    w.String(t.sha256.c_str(), static_cast<rapidjson::SizeType>(t.sha256.size()));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

Result<TokensFile> LoadTokens(const std::string& path, std::vector<std::string>* warnings) {
  SANDRUN_ASSIGN_OR_RETURN(config::LoadedState<TokensFile> loaded,
                           config::LoadStateFile(path, TokensFormat()));
  if (warnings != nullptr) {
    warnings->insert(warnings->end(), loaded.warnings.begin(), loaded.warnings.end());
  }
  return std::move(loaded.file);
}

Result<NewToken> CreateToken(const std::string& path, const TokenSpec& spec, int64_t now_ms) {
  if (auto bad = TenantError(spec.tenant, spec.role)) {
    return Error(ErrorCode::kInvalidArgument, *bad);
  }
  if (spec.ttl_ms < 0) return Error(ErrorCode::kInvalidArgument, "a negative expiry");
  std::vector<std::string> agents =
      spec.agents.empty() ? std::vector<std::string>{"*"} : spec.agents;
  if (agents.size() > kMaxAgents) {
    return Error(ErrorCode::kInvalidArgument, "at most 64 agent globs per token");
  }
  for (const std::string& glob : agents) {
    if (auto bad = AgentGlobError(glob)) return Error(ErrorCode::kInvalidArgument, *bad);
  }
  NewToken created;
  Token& t = created.token;
  t.name = spec.name;
  if (t.name.empty()) {
    SANDRUN_ASSIGN_OR_RETURN(std::string suffix, RandomHex(4));
    t.name = "tok-" + suffix;
  }
  if (auto bad = NameError(t.name)) return Error(ErrorCode::kInvalidArgument, *bad);
  SANDRUN_ASSIGN_OR_RETURN(std::string random, RandomHex(kSecretHexDigits / 2));
  created.secret = std::string(kSecretPrefix) + random;
  t.tenant = spec.tenant;
  t.role = spec.role;
  t.agents = std::move(agents);
  t.created_ms = now_ms;
  if (spec.ttl_ms > 0) {
    if (spec.ttl_ms > std::numeric_limits<int64_t>::max() - now_ms) {
      return Error(ErrorCode::kInvalidArgument, "the expiry is too far away");
    }
    t.expires_ms = now_ms + spec.ttl_ms;
  }
  t.sha256 = Sha256Hex(created.secret);
  auto updated =
      config::UpdateStateFile<TokensFile>(path, TokensFormat(), [&](TokensFile& file) -> Status {
        for (const Token& existing : file.tokens) {
          if (existing.name == t.name) {
            return Error(ErrorCode::kConflict, "a token named " + t.name +
                                                   " exists already (names are never reused, "
                                                   "even after a revoke)");
          }
        }
        file.tokens.push_back(t);
        return Ok();
      });
  if (!updated) return std::move(updated).error();
  return created;
}

Result<Token> RevokeToken(const std::string& path, std::string_view name, int64_t now_ms) {
  Token revoked;
  auto updated =
      config::UpdateStateFile<TokensFile>(path, TokensFormat(), [&](TokensFile& file) -> Status {
        for (Token& t : file.tokens) {
          if (t.name != name) continue;
          if (t.revoked_ms == 0) t.revoked_ms = now_ms;
          revoked = t;
          return Ok();
        }
        return Error(ErrorCode::kNotFound, "no token named " + std::string(name.substr(0, 80)));
      });
  if (!updated) return std::move(updated).error();
  return revoked;
}

Result<Identity> Authenticate(const TokensFile& file, std::string_view secret, int64_t now_ms) {
  auto refuse = [](const char* why) {
    Error e = Error::Refusal("unauthorized", why);
    e.http_status = 401;
    return e;
  };
  if (secret.empty()) return refuse("missing token");
  // The shape is checked before hashing; its length is public anyway.
  if (secret.size() != kSecretPrefix.size() + kSecretHexDigits) return refuse("invalid token");
  const std::string digest = Sha256Hex(secret);
  const Token* match = nullptr;
  for (const Token& t : file.tokens) {
    // Every digest is compared; no early exit.
    if (DigestsEqual(digest, t.sha256) && match == nullptr) match = &t;
  }
  if (match == nullptr) return refuse("invalid token");
  if (match->revoked_ms != 0) return refuse("token revoked");
  if (match->expires_ms != 0 && now_ms >= match->expires_ms) return refuse("token expired");
  return Identity{match->name, match->tenant, match->role, match->agents};
}

bool AgentGlobMatch(std::string_view pattern, std::string_view agent) {
  return GlobMatch(pattern, agent);
}

bool AgentAllowed(const Identity& who, std::string_view agent) {
  for (const std::string& glob : who.agents) {
    if (AgentGlobMatch(glob, agent)) return true;
  }
  return false;
}

}  // namespace sandrun::auth

#include "runner/api/token_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "runner/auth/tokens.h"
#include "runner/config/state_dir.h"
#include "sandbox/base/clock.h"
#include "sandbox/base/duration.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"

namespace sandrun::api {
namespace {

int Refuse(const Error& e) {
  PrintError(e.ToString());
  return e.code == ErrorCode::kInternal || e.code == ErrorCode::kSyscall || e.code == ErrorCode::kIo
             ? kExitFailure
             : kExitRefused;
}

std::string Status(const auth::Token& t, int64_t now_ms) {
  if (t.revoked_ms != 0) return "revoked";
  if (t.expires_ms != 0 && now_ms >= t.expires_ms) return "expired";
  return "active";
}

std::string Joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

int List(const std::string& path, bool json) {
  std::vector<std::string> warnings;
  auto file = auth::LoadTokens(path, &warnings);
  for (const std::string& w : warnings) PrintWarning(w);
  if (!file) return Refuse(file.error());
  const int64_t now = UnixMillis();
  if (json) {
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    w.Key("tokens");
    w.StartArray();
    for (const auth::Token& t : file->tokens) {
      w.StartObject();
      auth::WriteTokenFields(w, t);
      w.Key("status");
      WriteJsonString(w, Status(t, now));
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    std::cout << std::string_view(buffer.GetString(), buffer.GetSize()) << "\n";
    return kExitOk;
  }
  if (file->tokens.empty()) {
    std::cout << "no tokens (create one with: sandrun token create --tenant T --role agent)\n";
    return kExitOk;
  }
  std::printf("%-24s %-16s %-9s %-8s %-20s %-20s %s\n", "NAME", "TENANT", "ROLE", "STATUS",
              "CREATED", "EXPIRES", "AGENTS");
  for (const auth::Token& t : file->tokens) {
    std::printf("%-24s %-16s %-9s %-8s %-20s %-20s %s\n", t.name.c_str(),
                t.tenant.empty() ? "\"\"" : t.tenant.c_str(),
                std::string(auth::RoleName(t.role)).c_str(), Status(t, now).c_str(),
                UtcTimestamp(t.created_ms).c_str(), UtcTimestamp(t.expires_ms).c_str(),
                Joined(t.agents).c_str());
  }
  return kExitOk;
}

}  // namespace

CLI::App* AddTokenCommand(CLI::App& app, TokenFlags& flags) {
  CLI::App* token = app.add_subcommand(
      "token", "API tokens of the multi-tenant server ($SANDRUN_HOME/tokens.json, hashed)");
  token->require_subcommand(1);
  CLI::App* create = token->add_subcommand(
      "create", "Create a token; its secret is printed once, alone on one stdout line");
  create->add_option("--tenant", flags.tenant, "Tenant id [a-z0-9][a-z0-9-]{0,31}");
  create->add_option("--role", flags.role, "agent | operator | admin")->required();
  create->add_option("--name", flags.name, "Token name (default tok-<random>)");
  create->add_option("--agents", flags.agents, "Agent ids or globs it may act for (default *)")
      ->delimiter(',');
  create->add_option("--expires", flags.expires, "Lifetime: 30s, 15m, 12h, 7d, 2w (default never)");
  create->callback([&flags] { flags.action = "create"; });
  CLI::App* list = token->add_subcommand("list", "List tokens (never their secrets)");
  list->add_flag("--json", flags.json, "Print JSON");
  list->callback([&flags] { flags.action = "list"; });
  CLI::App* revoke = token->add_subcommand("revoke", "Revoke a token (its name stays taken)");
  revoke->add_option("NAME", flags.name, "The token's name")->required();
  revoke->callback([&flags] { flags.action = "revoke"; });
  return token;
}

int RunTokenCommand(const GlobalOptions& /*global*/, const TokenFlags& flags) {
  auto state_dir = config::StateDirPath();
  if (!state_dir) return Refuse(state_dir.error());
  if (auto ok = config::EnsureStateDir(*state_dir); !ok) return Refuse(ok.error());
  const std::string path = auth::TokensPath(*state_dir);
  if (flags.action == "list") return List(path, flags.json);
  if (flags.action == "revoke") {
    auto revoked = auth::RevokeToken(path, flags.name, UnixMillis());
    if (!revoked) return Refuse(revoked.error());
    std::cout << "revoked token " << revoked->name << " (tenant \"" << revoked->tenant << "\")\n";
    return kExitOk;
  }
  auth::TokenSpec spec;
  auto role = auth::RoleFromName(flags.role);
  if (!role) {
    return Refuse(Error(ErrorCode::kInvalidArgument,
                        "--role " + flags.role + ": expected agent, operator or admin"));
  }
  spec.role = *role;
  spec.tenant = flags.tenant;
  spec.name = flags.name;
  spec.agents = flags.agents;
  if (!flags.expires.empty()) {
    auto ttl = ParseDurationMs(flags.expires);
    if (!ttl) return Refuse(std::move(ttl).error().Wrap("--expires"));
    spec.ttl_ms = *ttl;
  }
  auto created = auth::CreateToken(path, spec, UnixMillis());
  if (!created) return Refuse(created.error());
  const auth::Token& t = created->token;
  std::fprintf(stderr,
               "sandrun: created token %s (tenant \"%s\", role %s, agents %s, expires %s); the "
               "secret below is shown only this once\n",
               t.name.c_str(), t.tenant.c_str(), std::string(auth::RoleName(t.role)).c_str(),
               Joined(t.agents).c_str(), UtcTimestamp(t.expires_ms).c_str());
  std::cout << created->secret << "\n" << std::flush;
  return kExitOk;
}

}  // namespace sandrun::api

// `sandrun token create | list | revoke`: the API tokens of the multi-tenant server
// ($SANDRUN_HOME/tokens.json, runner/auth/tokens.h).
//
//   sandrun token create --tenant T --role agent|operator|admin [--name N]
//                        [--agents GLOB,...] [--expires DURATION]
//       prints the secret once, alone on one stdout line (what was created goes to stderr);
//   sandrun token list [--json]     names, tenants, roles, agents, times, status; never a secret
//                                   or its digest;
//   sandrun token revoke NAME       kept in the file as revoked, so the name is never reused.
// Exit codes: 0 done, 2 refused (bad input, unknown name, a name taken), 1 internal.
#pragma once

#include <string>
#include <vector>

#include "runner/api/cli_context.h"

namespace CLI {
class App;
}

namespace sandrun::api {

struct TokenFlags {
  std::string action;  // create | list | revoke (set by AddTokenCommand's callbacks)
  std::string tenant;
  std::string role;
  std::string name;
  std::vector<std::string> agents;
  std::string expires;
  bool json = false;
};

// Adds `token` and its subcommands to `app`, filling `flags`; returns the `token` subcommand.
CLI::App* AddTokenCommand(CLI::App& app, TokenFlags& flags);
int RunTokenCommand(const GlobalOptions& global, const TokenFlags& flags);

}  // namespace sandrun::api

// `sandrun [--agent A] session list | show KEY | set KEY [--elevated L] [--host H]
// [--security S] [--ask A] [--node N] | clear KEY` (issue 15): an operator's view and changes of
// per-session exec state. Through the running server when one answers (the change is then its
// event and audit line); without one, on the state files under the same lock (one-shot runtime).
// Output: `list` a table (`--json`: the server's object), the others the session's JSON view.
// Exit codes as `sandrun call`: 0 done, 2 refused (bad value, host not allowed, ...), 1 failure.
#pragma once

#include <string>

#include "runner/api/cli_context.h"

namespace CLI {
class App;
}

namespace sandrun::api {

struct SessionFlags {
  std::string action;  // list | show | set | clear (set by AddSessionCommand's callbacks)
  std::string key;
  std::string elevated, host, security, ask, node;  // set: "" = leave as is
  bool json = false;
};

CLI::App* AddSessionCommand(CLI::App& app, SessionFlags& flags);
int RunSessionCommand(const GlobalOptions& global, const SessionFlags& flags);

}  // namespace sandrun::api

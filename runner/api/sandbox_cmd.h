// `sandrun sandbox list|recreate|prune|cp`: the operator's view of this state dir's containers.
#pragma once

#include <string>

#include "runner/api/cli_context.h"

namespace sandrun::api {

struct SandboxCommand {
  std::string action;   // list | recreate | prune
  bool all = false;     // recreate/prune: every container of this instance
  std::string scope;    // recreate: a scope key ("agent:main", a session key, "shared")
  std::string agent;    // recreate: agent:<id>
  std::string session;  // recreate: a session key
  bool json = false;    // list
  std::string src;      // cp (sandbox_cp.h; action "cp")
  std::string dest;     // cp
};

int RunSandboxCommand(const GlobalOptions& global, const SandboxCommand& cmd);

}  // namespace sandrun::api

// What every subcommand shares: the global options (SPEC §2.2) and the state dir resolved from
// them. Built once by the CLI; subcommands take what they need from it.
#pragma once

#include <string>

#include "sandbox/base/result.h"

namespace sandrun::api {

struct GlobalOptions {
  std::string config_file;  // --config
  std::string agent = "main";
  std::string session = "main";
  std::string workspace;  // --workspace ("" = agents.<id>.workspace or the current directory)
  std::string server;
  // The caller's working directory when it is not this process's (the server running a CLI's
  // call, X-Sandrun-Cwd); "" = the current directory.
  std::string cwd;
};

// Exit codes of the CLI (SPEC §2.2).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // an internal failure of sandrun itself
inline constexpr int kExitRefused = 2;  // bad usage, or the call was refused before anything ran

// Prints "sandrun: <message>" to stderr.
void PrintError(const std::string& message);
void PrintWarning(const std::string& message);

}  // namespace sandrun::api

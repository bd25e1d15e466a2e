// The `sandrun` command line: parses argv with CLI11 and dispatches to subcommands.
// Exit codes: 0 success, 1 a check or internal failure, 2 bad usage or a refused call.
#pragma once

namespace sandrun::api {

int RunCli(int argc, char** argv);

}  // namespace sandrun::api

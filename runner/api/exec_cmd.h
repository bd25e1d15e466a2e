// `sandrun call [JSON|-]` and `sandrun exec [flags] -- COMMAND` (SPEC §2.2).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runner/api/cli_context.h"

namespace sandrun::api {

// Reads the call from `json_arg` (or stdin when it is empty or "-"), prints one JSON object.
// Exit: 0 handled, 2 refused before anything ran, 1 internal failure.
int RunCallCommand(const GlobalOptions& global, const std::string& json_arg);

struct ExecFlags {
  std::string host, security, ask, workdir;
  bool elevated = false;
  bool wait = false;             // --wait: wait for an operator's approval, then run
  std::vector<std::string> env;  // K=V
  double timeout = -1;           // < 0: not given
  long long yield_ms = -1;       // < 0: not given
  bool background = false;
  bool pty = false;
  bool json = false;
  bool exit_code = false;    // --exit-code: --json exits with the table below, not 0/1/2
  bool interactive = false;  // -i: forward stdin even when it is a terminal
  // The call's sandbox choices (within sandbox.allow.*): "" / < 0 when not given.
  std::string image, network, memory;
  double cpus = -1;
  long long pids = -1;
  bool rm = false;                   // --rm: the call's own sandbox, removed when it ends
  std::vector<std::string> command;  // the words after "--", for CommandFromWords
};

// Streams the command's stdout and stderr byte for byte to ours, forwards our stdin when it is a
// pipe or a file (or with -i), cancels the command on SIGINT/SIGTERM/SIGHUP (TERM, then KILL
// after 3 s), the same in-process and through a running server. Exits with the table of
// runner/api/exec_stream.h (the command's code, 124, 128+N, 125, 123, 122, 121); with --json
// prints the result object and exits 0/1/2 as `call` does (the table with --exit-code).
int RunExecCommand(const GlobalOptions& global, const ExecFlags& flags);

// Adds `--env KEY=VALUE` flags to `env`; the message for the first malformed one (nothing is
// added then), or "" when all are well formed. exec and policy check share it.
std::string ParseEnvFlags(const std::vector<std::string>& flags,
                          std::map<std::string, std::string>* env);

// `sandrun process ACTION [...]`: one process tool call through the running server; prints the
// result object. Exit 0 handled, 2 refused (or no server), 1 internal.
struct ProcessFlags {
  std::string action;
  std::string session_id;
  long long timeout_ms = -1;
  std::string data;
  bool has_data = false;
  bool eof = false;
  std::vector<std::string> keys;
  std::string literal;
  bool has_literal = false;
  std::vector<std::string> hex;
  std::string text;
  bool has_text = false;
  bool no_bracketed = false;
  long long offset = -1;
  long long limit = -1;
};
int RunProcessCommand(const GlobalOptions& global, const ProcessFlags& flags);

}  // namespace sandrun::api

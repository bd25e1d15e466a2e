// Sandbox execs found again after the server restarted (Executor::Adopt): the adoption key a
// container process writes into its session record, and the process object that takes such an
// exec over. Output printed after the restart is not recoverable (the attach stream died with
// the old server); kill, the remaining timeout and the exit code are.
//
// Pattern of use:
//   std::string key = ExecAdoptionKey(created.tree);          // DockerRunningProcess
//   SANDRUN_ASSIGN_OR_RETURN(auto p, AdoptExec(client, key, sink, timeout_ms));
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sandbox/base/result.h"
#include "sandbox/docker/client.h"
#include "sandbox/executors/docker/container_kill.h"
#include "sandbox/executors/process.h"

namespace sandrun::exec {

// "sandrun-exec-v2|<container>|<exec id>|<token>|<user>|<created at, monotonic ns>|<wrapped:
// 0|1>" (a v1 key, an older server's, lacks the last field: not wrapped).
std::string ExecAdoptionKey(const ExecTree& tree);
// kInvalidArgument for anything that is not such a key (every field checked).
Result<ExecTree> ParseExecAdoptionKey(const std::string& key);

// Takes over the exec `key` names: kNotFound when it no longer runs (or never existed),
// kInvalidArgument for a malformed key or an exec that is not in the key's container. Kills
// nothing on error. The process enforces `timeout_ms` (0: none) from now.
Result<std::unique_ptr<RunningProcess>> AdoptExec(std::shared_ptr<docker::Client> client,
                                                  const std::string& key, LiveSink sink,
                                                  int64_t timeout_ms);

}  // namespace sandrun::exec

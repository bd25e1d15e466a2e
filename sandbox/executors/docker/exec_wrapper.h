// The exec wrapper (exec_wrapper/main.cc) from the runner's side: where its binary is, how it is
// put into a container, how an exec's argv is wrapped, and how its record is read back.
//
// Why: the Engine API reports an exec's end only as an exit code, 128+N when its process died
// from signal N, so `kill -SEGV $$` and `exit 139` look the same. With the wrapper as the exec's
// process, a signal death leaves a record in the container (/dev/shm, named by the exec's tree
// token) that says which signal; the runner reads it with one short exec, and only when the exit
// code is 129..192, so the common path costs nothing. The record also carries the wrapper's pid
// in the container, which the tree killer uses instead of mapping a host pid through /proc.
//
// Where the wrapper is absent (a remote engine, a missing or untrusted binary, a container made
// by an older sandrun), the exec runs `/bin/sh -lc` as before and 128+N stays an exit code.
//
// Pattern of use:
//   ExecWrapper wrapper = FindExecWrapper(engine_is_local);     // once per pool
//   if (wrapper.usable()) mounts.push_back(WrapperMount(wrapper));  // at container creation
//   spec.cmd = WrapCommand(container.exec_wrapper, {"/bin/sh", "-lc", "--", cmd});
//   EndFromExitCode(client, tree, code, &outcome);              // after the exec ended
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/docker/client.h"
#include "sandbox/docker/models.h"
#include "sandbox/executors/docker/container_kill.h"
#include "sandbox/executors/output.h"

namespace sandrun::exec {

// Where the wrapper is bind-mounted (read-only) in every container that has it.
inline constexpr char kExecWrapperPath[] = "/.sandrun/exec";
// Container label: set to kExecWrapperVersion when the container was created with the wrapper
// (part of the config hash, so containers of an older sandrun are recreated with it).
inline constexpr char kExecWrapperLabel[] = "sandrun.execWrapper";
inline constexpr char kExecWrapperVersion[] = "1";
// The host binary's name, next to the sandrun binary.
inline constexpr char kExecWrapperBinary[] = "sandrun-exec";

struct ExecWrapper {
  std::string host_path;  // "" when unusable
  std::string reason;     // why not ("" when usable)
  bool usable() const { return !host_path.empty(); }
};

// The wrapper binary next to this process's executable, when the engine is local (a bind source
// is a path on the engine's host) and the binary is trusted like any bind source: reached
// without a symbolic link, a regular file owned by root or the runner and not writable by group
// or others, in a directory of the same kind (CheckTrustedFile). No setting names another
// file: whatever is bound here is readable in every container.
ExecWrapper FindExecWrapper(bool engine_is_local);
// The same checks for the binary at `host_path` (tests, which run from another directory).
ExecWrapper CheckExecWrapper(const std::string& host_path);
// The same for any binary shipped next to sandrun and bound into containers (the agent):
// `name` next to this program, `what` names it in messages.
ExecWrapper FindBundledBinary(const char* name, const char* what, bool engine_is_local);
ExecWrapper CheckBundledBinary(const std::string& host_path, const char* what);

// The read-only bind mount of the wrapper at kExecWrapperPath.
docker::BindMount WrapperMount(const ExecWrapper& wrapper);

// `cmd` run by the wrapper when `wrapped`, else `cmd` itself.
std::vector<std::string> WrapCommand(bool wrapped, std::vector<std::string> cmd);

// The record of the exec with tree token `token`, in the container.
std::string ExecRecordPath(const std::string& token);

// Fills `outcome`'s status, exit code and signal from the exec's exit code: kSignaled with N
// when the exec was wrapped, `code` is 128+N (129..192) and its record says so; kExited with
// `code` otherwise (also when the record cannot be read: the exit code is all there is). The
// record is removed once read. It is the command's own (same user): it is trusted for nothing
// but how this exec ended, and only when it agrees with the engine's exit code.
void EndFromExitCode(docker::Client& client, const ExecTree& tree, int64_t code,
                     ExecOutcome* outcome);

// The signal a record's lines ("P <pid>", "S <signal>") say the exec died from, given the
// engine's exit code `code`; 0 when none (no record, a normal exit, or a record that does not
// agree with `code`).
int SignalFromRecord(const std::string& record, int64_t code);

// Removes the record of a wrapped exec whose tree was killed without its exit code being read
// (a timeout, a failed stream), so /dev/shm does not fill up with them. Best effort.
void DiscardExecRecord(docker::Client& client, const ExecTree& tree);

}  // namespace sandrun::exec

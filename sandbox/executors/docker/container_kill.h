// Killing a sandbox exec's whole process tree inside its container: what a timeout, a cancel or
// `process kill` of a sandboxed command does, so that nothing of it is left running, including
// processes that left the exec's session (setsid), were adopted by the container's init (a
// double fork, `nohup ... &` whose shell exited) or outlived the exec's own process.
//
// Pattern of use (DockerExecutor):
//   docker::ExecSpec spec = ...;
//   ExecTree tree = MarkExec(spec);            // before CreateExec
//   tree.container = id; tree.exec_id = exec_id; ...
//   SANDRUN_RETURN_IF_ERROR(KillContainerExecTree(client, tree, SIGTERM, 3000));
//
// How, inside the container, with nothing from the engine's host (works with a remote engine):
// every exec carries a random marker in its environment (kTreeTokenEnv), and the kill runs a
// short killer exec (POSIX sh, busybox or dash) as the exec's own user (the container has no
// CAP_KILL). The killer reads the container's /proc and takes:
// - every process whose environment carries the exec's marker, the exec's own process (found by
//   the marker, or by its pid: the exec wrapper's record in the container says it, see
//   exec_wrapper.h; without the wrapper, the engine's host pid mapped through /proc when the
//   engine is local), and, repeatedly, the
//   children of those and the members of every session they are in (an exec's process is a
//   session leader, so its session holds everything that did not call setsid);
// - when no other exec is active in the container (no other process whose parent is outside the
//   container, the sign of an exec's own process): also every process started since the exec
//   began, whatever its environment, lineage or session. That is what catches `env -i setsid`
//   with a double fork; it also takes what execs that started and ended meanwhile left behind.
//   Processes older than the exec (an earlier call's server left running on purpose, the setup
//   command's daemons) are not touched.
// Never: the container's init (pid 1), its keeper (`sleep infinity`: the earliest-started child
// of pid 1, so a later process that disguises itself as the keeper is not spared), the killer
// itself, and other active execs' own processes. A signal other than SIGKILL is not sent to the
// exec wrapper (it forwards SIGTERM and SIGHUP to its child, which gets the signal already).
// SIGKILL first stops every process it takes
// (SIGSTOP, repeated until none is left running, so a fork bomb cannot outrun it), then kills.
//
// What still escapes, only while another exec is active in the same container: a process that
// removed the marker from its environment (env -i, or by overwriting its own memory) and left
// the exec's sessions and lineage (setsid plus a double fork), or stayed in the exec's session
// after the exec's own process exited when no process with the marker is left there.
// The marker is visible to the exec's processes and, through /proc, to every process of the
// same user in the container: copying it only makes the copier die with that exec, and a
// process that can read it can already signal that exec's processes itself (same user, same
// container); it gives no way into another container or to the host.
#pragma once

#include <cstdint>
#include <string>

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"
#include "sandbox/docker/client.h"

namespace sandrun::exec {

// What finds one exec's processes inside its container.
struct ExecTree {
  std::string container;  // id or name
  std::string exec_id;
  std::string token;  // the value of kTreeTokenEnv in the exec's environment
  std::string user;   // the exec's user ("" = the container's): the killer runs as it
  Deadline::Clock::time_point created_at{};  // taken just before the exec was created
  bool wrapped = false;  // the exec's process is the exec wrapper (exec_wrapper.h)
};

// Puts a fresh marker into `spec.env` (dropping any entry of that name the caller had: the
// marker is the runner's, not the command's) and returns the tree's token, user and start;
// the caller fills in the container and, once created, the exec id.
Result<ExecTree> MarkExec(docker::ExecSpec& spec);

// Sends `signal` to the exec's tree. SIGKILL: stops and kills everything at once. Another
// signal with grace_ms > 0 (a timeout's SIGTERM): sends it, waits up to grace_ms for the tree
// to be gone, then kills what is left with SIGKILL. grace_ms == 0: that one signal only.
// One killer exec does all of it (it takes about grace_ms when something ignores the signal).
// Returns an error if the killer could not run or processes of the tree survived SIGKILL.
Status KillContainerExecTree(docker::Client& client, const ExecTree& tree, int signal,
                             int64_t grace_ms);

}  // namespace sandrun::exec

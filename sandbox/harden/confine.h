// Confinement of host commands: a private mount namespace (and a user namespace when the runner
// is not root) in which the runner's control surfaces are out of reach, and the switch to an
// unprivileged identity when the runner is root. In the spirit of bubblewrap: the command sees
// the host's file system, except that
//   - `masked` paths are hidden: a directory under an empty read-only tmpfs, anything else
//     (a socket, a file) under a bind of /dev/null, so `connect()` to a masked socket fails;
//   - `read_only` paths are bind-mounted read-only, recursively (mount_setattr AT_RECURSIVE);
//   - mount events do not propagate back to the host (the tree is made a slave first).
// A path that does not exist when the command starts is skipped (it cannot be reached through
// this namespace later either: a masked directory's later entries are under the tmpfs).
//
// Pattern of use (parent):
//   ConfineRequest req;
//   req.user_namespace = geteuid() != 0;
//   req.masked = {state_dir, "/var/run/docker.sock"};
//   req.read_only = {"/proc/sys", profiles_dir};
//   SANDRUN_ASSIGN_OR_RETURN(ConfinePlan plan, PrepareConfinement(req));
//   ... in the child, between fork and exec, before the capability drop:
//   if (int err = ApplyConfinement(plan, &step); err != 0) report(step, err);
//
// What it does not do: it is not a PID namespace, so /proc still shows the host's processes;
// a process may reach another process's mount namespace through /proc/<pid>/root where ptrace
// rules allow it (same uid, dumpable). A root runner therefore also switches identity (below);
// a non-root runner's commands share its uid, which no namespace turns into a boundary.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::harden {

struct ConfineRequest {
  // Also unshare a user namespace (mapping only the runner's uid and gid): what lets a non-root
  // runner create a mount namespace at all.
  bool user_namespace = false;
  // The ids mapped into it (one each): the command's own after any identity switch. nullopt:
  // this process's effective ids.
  std::optional<uid_t> map_uid;
  std::optional<gid_t> map_gid;
  std::vector<std::string> read_only;  // absolute paths, made read-only (recursively)
  std::vector<std::string> masked;     // absolute paths, hidden
};

// The data the child reads: strings owned here, never reallocated after Prepare.
struct ConfinePlan {
  bool user_namespace = false;
  std::string uid_map;  // "<uid> <uid> 1\n"
  std::string gid_map;
  std::vector<std::string> read_only;
  std::vector<std::string> masked;
};

// Checks the paths (absolute, no NUL, no "..") and freezes them; duplicates are dropped.
Result<ConfinePlan> PrepareConfinement(const ConfineRequest& request);

// Child side, async-signal-safe, no allocation: unshare, propagation, read-only binds, masks.
// With a user namespace it must run in a child with memory of its own (it sets PR_SET_DUMPABLE,
// a property of the memory descriptor): see ChildSteps::own_memory.
// Returns 0, or the errno with *step naming the failed step ("confine: unshare mount namespace").
int ApplyConfinement(const ConfinePlan& plan, const char** step);

// Whether this kernel and process may confine (a fork that unshares and exits). Ok, or the
// error the child saw ("confine: unshare user namespace: Operation not permitted").
Status ProbeConfinement(bool user_namespace);

// The identity a root runner's host commands switch to: no supplementary groups, then the gid,
// then the uid (real, effective and saved).
struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;  // for HOME/USER/LOGNAME of the command ("" when given as numbers)
  std::string home;
};

// "nobody", "build", "1001" or "1001:1001". A name is looked up in the passwd database; a uid
// without a gid takes the user's primary group when the user exists, else the same number.
// Refused: an unknown name, and anything that resolves to uid 0 or gid 0 (a root command needs
// the privileged host profile, whose identity is the runner's).
Result<Identity> ResolveIdentity(const std::string& spec);

// Child side: setgroups(0), setresgid, setresuid. Must run while CAP_SETUID/CAP_SETGID are
// still effective (before the capset drop, after the bounding-set drop).
int ApplyIdentity(const Identity& identity, const char** step);

}  // namespace sandrun::harden

// The sandbox agent's side of a command's processes (agent/main.cc runs the protocol): the
// child that becomes the command (its identity switched, every capability dropped, then exec),
// the keeper that is the subreaper of the command's whole tree, and the process table the tree
// kill reads. Libc only, for the static agent.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace sandrun::agent {

// Effective and permitted capabilities set to exactly `mask` (inheritable cleared).
bool SetCaps(uint32_t mask);
// Whether every capability set of this process is empty.
bool CapsAreZero();

// HOME of `uid` from the image's /etc/passwd, "/" when it has none (as the engine's exec does).
std::string HomeOf(uint32_t uid);

// Everything the command's child needs, prepared before any fork: the child only makes system
// calls with it.
struct ChildPlan {
  std::vector<char*> argv;
  std::vector<char*> envp;
  const char* cwd;
  uint32_t uid, gid;
  bool pty;
  int in_fd, out_fd, err_fd;  // the child's ends
};

// The keeper (run in a fork of the agent): keeps only the command's ends and `status_fd`,
// becomes the subreaper of the command's tree, starts the command, writes its pid and then its
// wait status (int32 each) to `status_fd`, reaps every process of the tree and exits once none
// is left.
[[noreturn]] void RunKeeper(const ChildPlan& plan, int status_fd);

struct ProcStat {
  pid_t pid, ppid, pgrp, session;
};
// Every process of this pid namespace (zombies included).
std::vector<ProcStat> ReadProcs();
// The descendants of `keeper` in `procs` (the whole tree of its command: it is their
// subreaper and lives until they are gone); empty when keeper is 0.
std::set<pid_t> TreeOf(pid_t keeper, const std::vector<ProcStat>& procs);

}  // namespace sandrun::agent

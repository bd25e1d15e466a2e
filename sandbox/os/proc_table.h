// Reading this machine's process table from /proc, and the per-run marker that ties a process
// to the run that started it when nothing else does (it left the run's process group, session
// and cgroup-less lineage). Used by the process-tree sweep (process_tree.h) and by the
// container killer (sandbox/executors/docker/container_kill.h), which scans the container's /proc
// with the same rules in sh.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(std::vector<ProcStat> table, ReadProcTable());
//   for (const ProcStat& p : table) if (EnvironHas(p.pid, marker)) ...
//   (void)SignalIfSame(p.pid, p.start_ticks, SIGKILL);
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun {

// The environment variable that marks every process of one tracked run (the sweep on the host,
// every sandbox exec): "<kTreeTokenEnv>=<32 hex digits>". The value is random, so no unrelated
// process carries it; a process of the run can remove it from its own environment (that is
// what the lineage rules are for) or copy it into another process it controls (which only gets
// that process killed along with the run).
inline constexpr char kTreeTokenEnv[] = "SANDRUN_EXEC_TOKEN";

// 128 random bits as 32 lowercase hex digits (getrandom).
Result<std::string> NewTreeToken();

// The fields of /proc/<pid>/stat that trees are built from.
struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t sid = 0;
  char state = 0;            // 'R', 'S', 'D', 'T', 't', 'Z', ...
  uint64_t start_ticks = 0;  // start time after boot in clock ticks: with pid, the identity

  bool dead() const { return state == 'Z' || state == 'X' || state == 'x'; }
  bool stopped() const { return state == 'T' || state == 't'; }
};

// /proc/<pid>/stat of one process (a command name with spaces or ')' is handled); nullopt when
// the process is gone or the line is malformed.
std::optional<ProcStat> ReadProcStat(pid_t pid);

// Every process (thread-group leader) in /proc, zombies included; processes that go away
// during the scan are skipped.
Result<std::vector<ProcStat>> ReadProcTable();

// Whether the environment `pid` started with (/proc/<pid>/environ, NUL-separated) holds exactly
// `entry` ("KEY=VALUE"). False when it is unreadable (another uid, not dumpable, gone).
bool EnvironHas(pid_t pid, std::string_view entry);

// Sends `sig` to `pid` only if it is still the process that started at `start_ticks`: the
// check and the signal go through one pidfd, so a pid reused in between is never signalled.
// A process that is already gone is not an error.
Status SignalIfSame(pid_t pid, uint64_t start_ticks, int sig);

}  // namespace sandrun

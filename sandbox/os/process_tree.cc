#include "sandbox/os/process_tree.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <deque>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace sandrun {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kEndWait{2000};
constexpr milliseconds kGonePoll{5};
// Rounds of SIGSTOP before the SIGKILL: each round stops what the previous scan found; a fork
// that raced a round is found by the next one.
constexpr int kStopRounds = 20;

}  // namespace

TreeTrackingInfo DescribeTreeTracking() {
  CgroupSupport support = RunCgroupSupport();
  TreeTrackingInfo info;
  info.cgroup = support.usable;
  if (support.usable) {
    info.detail = "a cgroup v2 per run under " + support.parent;
  } else {
    info.detail = "sweep of /proc by a per-run environment marker and lineage (no cgroup: " +
                  support.why_not + ")";
  }
  return info;
}

Result<std::unique_ptr<ProcessTree>> ProcessTree::Create(TreeTracking tracking, bool keep) {
  if (tracking == TreeTracking::kGroup) {
    return Error(ErrorCode::kInvalidArgument, "a process group is not a tracked tree");
  }
  std::unique_ptr<ProcessTree> tree(new ProcessTree());
  if (tracking == TreeTracking::kAuto) {
    CgroupSupport support = RunCgroupSupport();
    if (support.usable) {
      auto cgroup = RunCgroup::Create(support, keep);
      if (cgroup) {
        tree->cgroup_ = std::move(cgroup).value();
        return tree;
      }
      // Refused after all (a cgroup limit, a delegation rule): the sweep tracks this tree and
      // the next ones.
      if (cgroup.error().sys_errno != EMFILE && cgroup.error().sys_errno != ENFILE) {
        MarkRunCgroupsUnusable(cgroup.error().ToString());
      }
    }
  }
  SANDRUN_ASSIGN_OR_RETURN(std::string token, NewTreeToken());
  tree->env_entry_ = std::string(kTreeTokenEnv) + "=" + token;
  return tree;
}

ProcessTree::~ProcessTree() { (void)End(Deadline::After(kEndWait)); }

void ProcessTree::Attach(pid_t leader, bool session_leader) {
  std::lock_guard<std::mutex> lock(mu_);
  leader_ = leader;
  session_leader_ = session_leader;
}

Result<std::vector<ProcStat>> ProcessTree::SweepMembers() {
  pid_t leader = -1;
  bool session_leader = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    leader = leader_;
    session_leader = session_leader_;
  }
  SANDRUN_ASSIGN_OR_RETURN(std::vector<ProcStat> table, ReadProcTable());
  const pid_t self = ::getpid();
  std::unordered_map<pid_t, std::vector<size_t>> children;
  for (size_t i = 0; i < table.size(); ++i) children[table[i].ppid].push_back(i);

  std::unordered_set<pid_t> members, groups, sessions;
  std::vector<ProcStat> out;
  std::deque<size_t> queue;
  auto add = [&](size_t i) {
    const ProcStat& p = table[i];
    if (p.dead() || p.pid == self || p.pid == 1 || !members.insert(p.pid).second) return;
    out.push_back(p);
    queue.push_back(i);
  };
  // The leader's own group (and session on a PTY) stays its tree after the leader was reaped:
  // its id cannot be reused while any member lives.
  if (leader > 0) {
    groups.insert(leader);
    if (session_leader) sessions.insert(leader);
  }
  for (size_t i = 0; i < table.size(); ++i) {
    const ProcStat& p = table[i];
    if (p.pid == leader || groups.count(p.pgrp) != 0 || sessions.count(p.sid) != 0) {
      add(i);
    } else if (!p.dead() && p.pid != self && EnvironHas(p.pid, env_entry_)) {
      add(i);
    }
  }
  for (;;) {
    while (!queue.empty()) {
      const ProcStat p = table[queue.front()];
      queue.pop_front();
      if (p.pgrp == p.pid) groups.insert(p.pid);
      if (p.sid == p.pid) sessions.insert(p.pid);
      auto it = children.find(p.pid);
      if (it != children.end()) {
        for (size_t child : it->second) add(child);
      }
    }
    // Groups and sessions led by members take in what left the lineage (orphans of a member).
    for (size_t i = 0; i < table.size(); ++i) {
      if (groups.count(table[i].pgrp) != 0 || sessions.count(table[i].sid) != 0) add(i);
    }
    if (queue.empty()) break;
  }
  return out;
}

Status ProcessTree::Signal(int sig) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return Ok();
  }
  if (cgroup_) return cgroup_->Signal(sig);
  SANDRUN_ASSIGN_OR_RETURN(std::vector<ProcStat> members, SweepMembers());
  if (sig == SIGKILL) {
    for (int round = 0; round < kStopRounds && !members.empty(); ++round) {
      bool all_stopped = true;
      for (const ProcStat& p : members) {
        if (p.stopped()) continue;
        all_stopped = false;
        (void)SignalIfSame(p.pid, p.start_ticks, SIGSTOP);
      }
      if (all_stopped) break;
      ::usleep(1000);
      SANDRUN_ASSIGN_OR_RETURN(members, SweepMembers());
    }
  }
  for (const ProcStat& p : members) (void)SignalIfSame(p.pid, p.start_ticks, sig);
  return Ok();
}

Result<bool> ProcessTree::Alive() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return false;
  }
  if (cgroup_) return cgroup_->Populated();
  SANDRUN_ASSIGN_OR_RETURN(std::vector<ProcStat> members, SweepMembers());
  return !members.empty();
}

Result<bool> ProcessTree::WaitGone(const Deadline& deadline) {
  for (;;) {
    SANDRUN_ASSIGN_OR_RETURN(bool alive, Alive());
    if (!alive) return true;
    if (deadline.expired()) return false;
    std::this_thread::sleep_for(kGonePoll);
  }
}

Status ProcessTree::End(const Deadline& deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return Ok();
  }
  Status result = Ok();
  if (cgroup_) {
    result = cgroup_->Remove(deadline);
  } else {
    result = Signal(SIGKILL);
    if (result) {
      auto gone = WaitGone(deadline);
      if (!gone) {
        result = std::move(gone).error();
      } else if (!*gone) {
        result = Error(ErrorCode::kTimeout, "processes of the tree are still dying");
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ended_ = true;
  return result;
}

}  // namespace sandrun

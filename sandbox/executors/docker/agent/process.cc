#include "sandbox/executors/docker/agent/process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>

#include "sandbox/executors/docker/agent/protocol.h"

namespace sandrun::agent {
namespace {

[[noreturn]] void ChildFail(const char* step) {
  const int e = errno;
  char buf[160];
  const int n = snprintf(buf, sizeof buf, "sandrun-agent: %s: %s\n", step, strerror(e));
  if (n > 0) (void)!write(2, buf, static_cast<size_t>(n));
  _exit(126);
}

[[noreturn]] void RunChild(const ChildPlan& p) {
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  // Handlers are reset by execve; what the agent ignores would stay ignored.
  for (int s : {SIGPIPE, SIGHUP, SIGCHLD}) signal(s, SIG_DFL);
  if (setsid() < 0) _exit(126);
  if (dup2(p.in_fd, 0) < 0 || dup2(p.out_fd, 1) < 0 || dup2(p.err_fd, 2) < 0) _exit(126);
  if (p.pty && ioctl(0, TIOCSCTTY, 0) != 0) ChildFail("controlling terminal");
  if (setgroups(0, nullptr) != 0) ChildFail("setgroups");
  if (setresgid(p.gid, p.gid, p.gid) != 0) ChildFail("setresgid");
  if (setresuid(p.uid, p.uid, p.uid) != 0) ChildFail("setresuid");
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  if (getresuid(&ru, &eu, &su) != 0 || getresgid(&rg, &eg, &sg) != 0 || ru != p.uid ||
      eu != p.uid || su != p.uid || rg != p.gid || eg != p.gid || sg != p.gid || ru == 0 ||
      ru == kAgentUid || rg == 0 || rg == kAgentGid) {
    errno = EPERM;
    ChildFail("switching to the command's identity");
  }
  // No uid was 0 before, so the kernel kept the capabilities: drop them all (the bounding set
  // cannot be cut without CAP_SETPCAP, which the agent never has; with nothing permitted and
  // no-new-privileges, no exec can raise one again).
  if (!SetCaps(0) || !CapsAreZero()) ChildFail("dropping capabilities");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ChildFail("no_new_privs");
  if (p.cwd[0] != '\0' && chdir(p.cwd) != 0) ChildFail(p.cwd);
  execve(p.argv[0], p.argv.data(), p.envp.data());
  const int e = errno;
  char buf[160];
  const int n = snprintf(buf, sizeof buf, "sandrun-agent: %s: %s\n", p.argv[0], strerror(e));
  if (n > 0) (void)!write(2, buf, static_cast<size_t>(n));
  _exit(e == ENOENT ? 127 : 126);
}

// vfork: the child only makes system calls on prepared data until execve (RunChild), so it
// can share the keeper's memory until then instead of copying its page tables.
__attribute__((noinline)) pid_t Spawn(const ChildPlan& plan) {
  const pid_t pid = vfork();
  if (pid == 0) RunChild(plan);
  return pid;
}

// close_range(first, last); where the kernel or filter lacks it, each fd that is open.
void CloseRange(int first, int last) {
  if (syscall(SYS_close_range, static_cast<unsigned>(first), static_cast<unsigned>(last), 0) == 0) {
    return;
  }
  if (DIR* d = opendir("/proc/self/fd")) {
    std::vector<int> fds;
    while (dirent* e = readdir(d)) {
      const int fd = atoi(e->d_name);
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd >= first && fd <= last &&
          fd != dirfd(d)) {
        fds.push_back(fd);
      }
    }
    closedir(d);
    for (int fd : fds) close(fd);
  }
}

void WriteAll(int fd, const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    const ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    len -= static_cast<size_t>(n);
  }
}

}  // namespace

bool SetCaps(uint32_t mask) {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  __user_cap_data_struct data[2]{};
  data[0].effective = mask;
  data[0].permitted = mask;
  return syscall(SYS_capset, &header, data) == 0;
}

bool CapsAreZero() {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  for (const auto& d : data) {
    if (d.effective != 0 || d.permitted != 0 || d.inheritable != 0) return false;
  }
  return true;
}

// HOME of `uid` from the image's /etc/passwd, "/" when it has none (as the engine's exec does).
std::string HomeOf(uint32_t uid) {
  FILE* f = fopen("/etc/passwd", "re");
  if (f == nullptr) return "/";
  char line[1024];
  std::string home = "/";
  while (fgets(line, sizeof line, f) != nullptr) {
    char* fields[7] = {};
    int n = 0;
    char* p = line;
    fields[n++] = p;
    for (; *p != '\0' && *p != '\n' && n < 7; ++p) {
      if (*p == ':') {
        *p = '\0';
        fields[n++] = p + 1;
      }
    }
    *p = '\0';
    if (n >= 6 && strtoul(fields[2], nullptr, 10) == uid && fields[2][0] != '\0') {
      home = fields[5][0] != '\0' ? fields[5] : "/";
      break;
    }
  }
  fclose(f);
  return home;
}

[[noreturn]] void RunKeeper(const ChildPlan& plan, int status_fd) {
  signal(SIGCHLD, SIG_DFL);
  // Everything else of the agent's is closed (another command's input, a runner's connection:
  // held open here, they would never reach EOF), with close_range between the fds kept.
  int keep[] = {2, status_fd, plan.in_fd, plan.out_fd, plan.err_fd};
  std::sort(std::begin(keep), std::end(keep));
  int from = 3;
  for (int fd : keep) {
    if (fd >= from) {
      if (fd > from) CloseRange(from, fd - 1);
      from = fd + 1;
    }
  }
  CloseRange(from, INT32_MAX);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) _exit(1);
  const pid_t child = Spawn(plan);
  close(plan.in_fd);
  if (plan.out_fd != plan.in_fd) close(plan.out_fd);
  if (plan.err_fd != plan.in_fd) close(plan.err_fd);
  const int32_t pid = child;
  WriteAll(status_fd, &pid, sizeof pid);
  if (child < 0) _exit(1);
  for (;;) {
    int status = 0;
    const pid_t p = waitpid(-1, &status, 0);
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) break;  // ECHILD: nothing of the tree is left
    if (p == child) {
      const int32_t st = status;
      WriteAll(status_fd, &st, sizeof st);
    }
  }
  _exit(0);
}

std::vector<ProcStat> ReadProcs() {
  std::vector<ProcStat> procs;
  DIR* d = opendir("/proc");
  if (d == nullptr) return procs;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    const char* rp = strrchr(buf, ')');  // the name may hold spaces and parentheses
    if (rp == nullptr) continue;
    char state;
    ProcStat s{};
    s.pid = atoi(e->d_name);
    if (sscanf(rp + 1, " %c %d %d %d", &state, &s.ppid, &s.pgrp, &s.session) != 4) continue;
    procs.push_back(s);
  }
  closedir(d);
  return procs;
}

std::set<pid_t> TreeOf(pid_t keeper, const std::vector<ProcStat>& procs) {
  std::set<pid_t> tree;
  if (keeper <= 0) return tree;
  std::set<pid_t> parents = {keeper};
  bool grew = true;
  while (grew) {
    grew = false;
    for (const ProcStat& p : procs) {
      if (parents.count(p.ppid) != 0 && parents.insert(p.pid).second) {
        tree.insert(p.pid);
        grew = true;
      }
    }
  }
  return tree;
}

}  // namespace sandrun::agent

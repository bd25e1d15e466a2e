#include "sandbox/os/proc_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sandbox/os/random.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun {
namespace {

// Parses "pid (comm) S ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
// stime cutime cstime priority nice threads itrealvalue starttime ...". comm may hold spaces,
// newlines and ')': the fields start after the last ')'.
std::optional<ProcStat> ParseStat(pid_t pid, char* line) {
  char* close_paren = std::strrchr(line, ')');
  if (close_paren == nullptr) return std::nullopt;
  ProcStat s;
  s.pid = pid;
  long ppid = 0, pgrp = 0, sid = 0;
  unsigned long long start = 0;
  int n = std::sscanf(close_paren + 1,
                      " %c %ld %ld %ld %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                      "%*s %llu",
                      &s.state, &ppid, &pgrp, &sid, &start);
  if (n != 5) return std::nullopt;
  s.ppid = static_cast<pid_t>(ppid);
  s.pgrp = static_cast<pid_t>(pgrp);
  s.sid = static_cast<pid_t>(sid);
  s.start_ticks = start;
  return s;
}

bool AllDigits(const char* s) {
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9') return false;
  }
  return true;
}

}  // namespace

Result<std::string> NewTreeToken() { return RandomHex(16); }

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  char path[32];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  char buf[1024];
  ssize_t n = ::read(fd.get(), buf, sizeof(buf) - 1);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  return ParseStat(pid, buf);
}

Result<std::vector<ProcStat>> ReadProcTable() {
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return Error::FromErrno(errno, "opendir /proc");
  std::vector<ProcStat> table;
  while (dirent* entry = ::readdir(dir)) {
    if (!AllDigits(entry->d_name)) continue;
    long pid = std::strtol(entry->d_name, nullptr, 10);
    if (auto stat = ReadProcStat(static_cast<pid_t>(pid))) table.push_back(*stat);
  }
  ::closedir(dir);
  return table;
}

bool EnvironHas(pid_t pid, std::string_view entry) {
  char path[40];
  std::snprintf(path, sizeof(path), "/proc/%d/environ", static_cast<int>(pid));
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  // Streamed through a window that keeps the current, unfinished string: an environment can be
  // megabytes, the entry is short.
  std::string current;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\0') {
        if (current == entry) return true;
        current.clear();
      } else if (current.size() <= entry.size()) {
        current.push_back(buf[i]);  // longer strings cannot match: stop growing
      }
    }
  }
  return current == entry;
}

Status SignalIfSame(pid_t pid, uint64_t start_ticks, int sig) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid()) {
    if (errno == ESRCH) return Ok();
    return Error::FromErrno(errno, "pidfd_open " + std::to_string(pid));
  }
  // The pidfd names whoever had the pid when it was opened. If that process is still alive now,
  // /proc/<pid> is it; if it died in between, the signal below fails with ESRCH.
  std::optional<ProcStat> now = ReadProcStat(pid);
  if (!now || now->start_ticks != start_ticks) return Ok();  // not the process we meant
  if (::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0) != 0 && errno != ESRCH) {
    return Error::FromErrno(errno, "pidfd_send_signal " + std::to_string(pid));
  }
  return Ok();
}

}  // namespace sandrun

// Finding processes by their exact command line, for tests that check what survived a kill:
// a unique command line ("sleep 1000.<pid><n>") cannot be mistaken for a process that reuses a
// dead one's pid.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/os/proc_table.h"

namespace sandrun::testing {

// Live processes (zombies excluded) whose command line, arguments joined by spaces, is `args`.
inline std::vector<pid_t> LiveWithArgs(const std::string& args) {
  std::vector<pid_t> out;
  auto table = ReadProcTable();
  if (!table) return out;
  for (const ProcStat& p : *table) {
    if (p.dead()) continue;
    // Raw reads: a process that exits meanwhile makes read() fail, which a stream would throw.
    std::string cmdline;
    int fd = ::open(("/proc/" + std::to_string(p.pid) + "/cmdline").c_str(), O_RDONLY);
    char buf[512];
    for (ssize_t n; fd >= 0 && (n = ::read(fd, buf, sizeof(buf))) > 0;) {
      cmdline.append(buf, static_cast<size_t>(n));
    }
    if (fd >= 0) ::close(fd);
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline == args + " ") out.push_back(p.pid);
  }
  return out;
}

// Polls until a process runs `args`, for up to `wait`.
inline bool RunsWithin(const std::string& args, std::chrono::milliseconds wait) {
  auto until = std::chrono::steady_clock::now() + wait;
  while (LiveWithArgs(args).empty()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace sandrun::testing

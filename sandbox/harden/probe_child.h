// One forked child that runs a probe and reports a fixed-size struct back on a pipe: how doctor
// and the hardening code ask the kernel what a child would be allowed to do (load a filter,
// unshare namespaces) without doing it to the runner itself.
//
// Pattern of use:
//   struct Report { int32_t err; char step[60]; };
//   auto report = RunProbeChild<Report>("the confinement probe", [&](Report* r) { ... });
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <type_traits>

#include "sandbox/base/result.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::harden {

// Copies a static step name into a report's fixed buffer, NUL-terminated.
template <size_t N>
void CopyStep(char (&out)[N], const char* step) {
  size_t i = 0;
  for (; step != nullptr && i + 1 < N && step[i] != '\0'; ++i) out[i] = step[i];
  out[i] = '\0';
}

// Forks; the child runs `probe(&report)` (it may change anything about itself: it exits right
// after) and writes the report; the parent reads it whole and reaps the child. An Error when the
// child could not be started or ended without a whole report (`what` names the probe).
template <typename Report, typename Probe>
Result<Report> RunProbeChild(const std::string& what, Probe probe) {
  static_assert(std::is_trivially_copyable_v<Report>);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::FromErrno(errno, "pipe2");
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno(errno, "fork");
  if (pid == 0) {
    Report report{};
    probe(&report);
    ssize_t ignored = ::write(write_end.get(), &report, sizeof(report));
    (void)ignored;
    ::_exit(0);
  }
  write_end.reset();
  Report report{};
  size_t got = 0;
  while (got < sizeof(report)) {
    ssize_t n =
        ::read(read_end.get(), reinterpret_cast<char*>(&report) + got, sizeof(report) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (got != sizeof(report)) {
    return Error(ErrorCode::kInternal,
                 what + " ended without a report (status " + std::to_string(status) + ")");
  }
  return report;
}

}  // namespace sandrun::harden

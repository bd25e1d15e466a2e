// Pseudo-terminals: a master/slave pair with a window size, for commands that want a TTY.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(Pty pty, OpenPty(30, 120));
//   ... the child: setsid(), ioctl(slave, TIOCSCTTY, 0), dup2(slave, 0/1/2) ...
//   ... the parent closes `slave` and reads/writes `master` ...
#pragma once

#include <string>

#include "sandbox/base/result.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun {

struct Pty {
  UniqueFd master;         // O_CLOEXEC | O_NONBLOCK: the parent's end
  UniqueFd slave;          // O_CLOEXEC | O_NOCTTY: the child's terminal
  std::string slave_path;  // "/dev/pts/N"
};

// Opens a new pair (posix_openpt, grantpt, unlockpt, ptsname_r) with a `rows` x `cols` window.
// The terminal settings are the kernel's defaults (echo, canonical mode, \n -> \r\n on output).
Result<Pty> OpenPty(unsigned rows, unsigned cols);

// Sets the window size of the terminal behind `fd` (either end); the foreground process group
// gets SIGWINCH.
Status SetWindowSize(int fd, unsigned rows, unsigned cols);

}  // namespace sandrun

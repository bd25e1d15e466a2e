#include "sandbox/os/pty.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <cerrno>
#include <limits>

namespace sandrun {

Status SetWindowSize(int fd, unsigned rows, unsigned cols) {
  constexpr unsigned kMax = std::numeric_limits<unsigned short>::max();
  if (rows == 0 || cols == 0 || rows > kMax || cols > kMax) {
    return Error(
        ErrorCode::kInvalidArgument,
        "terminal size out of range: " + std::to_string(rows) + "x" + std::to_string(cols));
  }
  winsize size{};
  size.ws_row = static_cast<unsigned short>(rows);
  size.ws_col = static_cast<unsigned short>(cols);
  if (::ioctl(fd, TIOCSWINSZ, &size) != 0) return Error::FromErrno(errno, "TIOCSWINSZ");
  return Ok();
}

Result<Pty> OpenPty(unsigned rows, unsigned cols) {
  Pty pty;
  pty.master.reset(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!pty.master.valid()) return Error::FromErrno(errno, "posix_openpt");
  if (::grantpt(pty.master.get()) != 0) return Error::FromErrno(errno, "grantpt");
  if (::unlockpt(pty.master.get()) != 0) return Error::FromErrno(errno, "unlockpt");
  char name[64];
  if (int rc = ::ptsname_r(pty.master.get(), name, sizeof(name)); rc != 0) {
    return Error::FromErrno(rc, "ptsname_r");
  }
  pty.slave_path = name;
  pty.slave.reset(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!pty.slave.valid()) return Error::FromErrno(errno, "open " + pty.slave_path);
  SANDRUN_RETURN_IF_ERROR(SetWindowSize(pty.master.get(), rows, cols));
  int flags = ::fcntl(pty.master.get(), F_GETFL);
  if (flags < 0 || ::fcntl(pty.master.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return Error::FromErrno(errno, "fcntl O_NONBLOCK on the pty master");
  }
  return pty;
}

}  // namespace sandrun

#include "sandbox/harden/seccomp_support.h"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace sandrun::harden {

Result<SeccompSupport> ProbeSeccomp() {
  // PR_GET_SECCOMP fails with EINVAL when the kernel was built without CONFIG_SECCOMP.
  if (::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
    return Error::FromErrno(errno, "the kernel has no seccomp support (prctl PR_GET_SECCOMP)");
  }
  // Filter mode plus the action we deny with; needs CONFIG_SECCOMP_FILTER (Linux 4.14+).
  uint32_t action = SECCOMP_RET_ERRNO;
  if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) != 0) {
    return Error::FromErrno(errno, "seccomp filter mode is not available");
  }
  SeccompSupport out;
  const scmp_version* v = seccomp_version();
  out.library_version =
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->micro);
  out.api_level = static_cast<int>(seccomp_api_get());
  return out;
}

}  // namespace sandrun::harden

// Whether this kernel and libseccomp can filter system calls (reported by `sandrun doctor`;
// the host executor refuses to run without it unless a profile makes seccomp optional).
#pragma once

#include <string>

#include "sandbox/base/result.h"

namespace sandrun::harden {

struct SeccompSupport {
  std::string library_version;  // libseccomp's, "2.5.4"
  int api_level = 0;            // libseccomp's API level for this kernel
};

// Ok when the kernel has seccomp filter mode with SECCOMP_RET_ERRNO; an error says what lacks.
Result<SeccompSupport> ProbeSeccomp();

}  // namespace sandrun::harden

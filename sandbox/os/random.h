// Random ids from the kernel (getrandom), as lowercase hex.
#pragma once

#include <cstddef>
#include <string>

#include "sandbox/base/result.h"

namespace sandrun {

// `bytes` random bytes as 2 * bytes hex digits. An Error only when getrandom fails (ENOSYS on a
// very old kernel, or a seccomp filter): never a weaker fallback.
Result<std::string> RandomHex(size_t bytes);

}  // namespace sandrun

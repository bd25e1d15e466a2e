// Compiling a seccomp profile (seccomp_profile.h) to a classic-BPF program with libseccomp, in
// the parent, once per process: the child only hands the finished program to seccomp(2).
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(SeccompProfile p, LoadSeccompProfile(dir, "host"));
//   SANDRUN_ASSIGN_OR_RETURN(SeccompFilter f, CompileSeccompProfile(p));
//   sock_fprog prog = f.fprog();   // valid while `f` lives; load with seccomp(2) in the child
//
// libseccomp 2.5.4 (Debian 12) has seccomp_export_bpf(ctx, fd) but no in-memory export, so the
// program goes through a memfd and is read back. The program is never loaded by libseccomp itself
// (seccomp_load allocates, which the child must not).
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/harden/seccomp_profile.h"

namespace sandrun::harden {

// What the filter is compiled for. Defaults describe this process on this machine.
struct SeccompCompileOptions {
  uint32_t native_arch = 0;                   // SCMP_ARCH_*; 0: seccomp_arch_native()
  std::optional<std::pair<int, int>> kernel;  // for minKernel; nullopt: uname()
  // Capabilities the filtered process will hold, for includes/excludes "caps" (Docker compares
  // them with the container's bounding set).
  std::vector<std::string> capabilities;
};

// A compiled program. Move-only in spirit: fprog() points into `program`.
struct SeccompFilter {
  std::vector<sock_filter> program;
  std::vector<std::string> warnings;  // skipped names ("<path>: syscalls[3]: unknown syscall x")
  size_t rules_added = 0;             // libseccomp rules added (per syscall name and rule)

  sock_fprog fprog() const {
    return sock_fprog{static_cast<unsigned short>(program.size()),
                      const_cast<sock_filter*>(program.data())};
  }
};

// Compiles `profile`: the native architecture plus its archMap sub-architectures, rules whose
// includes/excludes apply here, names libseccomp does not know skipped with a warning, rules
// with the default action skipped (libseccomp refuses them; they change nothing). Errors name
// the file, the rule and the syscall.
Result<SeccompFilter> CompileSeccompProfile(const SeccompProfile& profile,
                                            const SeccompCompileOptions& options = {});

// What a compiled program depends on besides the profile and the capabilities: the native
// architecture, the running kernel's major.minor (minKernel rules) and libseccomp's version.
// Part of the key of cached programs.
std::string SeccompCompilerFingerprint();

// The running kernel's "major.minor" from uname(2).
std::pair<int, int> RunningKernelVersion();

}  // namespace sandrun::harden

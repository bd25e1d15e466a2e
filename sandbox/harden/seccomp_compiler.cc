#include "sandbox/harden/seccomp_compiler.h"

#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "sandbox/os/unique_fd.h"

namespace sandrun::harden {
namespace {

// RAII for libseccomp's filter context (named deleter, not a lambda: ODR-safe in headers).
struct SeccompCtxDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using SeccompCtx = std::unique_ptr<void, SeccompCtxDeleter>;

uint32_t ActionValue(SeccompAction action, int errno_ret) {
  switch (action) {
    case SeccompAction::kAllow:
      return SCMP_ACT_ALLOW;
    case SeccompAction::kErrno:
      return SCMP_ACT_ERRNO(static_cast<uint32_t>(errno_ret));
    case SeccompAction::kKillThread:
      return SCMP_ACT_KILL_THREAD;
    case SeccompAction::kKillProcess:
      return SCMP_ACT_KILL_PROCESS;
    case SeccompAction::kTrap:
      return SCMP_ACT_TRAP;
    case SeccompAction::kLog:
      return SCMP_ACT_LOG;
  }
  return SCMP_ACT_KILL_PROCESS;
}

scmp_compare CompareOp(SeccompOp op) {
  switch (op) {
    case SeccompOp::kNe:
      return SCMP_CMP_NE;
    case SeccompOp::kLt:
      return SCMP_CMP_LT;
    case SeccompOp::kLe:
      return SCMP_CMP_LE;
    case SeccompOp::kEq:
      return SCMP_CMP_EQ;
    case SeccompOp::kGe:
      return SCMP_CMP_GE;
    case SeccompOp::kGt:
      return SCMP_CMP_GT;
    case SeccompOp::kMaskedEq:
      return SCMP_CMP_MASKED_EQ;
  }
  return SCMP_CMP_EQ;
}

bool Held(const std::vector<std::string>& caps, const std::string& cap) {
  return std::find(caps.begin(), caps.end(), cap) != caps.end();
}

bool AtLeast(std::pair<int, int> kernel, std::pair<int, int> min) { return kernel >= min; }

// moby 20.10's setupSeccomp: excludes first (arch, caps, minKernel), then includes.
bool RuleApplies(const SeccompRule& rule, uint32_t arch, std::pair<int, int> kernel,
                 const std::vector<std::string>& caps) {
  const SeccompCondition& ex = rule.excludes;
  for (const std::string& a : ex.arches) {
    if (GoArchMatches(a, arch)) return false;
  }
  for (const std::string& c : ex.caps) {
    if (Held(caps, c)) return false;
  }
  if (ex.min_kernel && AtLeast(kernel, *ex.min_kernel)) return false;
  const SeccompCondition& in = rule.includes;
  if (!in.arches.empty() && std::none_of(in.arches.begin(), in.arches.end(),
                                         [&](const auto& a) { return GoArchMatches(a, arch); })) {
    return false;
  }
  for (const std::string& c : in.caps) {
    if (!Held(caps, c)) return false;
  }
  if (in.min_kernel && !AtLeast(kernel, *in.min_kernel)) return false;
  return true;
}

uint32_t ArchToken(const std::string& scmp_name) {
  std::string lower = scmp_name.substr(std::string_view("SCMP_ARCH_").size());
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return seccomp_arch_resolve_name(lower.c_str());
}

Result<std::vector<sock_filter>> ExportBpf(const SeccompCtx& ctx, const std::string& path) {
  UniqueFd fd(::memfd_create("sandrun-seccomp-bpf", MFD_CLOEXEC));
  if (!fd.valid()) return Error::FromErrno(errno, "memfd_create for the seccomp program");
  if (int rc = seccomp_export_bpf(ctx.get(), fd.get()); rc < 0) {
    return Error::FromErrno(-rc, path + ": exporting the compiled seccomp program");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno(errno, "fstat seccomp memfd");
  const size_t bytes = static_cast<size_t>(st.st_size);
  if (bytes == 0 || bytes % sizeof(sock_filter) != 0) {
    return Error(ErrorCode::kInternal, path + ": libseccomp exported " + std::to_string(bytes) +
                                           " bytes, not a whole BPF program");
  }
  std::vector<sock_filter> program(bytes / sizeof(sock_filter));
  size_t got = 0;
  auto* out = reinterpret_cast<char*>(program.data());
  while (got < bytes) {
    ssize_t n = ::pread(fd.get(), out + got, bytes - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::FromErrno(n < 0 ? errno : EIO, "reading the seccomp memfd");
    got += static_cast<size_t>(n);
  }
  return program;
}

}  // namespace

std::pair<int, int> RunningKernelVersion() {
  utsname u{};
  int major = 0, minor = 0;
  if (::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &major, &minor) == 2) {
    return {major, minor};
  }
  return {0, 0};
}

Result<SeccompFilter> CompileSeccompProfile(const SeccompProfile& profile,
                                            const SeccompCompileOptions& options) {
  const uint32_t default_action = ActionValue(profile.default_action, profile.default_errno_ret);
  SeccompCtx ctx(seccomp_init(default_action));
  if (!ctx) return Error(ErrorCode::kInternal, profile.path + ": seccomp_init failed");
  const uint32_t native = seccomp_arch_native();
  const std::pair<int, int> kernel = options.kernel.value_or(RunningKernelVersion());

  // Docker's archMap: the native architecture's entry adds its sub-architectures, so x86_64
  // also filters i386 and x32 system calls (otherwise `int 0x80` would walk around the rules).
  for (const SeccompArchEntry& entry : profile.arch_map) {
    if (ArchToken(entry.architecture) != native) continue;
    for (const std::string& sub : entry.sub_architectures) {
      int rc = seccomp_arch_add(ctx.get(), ArchToken(sub));
      if (rc < 0 && rc != -EEXIST) {
        return Error::FromErrno(-rc, profile.path + ": adding architecture " + sub);
      }
    }
  }
  // A binary decision tree instead of a linear list of syscall checks: the allow-list profiles
  // have ~350 names, and every system call of the command walks this program.
  (void)seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);

  SeccompFilter filter;
  for (size_t i = 0; i < profile.rules.size(); ++i) {
    const SeccompRule& rule = profile.rules[i];
    const std::string where = profile.path + ": syscalls[" + std::to_string(i) + "]";
    if (!RuleApplies(rule, native, kernel, options.capabilities)) continue;
    const uint32_t action = ActionValue(rule.action, rule.errno_ret);
    if (action == default_action) continue;  // libseccomp refuses it (EACCES); it changes nothing
    std::vector<scmp_arg_cmp> cmps;
    for (const SeccompArg& a : rule.args) {
      scmp_arg_cmp c{};
      c.arg = a.index;
      c.op = CompareOp(a.op);
      c.datum_a = a.value;
      c.datum_b = a.value_two;
      cmps.push_back(c);
    }
    for (const std::string& name : rule.names) {
      int nr = seccomp_syscall_resolve_name(name.c_str());
      if (nr == __NR_SCMP_ERROR) {
        filter.warnings.push_back(where + ": unknown syscall \"" + name + "\" skipped");
        continue;
      }
      int rc = seccomp_rule_add_array(ctx.get(), action, nr, static_cast<unsigned>(cmps.size()),
                                      cmps.empty() ? nullptr : cmps.data());
      if (rc < 0) {
        return Error::FromErrno(-rc, where + ": libseccomp refused the rule for \"" + name + "\"");
      }
      ++filter.rules_added;
    }
  }
  SANDRUN_ASSIGN_OR_RETURN(filter.program, ExportBpf(ctx, profile.path));
  if (filter.program.size() > BPF_MAXINSNS) {
    return Error(ErrorCode::kInvalidArgument, profile.path + ": the compiled filter has " +
                                                  std::to_string(filter.program.size()) +
                                                  " instructions; the kernel accepts " +
                                                  std::to_string(BPF_MAXINSNS));
  }
  return filter;
}

std::string SeccompCompilerFingerprint() {
  const scmp_version* v = seccomp_version();
  const std::pair<int, int> kernel = RunningKernelVersion();
  return "arch=" + std::to_string(seccomp_arch_native()) +
         " kernel=" + std::to_string(kernel.first) + "." + std::to_string(kernel.second) +
         " libseccomp=" +
         (v == nullptr ? std::string("?")
                       : std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                             std::to_string(v->micro));
}

}  // namespace sandrun::harden

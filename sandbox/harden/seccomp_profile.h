// Seccomp profiles: profiles/seccomp/<name>.json in Docker's (moby 20.10) format, plus "name",
// "description" and a required "comment" per rule. The one loader of that format: containers
// get the file inline (its compact JSON, through the plan), host commands get it compiled with
// libseccomp (seccomp_compiler.h).
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(SeccompProfile p, LoadSeccompProfile(DefaultProfilesDir(), "host"));
//   for (const std::string& finding : LintSeccompProfile(p)) ...;   // empty for shipped files
//   SANDRUN_ASSIGN_OR_RETURN(std::string json, LoadSeccompProfileJson(dir, "default"));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/harden/profile_file.h"

namespace sandrun::harden {

enum class SeccompAction { kAllow, kErrno, kKillThread, kKillProcess, kTrap, kLog };
enum class SeccompOp { kNe, kLt, kLe, kEq, kGe, kGt, kMaskedEq };

struct SeccompArg {
  unsigned index = 0;      // 0..5
  uint64_t value = 0;      // the operand; for kMaskedEq the mask
  uint64_t value_two = 0;  // for kMaskedEq the expected masked value; otherwise unused
  SeccompOp op = SeccompOp::kEq;
};

// includes/excludes: whether a rule applies at all on this machine.
struct SeccompCondition {
  std::vector<std::string> arches;                // Go-style names: amd64, x32, arm64, s390x, ...
  std::vector<std::string> caps;                  // CAP_* names
  std::optional<std::pair<int, int>> min_kernel;  // "4.8" -> {4, 8}
  bool empty() const { return arches.empty() && caps.empty() && !min_kernel; }
};

struct SeccompRule {
  std::string comment;             // why (required, non-empty)
  std::vector<std::string> names;  // syscall names as libseccomp spells them
  SeccompAction action = SeccompAction::kAllow;
  int errno_ret = 1;             // kErrno only: 1 (EPERM) when "errnoRet" is absent
  std::vector<SeccompArg> args;  // all must hold; at most one per argument index
  SeccompCondition includes;
  SeccompCondition excludes;
};

struct SeccompArchEntry {
  std::string architecture;                    // "SCMP_ARCH_X86_64"
  std::vector<std::string> sub_architectures;  // "SCMP_ARCH_X86", ...
};

struct SeccompProfile {
  std::string path;
  std::string name;
  std::string description;
  SeccompAction default_action = SeccompAction::kErrno;
  int default_errno_ret = 1;  // kErrno only
  std::vector<SeccompArchEntry> arch_map;
  std::vector<SeccompRule> rules;
  std::string compact_json;  // the file as dockerd receives it
};

// Reads and checks profiles/seccomp/<name>.json. Every error names the file, the key and the
// reason ("<path>: syscalls[3].action: unknown action \"SCMP_ACT_FOO\""). Checked: known keys
// only, known actions/operators/architectures, errnoRet only with SCMP_ACT_ERRNO (1..4095),
// argument index 0..5 and at most one comparison per argument per rule (libseccomp 2.5 refuses
// more), a non-empty comment per rule, minKernel as "X.Y". Syscall names are not checked here:
// names libseccomp does not know are skipped by the compiler, with a warning (as runc does).
Result<SeccompProfile> LoadSeccompProfile(const std::string& profiles_dir, const std::string& name);
Result<SeccompProfile> ParseSeccompProfile(std::string_view text, const std::string& path,
                                           const std::string& expected_name);

// LoadSeccompProfile(...).compact_json: what a sandbox plan carries
// (SandboxSpec::seccomp_profile_json).
Result<std::string> LoadSeccompProfileJson(const std::string& profiles_dir,
                                           const std::string& name);

// Syscalls that reach kernel-level or cross-process power (mounts, namespaces, ptrace, module
// and kexec loading, bpf, keyrings, raw I/O, ...): allowing one needs a stated reason.
const std::vector<std::string_view>& DangerousSyscalls();

// The lint: each finding names the file, the rule and the syscall. A rule that allows a dangerous
// syscall must mention it by name in its comment; in a deny-list (defaultAction SCMP_ACT_ALLOW),
// a dangerous syscall that no rule names is allowed implicitly and must be named in the
// description. Empty for every shipped profile.
std::vector<std::string> LintSeccompProfile(const SeccompProfile& profile);

// "SCMP_ACT_ERRNO" etc.
const char* SeccompActionName(SeccompAction action);

// Whether `go_arch` (an includes/excludes "arches" entry) names the libseccomp architecture
// token `scmp_arch` (SCMP_ARCH_X86_64 ...): amd64 and x86_64 both name SCMP_ARCH_X86_64.
bool GoArchMatches(std::string_view go_arch, uint32_t scmp_arch);

}  // namespace sandrun::harden

// Capabilities of host commands: names and the runner's own state through libcap (parent side),
// and the child-side drop through raw prctl/capset calls on data prepared in the parent.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(CapMask keep, CapabilityMaskFromNames({"CAP_NET_BIND_SERVICE"}));
//   SANDRUN_ASSIGN_OR_RETURN(CapabilityPlan plan, PrepareCapabilities(keep));
//   ... in the child, between fork and exec:
//   if (int err = ApplyCapabilities(plan, &step); err != 0) report(step, err);
//
// Why not libcap in the child: cap_set_proc takes a spin lock stored inside the cap_t (a write to
// parent memory under CLONE_VM), and cap_reset_ambient calls cap_get_proc, which allocates. The
// child therefore issues the same system calls itself (PR_CAPBSET_DROP, capset,
// PR_CAP_AMBIENT_CLEAR_ALL/RAISE) with arguments computed here in the parent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::harden {

using CapMask = uint64_t;  // bit n = capability n (CAP_CHOWN = bit 0)

constexpr CapMask CapBit(int cap) { return CapMask{1} << cap; }

// "CAP_NET_RAW" -> 13, through libcap. Only the canonical upper-case CAP_ spelling is accepted;
// "ALL", numbers and unknown names are errors.
Result<int> CapabilityFromName(const std::string& name);
// 13 -> "CAP_NET_RAW".
std::string CapabilityName(int cap);
Result<CapMask> CapabilityMaskFromNames(const std::vector<std::string>& names);
std::vector<std::string> CapabilityNames(CapMask mask);

// The running kernel's highest capability number (libcap's cap_max_bits() - 1).
int LastCapability();

// This process's capability sets.
struct ProcessCaps {
  CapMask effective = 0;
  CapMask permitted = 0;
  CapMask inheritable = 0;
  CapMask bounding = 0;
  CapMask ambient = 0;
};
Result<ProcessCaps> CurrentCapabilities();

// The kernel's capset(2) ABI (version 3: two 32-bit words per set). Declared here instead of
// including <linux/capability.h>, whose structs clash with libcap's <sys/capability.h>.
struct RawCapHeader {
  uint32_t version = 0;
  int pid = 0;
};
struct RawCapData {
  uint32_t effective = 0;
  uint32_t permitted = 0;
  uint32_t inheritable = 0;
};

// Everything the child needs to end up with exactly `keep` (intersected with what the runner
// holds) in its bounding, permitted, effective, inheritable and ambient sets.
struct CapabilityPlan {
  CapMask keep = 0;
  int last_cap = 0;
  // The bounding set can only be shrunk with CAP_SETPCAP; without it (a non-root runner) it stays
  // as inherited, which is harmless: such a runner has no capabilities to pass on, and
  // no_new_privs stops setuid and file-capability binaries from adding any.
  bool drop_bounding = false;
  RawCapHeader header;
  RawCapData data[2];
};

// `keep` minus what this process does not have in its permitted set.
Result<CapabilityPlan> PrepareCapabilities(CapMask keep);

// Child side, async-signal-safe, no allocation: drops the bounding set (all but keep), sets
// effective = permitted = inheritable = keep with capset, clears the ambient set and raises keep
// in it. Returns 0, or the errno with *step naming the failed step.
int ApplyCapabilities(const CapabilityPlan& plan, const char** step);
// Its two halves, for a sequence that changes identity in between (the uid switch needs
// CAP_SETUID still effective, the bounding-set drop needs CAP_SETPCAP).
int DropBoundingSet(const CapabilityPlan& plan, const char** step);
int SetCapabilitySets(const CapabilityPlan& plan, const char** step);

}  // namespace sandrun::harden

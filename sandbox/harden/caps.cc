#include "sandbox/harden/caps.h"

#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <type_traits>

namespace sandrun::harden {
namespace {

// _LINUX_CAPABILITY_VERSION_3 (<linux/capability.h>): 64-bit sets as two 32-bit words.
constexpr uint32_t kCapabilityVersion3 = 0x20080522;

struct CapDeleter {
  void operator()(void* p) const { cap_free(p); }
};
using CapState = std::unique_ptr<std::remove_pointer_t<cap_t>, CapDeleter>;

bool ValidName(const std::string& s) {
  return s.size() > 4 && s.rfind("CAP_", 0) == 0 && std::all_of(s.begin() + 4, s.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
         });
}

}  // namespace

Result<int> CapabilityFromName(const std::string& name) {
  if (name == "ALL") {
    return Error(ErrorCode::kInvalidArgument,
                 "\"ALL\" is not accepted: list every capability to keep by name");
  }
  cap_value_t value = 0;
  if (!ValidName(name) || cap_from_name(name.c_str(), &value) != 0 || value < 0) {
    return Error(ErrorCode::kInvalidArgument,
                 "unknown capability \"" + name + "\" (expected a name such as CAP_NET_RAW)");
  }
  return static_cast<int>(value);
}

std::string CapabilityName(int cap) {
  char* text = cap_to_name(static_cast<cap_value_t>(cap));
  if (text == nullptr) return "CAP_" + std::to_string(cap);
  std::string name(text);
  cap_free(text);
  for (char& c : name) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return name;
}

Result<CapMask> CapabilityMaskFromNames(const std::vector<std::string>& names) {
  CapMask mask = 0;
  for (const std::string& name : names) {
    SANDRUN_ASSIGN_OR_RETURN(int cap, CapabilityFromName(name));
    if (cap > 63) return Error(ErrorCode::kInvalidArgument, name + ": capability number > 63");
    mask |= CapBit(cap);
  }
  return mask;
}

std::vector<std::string> CapabilityNames(CapMask mask) {
  std::vector<std::string> names;
  for (int cap = 0; cap < 64; ++cap) {
    if ((mask & CapBit(cap)) != 0) names.push_back(CapabilityName(cap));
  }
  return names;
}

int LastCapability() {
  int bits = static_cast<int>(cap_max_bits());
  return std::min(bits, 64) - 1;
}

Result<ProcessCaps> CurrentCapabilities() {
  CapState state(cap_get_proc());
  if (!state) return Error::FromErrno(errno, "cap_get_proc");
  ProcessCaps caps;
  const int last = LastCapability();
  for (int cap = 0; cap <= last; ++cap) {
    const auto value = static_cast<cap_value_t>(cap);
    cap_flag_value_t flag = CAP_CLEAR;
    if (cap_get_flag(state.get(), value, CAP_EFFECTIVE, &flag) == 0 && flag == CAP_SET) {
      caps.effective |= CapBit(cap);
    }
    if (cap_get_flag(state.get(), value, CAP_PERMITTED, &flag) == 0 && flag == CAP_SET) {
      caps.permitted |= CapBit(cap);
    }
    if (cap_get_flag(state.get(), value, CAP_INHERITABLE, &flag) == 0 && flag == CAP_SET) {
      caps.inheritable |= CapBit(cap);
    }
    if (cap_get_bound(value) == 1) caps.bounding |= CapBit(cap);
    if (cap_get_ambient(value) == 1) caps.ambient |= CapBit(cap);
  }
  return caps;
}

Result<CapabilityPlan> PrepareCapabilities(CapMask keep) {
  SANDRUN_ASSIGN_OR_RETURN(ProcessCaps current, CurrentCapabilities());
  CapabilityPlan plan;
  plan.last_cap = LastCapability();
  plan.keep = keep & current.permitted & current.bounding;
  plan.drop_bounding = (current.effective & CapBit(CAP_SETPCAP)) != 0;
  plan.header.version = kCapabilityVersion3;
  plan.header.pid = 0;
  for (int word = 0; word < 2; ++word) {
    const auto bits = static_cast<uint32_t>(plan.keep >> (32 * word));
    plan.data[word].effective = bits;
    plan.data[word].permitted = bits;
    plan.data[word].inheritable = bits;
  }
  return plan;
}

int DropBoundingSet(const CapabilityPlan& plan, const char** step) {
  // Dropping from the bounding set needs CAP_SETPCAP in the effective set, which the capset in
  // SetCapabilitySets removes unless kept. It limits what any later execve can gain (root's
  // implicit file capabilities, setuid-root binaries).
  if (!plan.drop_bounding) return 0;
  for (int cap = 0; cap <= plan.last_cap; ++cap) {
    if ((plan.keep & CapBit(cap)) != 0) continue;
    if (::prctl(PR_CAPBSET_DROP, static_cast<unsigned long>(cap), 0, 0, 0) != 0 &&
        errno != EINVAL) {  // EINVAL: the kernel does not know this capability
      *step = "harden: drop capability bounding set";
      return errno;
    }
  }
  return 0;
}

int SetCapabilitySets(const CapabilityPlan& plan, const char** step) {
  // The process's own sets, all to `keep`: effective and permitted so the command holds
  // nothing else, inheritable so that kept capabilities can be raised into the ambient set.
  if (::syscall(SYS_capset, &plan.header, plan.data) != 0) {
    *step = "harden: capset";
    return errno;
  }
  // Ambient capabilities survive execve of ordinary binaries by non-root users: start from none.
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    *step = "harden: clear ambient capabilities";
    return errno;
  }
  for (int cap = 0; cap <= plan.last_cap; ++cap) {
    if ((plan.keep & CapBit(cap)) == 0) continue;
    // Kept capabilities go into the ambient set too, so a non-root runner's command keeps them
    // across execve (root gets them back from its implicit file capabilities anyway).
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, static_cast<unsigned long>(cap), 0, 0) != 0) {
      *step = "harden: raise ambient capability";
      return errno;
    }
  }
  return 0;
}

int ApplyCapabilities(const CapabilityPlan& plan, const char** step) {
  if (int err = DropBoundingSet(plan, step); err != 0) return err;
  return SetCapabilitySets(plan, step);
}

}  // namespace sandrun::harden

// Container presets: profiles/containers/<name>.json, the HostConfig every sandbox container
// starts from (SPEC §4). The one loader of that format.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(ContainerPreset preset, LoadContainerPreset(dir, "default"));
//   ctx.tmpfs_options = preset.tmpfs;                          // mount point -> options
//   LoadSeccompProfileJson(dir, preset.seccomp_profile);       // the inline seccomp= option
//
// Besides the shape (known keys, types), the loader refuses presets that would weaken the
// sandbox: NetworkMode "host" or "container:*", "unconfined" seccomp or AppArmor, a "seccomp="
// entry in SecurityOpt (it comes from seccompProfile), CapDrop without "ALL", no
// "no-new-privileges:true", ReadonlyRootfs false, Privileged, CapAdd, Binds and other
// HostConfig fields this loader does not know (they could carry anything).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::harden {

struct ContainerPreset {
  std::string path;
  std::string name;
  std::string description;
  std::string seccomp_profile;  // stem of profiles/seccomp/<x>.json
  // hostConfig, as written (Engine API 1.41 names and units).
  std::string network_mode = "none";
  bool readonly_rootfs = true;
  std::vector<std::string> cap_drop;
  std::vector<std::string> security_opt;     // without the seccomp= entry
  std::map<std::string, std::string> tmpfs;  // mount point -> options
  int64_t pids_limit = 0;
  int64_t memory = 0;
  int64_t memory_swap = 0;
  int64_t nano_cpus = 0;
  bool init = true;
  std::string workdir = "/workspace";
  std::map<std::string, std::string> env;
};

Result<ContainerPreset> LoadContainerPreset(const std::string& profiles_dir,
                                            const std::string& name);
Result<ContainerPreset> ParseContainerPreset(std::string_view text, const std::string& path,
                                             const std::string& expected_name);

}  // namespace sandrun::harden

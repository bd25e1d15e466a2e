// The container side of hardening where it meets the gate: the gate's built-in tmpfs options
// stay equal to profiles/containers/default.json, a spec built from the preset carries SPEC §4's
// security options, and dangerous bind sources (container runtime sockets) are refused.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "runner/policy/sandbox_spec.h"
#include "sandbox/harden/container_preset.h"
#include "sandbox/harden/seccomp_profile.h"

namespace sandrun::harden {
namespace {

TEST(ContainerPresetDriftTest, GateBuiltInTmpfsOptionsEqualTheDefaultPreset) {
  auto preset = LoadContainerPreset(SANDRUN_TEST_PROFILES_DIR, "default");
  ASSERT_TRUE(preset) << preset.error().ToString();
  EXPECT_EQ(policy::DefaultTmpfsOptions(), preset->tmpfs)
      << "runner/policy/sandbox_spec.cc's copy drifted from profiles/containers/default.json";
}

TEST(ContainerPresetDriftTest, ConfigDefaultsEqualTheDefaultPreset) {
  auto preset = LoadContainerPreset(SANDRUN_TEST_PROFILES_DIR, "default");
  ASSERT_TRUE(preset) << preset.error().ToString();
  config::DockerSettings d;
  EXPECT_EQ(d.network, preset->network_mode);
  EXPECT_EQ(d.read_only_root, preset->readonly_rootfs);
  EXPECT_EQ(d.cap_drop, preset->cap_drop);
  EXPECT_EQ(d.pids_limit, preset->pids_limit);
  EXPECT_EQ(d.memory_bytes, preset->memory);
  EXPECT_EQ(static_cast<int64_t>(d.cpus * 1e9), preset->nano_cpus);
  EXPECT_EQ(d.seccomp_profile, preset->seccomp_profile);
  EXPECT_EQ(d.workdir, preset->workdir);
  EXPECT_EQ(d.env, preset->env);
}

TEST(ContainerSpecTest, SpecFromThePresetCarriesSpecSectionFour) {
  auto preset = LoadContainerPreset(SANDRUN_TEST_PROFILES_DIR, "default");
  ASSERT_TRUE(preset);
  auto seccomp = LoadSeccompProfileJson(SANDRUN_TEST_PROFILES_DIR, preset->seccomp_profile);
  ASSERT_TRUE(seccomp);
  config::AgentSettings settings;
  policy::GateContext ctx;
  ctx.settings = &settings;
  ctx.state_dir = "/state";
  ctx.instance_id = "inst";
  ctx.host_env = {{"HOME", "/home/u"}};
  ctx.seccomp_profile_json = *seccomp;
  ctx.tmpfs_options = preset->tmpfs;
  auto spec = policy::BuildSandboxSpec(ctx);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->network, "none");
  EXPECT_TRUE(spec->read_only_root);
  EXPECT_EQ(spec->cap_drop, std::vector<std::string>{"ALL"});
  EXPECT_TRUE(spec->no_new_privileges);
  EXPECT_EQ(spec->seccomp_profile_name, preset->seccomp_profile);
  EXPECT_EQ(spec->seccomp_profile_json, *seccomp);
  // The preset's tmpfs, plus HOME: the sandbox user's own tmpfs (issue 19).
  std::map<std::string, std::string> tmpfs = preset->tmpfs;
  tmpfs["/home/sandrun"] = "rw,exec,nosuid,nodev,size=256m,mode=0700,uid=65534,gid=65534";
  EXPECT_EQ(spec->tmpfs_options, tmpfs);
  EXPECT_EQ(spec->pids_limit, 512);
  EXPECT_EQ(spec->memory_bytes, int64_t{1} << 30);
  EXPECT_EQ(spec->memory_swap_bytes, int64_t{1} << 30);
  EXPECT_EQ(spec->nano_cpus, 1000000000);
  EXPECT_TRUE(spec->init);
}

class RuntimeSocketBindTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RuntimeSocketBindTest, IsRefused) {
  auto r = policy::ValidateBind(GetParam(), "/home/u", "/workspace");
  ASSERT_FALSE(r) << GetParam();
  EXPECT_EQ(r.error().WireCode(), "invalid-config");
  EXPECT_NE(r.error().message.find("socket"), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(Sockets, RuntimeSocketBindTest,
                         ::testing::Values("/srv/docker.sock:/s", "/srv/containerd.sock:/s",
                                           "/srv/podman/podman.sock:/s", "/opt/crio.sock:/s:ro",
                                           "/srv/cri-dockerd.sock:/s",
                                           "/srv/buildkit/buildkitd.sock:/s"));

TEST(RuntimeSocketBindTest, OrdinarySourcesStillPass) {
  auto r = policy::ValidateBind("/srv/data:/data:ro", "/home/u", "/workspace");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "/srv/data:/data:ro");
}

}  // namespace
}  // namespace sandrun::harden

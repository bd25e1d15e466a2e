// The shipped profiles/ files: every one loads with its kind's loader, every seccomp profile
// compiles and passes the lint, and the files refer to each other consistently.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "sandbox/harden/container_preset.h"
#include "sandbox/harden/host_profile.h"
#include "sandbox/harden/profile_file.h"
#include "sandbox/harden/seccomp_compiler.h"
#include "sandbox/harden/seccomp_profile.h"

namespace sandrun::harden {
namespace {

const std::string kDir = SANDRUN_TEST_PROFILES_DIR;

std::vector<std::string> Names(std::string_view kind) {
  auto names = ListProfiles(kDir, kind);
  EXPECT_TRUE(names) << names.error().ToString();
  return names ? *names : std::vector<std::string>{};
}

TEST(ShippedProfilesTest, EveryKindHasItsDefaultAndThePrivilegedHostProfile) {
  auto has = [](const std::vector<std::string>& v, const char* n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  EXPECT_TRUE(has(Names("seccomp"), "default"));
  EXPECT_TRUE(has(Names("seccomp"), "host"));
  EXPECT_TRUE(has(Names("host"), "default"));
  EXPECT_TRUE(has(Names("host"), "privileged"));
  EXPECT_TRUE(has(Names("containers"), "default"));
}

TEST(ShippedProfilesTest, EverySeccompProfileLoadsCompilesAndPassesTheLint) {
  for (const std::string& name : Names("seccomp")) {
    SCOPED_TRACE(name);
    auto p = LoadSeccompProfile(kDir, name);
    ASSERT_TRUE(p) << p.error().ToString();
    EXPECT_EQ(p->name, name);
    EXPECT_FALSE(p->rules.empty());
    for (const std::string& finding : LintSeccompProfile(*p)) ADD_FAILURE() << finding;
    auto f = CompileSeccompProfile(*p);
    ASSERT_TRUE(f) << f.error().ToString();
    EXPECT_GT(f->program.size(), 4u);
    EXPECT_GT(f->rules_added, 0u);
    for (const std::string& w : f->warnings) ADD_FAILURE() << "shipped names all resolve: " << w;
  }
}

TEST(ShippedProfilesTest, EveryHostProfileLoadsAndNamesALoadableSeccompProfile) {
  for (const std::string& name : Names("host")) {
    SCOPED_TRACE(name);
    auto p = LoadHostProfile(kDir, name);
    ASSERT_TRUE(p) << p.error().ToString();
    EXPECT_TRUE(p->no_new_privs);
    auto s = LoadSeccompProfile(kDir, p->seccomp_profile);
    EXPECT_TRUE(s) << s.error().ToString();
  }
}

TEST(ShippedProfilesTest, DefaultHostProfileKeepsNothingAndRequiresSeccomp) {
  auto p = LoadHostProfile(kDir, "default");
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->keep_mask, 0u);
  EXPECT_EQ(p->seccomp_mode, SeccompMode::kRequired);
  EXPECT_EQ(p->seccomp_profile, "host");
}

TEST(ShippedProfilesTest, PrivilegedHostProfileKeepsAnExplicitListWithoutKernelPowers) {
  auto p = LoadHostProfile(kDir, "privileged");
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_FALSE(p->keep_capabilities.empty());
  for (const char* never : {"CAP_SYS_ADMIN", "CAP_SYS_MODULE", "CAP_SYS_BOOT", "CAP_SYS_RAWIO",
                            "CAP_BPF", "CAP_SYS_PTRACE", "CAP_MKNOD", "CAP_SETFCAP"}) {
    auto cap = CapabilityFromName(never);
    ASSERT_TRUE(cap) << never;
    EXPECT_EQ(p->keep_mask & CapBit(*cap), 0u) << never;
  }
  auto s = LoadSeccompProfile(kDir, p->seccomp_profile);
  ASSERT_TRUE(s);
  for (const char* denied :
       {"init_module", "finit_module", "kexec_load", "kexec_file_load", "bpf"}) {
    bool found = std::any_of(s->rules.begin(), s->rules.end(), [&](const SeccompRule& r) {
      return r.action == SeccompAction::kErrno && r.args.empty() &&
             std::find(r.names.begin(), r.names.end(), denied) != r.names.end();
    });
    EXPECT_TRUE(found) << denied << " is denied unconditionally";
  }
}

TEST(ShippedProfilesTest, EveryContainerPresetLoadsAndNamesALoadableSeccompProfile) {
  for (const std::string& name : Names("containers")) {
    SCOPED_TRACE(name);
    auto p = LoadContainerPreset(kDir, name);
    ASSERT_TRUE(p) << p.error().ToString();
    auto json = LoadSeccompProfileJson(kDir, p->seccomp_profile);
    EXPECT_TRUE(json) << json.error().ToString();
  }
}

TEST(ShippedProfilesTest, DefaultContainerPresetIsSpecSectionFour) {
  auto p = LoadContainerPreset(kDir, "default");
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->network_mode, "none");
  EXPECT_TRUE(p->readonly_rootfs);
  EXPECT_EQ(p->cap_drop, std::vector<std::string>{"ALL"});
  EXPECT_EQ(p->security_opt, std::vector<std::string>{"no-new-privileges:true"});
  EXPECT_EQ(p->pids_limit, 512);
  EXPECT_EQ(p->memory, int64_t{1} << 30);
  EXPECT_EQ(p->nano_cpus, 1000000000);
  EXPECT_TRUE(p->init);
  EXPECT_EQ(p->tmpfs.size(), 3u);
  EXPECT_EQ(p->tmpfs.count("/tmp"), 1u);
  EXPECT_EQ(p->tmpfs.count("/var/tmp"), 1u);
  EXPECT_EQ(p->tmpfs.count("/run"), 1u);
  EXPECT_EQ(p->seccomp_profile, "default");
}

TEST(ShippedProfilesTest, ContainerSeccompJsonIsCompactAndKeepsDockersKeys) {
  auto json = LoadSeccompProfileJson(kDir, "default");
  ASSERT_TRUE(json) << json.error().ToString();
  EXPECT_EQ(json->find('\n'), std::string::npos);
  EXPECT_NE(json->find("\"defaultAction\":\"SCMP_ACT_ERRNO\""), std::string::npos);
  EXPECT_NE(json->find("\"archMap\""), std::string::npos);
}

TEST(ShippedProfilesTest, ContainerAllowListDeniesTheKernelLevelCalls) {
  auto p = LoadSeccompProfile(kDir, "default");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->default_action, SeccompAction::kErrno);
  for (const char* denied : {"mount", "unshare", "setns", "bpf", "kexec_load", "init_module",
                             "keyctl", "io_uring_setup", "userfaultfd", "open_by_handle_at"}) {
    bool allowed = std::any_of(p->rules.begin(), p->rules.end(), [&](const SeccompRule& r) {
      return r.action == SeccompAction::kAllow &&
             std::find(r.names.begin(), r.names.end(), denied) != r.names.end();
    });
    EXPECT_FALSE(allowed) << denied;
  }
}

TEST(ListProfilesTest, MissingDirectoryIsAnError) {
  auto names = ListProfiles("/nonexistent-profiles", "host");
  ASSERT_FALSE(names);
  EXPECT_NE(names.error().message.find("/nonexistent-profiles/host"), std::string::npos);
}

}  // namespace
}  // namespace sandrun::harden

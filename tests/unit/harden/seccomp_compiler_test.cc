// Compiling seccomp profiles with libseccomp (in-process only: nothing is loaded here; the
// sandbox tests load the programs into real processes).
#include "sandbox/harden/seccomp_compiler.h"

#include <gtest/gtest.h>

#include <string>

#include "sandbox/harden/caps.h"

namespace sandrun::harden {
namespace {

SeccompProfile Parse(const std::string& rules, const std::string& default_action = "SCMP_ACT_ALLOW",
                     const std::string& extra = "") {
  auto p =
      ParseSeccompProfile(R"({"name": "t", "description": "d", "defaultAction": ")" +
                              default_action + "\", " + extra + R"("syscalls": [)" + rules + "]}",
                          "/p/seccomp/t.json", "t");
  EXPECT_TRUE(p) << p.error().ToString();
  return p ? std::move(p).value() : SeccompProfile{};
}

size_t RulesAdded(const SeccompProfile& p, const SeccompCompileOptions& options = {}) {
  auto f = CompileSeccompProfile(p, options);
  EXPECT_TRUE(f) << f.error().ToString();
  return f ? f->rules_added : 0;
}

std::string Deny(const std::string& name, const std::string& filter = "") {
  return R"({"comment": "c", "names": [")" + name + R"("], "action": "SCMP_ACT_ERRNO")" +
         (filter.empty() ? "" : ", " + filter) + "}";
}

TEST(SeccompCompilerTest, CompilesADenyRuleToAProgram) {
  auto f = CompileSeccompProfile(Parse(Deny("mount")));
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->rules_added, 1u);
  EXPECT_GT(f->program.size(), 3u);
  sock_fprog prog = f->fprog();
  EXPECT_EQ(prog.len, f->program.size());
  EXPECT_EQ(prog.filter, f->program.data());
}

TEST(SeccompCompilerTest, UnknownNamesAreSkippedWithAWarningNamingTheRule) {
  auto f = CompileSeccompProfile(
      Parse(R"({"comment": "c", "names": ["mount", "no_such_call"], "action": "SCMP_ACT_ERRNO"})"));
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->rules_added, 1u);
  ASSERT_EQ(f->warnings.size(), 1u);
  EXPECT_EQ(f->warnings[0],
            "/p/seccomp/t.json: syscalls[0]: unknown syscall \"no_such_call\" skipped");
}

TEST(SeccompCompilerTest, RulesWithTheDefaultActionAreSkipped) {
  EXPECT_EQ(RulesAdded(Parse(R"({"comment": "c", "names": ["read"], "action": "SCMP_ACT_ALLOW"})")),
            0u);
  // Same action but another errno is a different action.
  EXPECT_EQ(RulesAdded(Parse(R"({"comment": "c", "names": ["read"], "action": "SCMP_ACT_ERRNO",
                                 "errnoRet": 38})",
                             "SCMP_ACT_ERRNO")),
            1u);
}

TEST(SeccompCompilerTest, ArchitectureFiltersFollowMoby) {
  // On x86_64 the native Go name is amd64.
  EXPECT_EQ(RulesAdded(Parse(Deny("mount", R"("includes": {"arches": ["amd64"]})"))), 1u);
  EXPECT_EQ(RulesAdded(Parse(Deny("mount", R"("includes": {"arches": ["arm64", "s390x"]})"))), 0u);
  EXPECT_EQ(RulesAdded(Parse(Deny("mount", R"("excludes": {"arches": ["amd64"]})"))), 0u);
  EXPECT_EQ(RulesAdded(Parse(Deny("mount", R"("excludes": {"arches": ["s390", "s390x"]})"))), 1u);
}

TEST(SeccompCompilerTest, KernelVersionFilters) {
  SeccompProfile p = Parse(Deny("mount", R"("includes": {"minKernel": "4.8"})"));
  SeccompCompileOptions old_kernel;
  old_kernel.kernel = std::make_pair(4, 4);
  SeccompCompileOptions new_kernel;
  new_kernel.kernel = std::make_pair(5, 10);
  EXPECT_EQ(RulesAdded(p, old_kernel), 0u);
  EXPECT_EQ(RulesAdded(p, new_kernel), 1u);
  SeccompProfile q = Parse(Deny("mount", R"("excludes": {"minKernel": "4.8"})"));
  EXPECT_EQ(RulesAdded(q, old_kernel), 1u);
  EXPECT_EQ(RulesAdded(q, new_kernel), 0u);
}

TEST(SeccompCompilerTest, CapabilityFiltersAgainstTheHeldCapabilities) {
  SeccompProfile p = Parse(Deny("mount", R"("includes": {"caps": ["CAP_SYS_ADMIN"]})"));
  SeccompCompileOptions none;
  SeccompCompileOptions admin;
  admin.capabilities = {"CAP_SYS_ADMIN"};
  EXPECT_EQ(RulesAdded(p, none), 0u);
  EXPECT_EQ(RulesAdded(p, admin), 1u);
  SeccompProfile q = Parse(Deny("mount", R"("excludes": {"caps": ["CAP_SYS_ADMIN"]})"));
  EXPECT_EQ(RulesAdded(q, none), 1u);
  EXPECT_EQ(RulesAdded(q, admin), 0u);
}

TEST(SeccompCompilerTest, SubArchitecturesMakeTheProgramCoverMoreAbis) {
  const std::string arch_map = R"("archMap": [{"architecture": "SCMP_ARCH_X86_64",
      "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]}], )";
  auto native = CompileSeccompProfile(Parse(Deny("mount")));
  auto multi = CompileSeccompProfile(Parse(Deny("mount"), "SCMP_ACT_ALLOW", arch_map));
  ASSERT_TRUE(native && multi);
  EXPECT_GT(multi->program.size(), native->program.size());
}

TEST(SeccompCompilerTest, ArgumentComparisonsCompile) {
  auto f = CompileSeccompProfile(Parse(R"({"comment": "c", "names": ["clone"], "action":
      "SCMP_ACT_ERRNO", "args": [{"index": 0, "value": 131072, "valueTwo": 131072, "op":
      "SCMP_CMP_MASKED_EQ"}]}, {"comment": "c", "names": ["ioctl"], "action": "SCMP_ACT_ERRNO",
      "args": [{"index": 1, "value": 21522, "op": "SCMP_CMP_EQ"}, {"index": 0, "value": 3,
      "op": "SCMP_CMP_GT"}]})"));
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->rules_added, 2u);
}

TEST(SeccompCompilerTest, AllowListWithTheShippedSizeStaysUnderTheKernelLimit) {
  std::string rules;
  const char* names[] = {"read", "write", "openat", "close", "mmap", "munmap", "brk", "exit_group"};
  for (const char* n : names) {
    if (!rules.empty()) rules += ", ";
    rules +=
        R"({"comment": "c", "names": [")" + std::string(n) + R"("], "action": "SCMP_ACT_ALLOW"})";
  }
  auto f = CompileSeccompProfile(Parse(rules, "SCMP_ACT_ERRNO"));
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->rules_added, 8u);
  EXPECT_LT(f->program.size(), static_cast<size_t>(BPF_MAXINSNS));
}

TEST(SeccompCompilerTest, RunningKernelVersionIsParsed) {
  auto [major, minor] = RunningKernelVersion();
  EXPECT_GE(major, 3);
  EXPECT_GE(minor, 0);
}

TEST(CapabilityNamesTest, RoundTrip) {
  auto cap = CapabilityFromName("CAP_NET_BIND_SERVICE");
  ASSERT_TRUE(cap) << cap.error().ToString();
  EXPECT_EQ(*cap, 10);
  EXPECT_EQ(CapabilityName(10), "CAP_NET_BIND_SERVICE");
  auto mask = CapabilityMaskFromNames({"CAP_CHOWN", "CAP_KILL"});
  ASSERT_TRUE(mask);
  EXPECT_EQ(*mask, CapBit(0) | CapBit(5));
  EXPECT_EQ(CapabilityNames(*mask), (std::vector<std::string>{"CAP_CHOWN", "CAP_KILL"}));
  EXPECT_FALSE(CapabilityFromName("ALL"));
  EXPECT_FALSE(CapabilityFromName("CAP_"));
  EXPECT_FALSE(CapabilityFromName("13"));
  EXPECT_GE(LastCapability(), 36);  // CAP_AUDIT_READ, Linux 3.16
}

}  // namespace
}  // namespace sandrun::harden

// Negative cases for the three profile loaders: each broken file is refused with its path, the
// key and the reason. Tables, one row per mistake.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>

#include "sandbox/harden/container_preset.h"
#include "sandbox/harden/host_profile.h"
#include "sandbox/harden/profile_file.h"
#include "sandbox/harden/seccomp_profile.h"

namespace sandrun::harden {
namespace {

struct BadCase {
  const char* label;
  std::string text;
  std::string expected;  // a substring of the error, after "<path>: "
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.label; }

// ---- host profiles --------------------------------------------------------------------------

std::string Host(const std::string& body) {
  return R"({"name": "t", "description": "test profile", )" + body + "}";
}
const std::string kHostOk =
    R"("seccomp": {"profile": "host", "mode": "required"}, "noNewPrivs": true,
       "capabilities": {"keep": []})";

TEST(HostProfileLoaderTest, ParsesAllKeys) {
  auto p = ParseHostProfile(Host(R"("seccomp": {"profile": "host-x", "mode": "optional"},
      "noNewPrivs": true, "capabilities": {"keep": ["CAP_NET_RAW", "CAP_CHOWN"]},
      "rlimits": {"RLIMIT_NOFILE": {"soft": 1024, "hard": "unlimited"},
                  "RLIMIT_CORE": {"soft": 0, "hard": 0}}, "identity": "runner",
      "confine": {"mode": "optional", "readOnly": ["/proc/sys"], "mask": ["/run/x.sock"]})"),
                            "/p/host/t.json", "t");
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->seccomp_profile, "host-x");
  EXPECT_EQ(p->seccomp_mode, SeccompMode::kOptional);
  EXPECT_EQ(p->keep_mask, CapBit(13) | CapBit(0));
  ASSERT_EQ(p->rlimits.size(), 2u);
  EXPECT_EQ(p->rlimits[0].name, "RLIMIT_NOFILE");
  EXPECT_EQ(p->rlimits[0].soft, 1024u);
  EXPECT_EQ(p->rlimits[0].hard, RLIM_INFINITY);
  EXPECT_EQ(p->identity, HostIdentity::kRunner);
  EXPECT_EQ(p->confine_mode, ConfineMode::kOptional);
  EXPECT_EQ(p->confine_read_only, std::vector<std::string>{"/proc/sys"});
  EXPECT_EQ(p->confine_mask, std::vector<std::string>{"/run/x.sock"});
}

TEST(HostProfileLoaderTest, DefaultsToTheHostUserAndRequiredConfinement) {
  auto p = ParseHostProfile(Host(kHostOk), "/p/host/t.json", "t");
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->identity, HostIdentity::kHostUser);
  EXPECT_EQ(p->confine_mode, ConfineMode::kRequired);
}

class HostProfileBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(HostProfileBadTest, IsRefusedWithPathKeyAndReason) {
  auto p = ParseHostProfile(GetParam().text, "/p/host/t.json", "t");
  ASSERT_FALSE(p) << GetParam().label;
  EXPECT_EQ(p.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(p.error().message.rfind("/p/host/t.json", 0), 0u) << p.error().message;
  EXPECT_NE(p.error().message.find(GetParam().expected), std::string::npos) << p.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, HostProfileBadTest,
    ::testing::Values(
        BadCase{"not json", "{", ":1:2:"},
        BadCase{"trailing comma", Host(kHostOk + ","), "/p/host/t.json:"},
        BadCase{"array", "[]", "expected a JSON object"},
        BadCase{"name differs", R"({"name": "x", "description": "d", )" + kHostOk + "}",
                "name: \"x\" differs from the file name \"t\""},
        BadCase{"no description", R"({"name": "t", )" + kHostOk + "}", "description: required"},
        BadCase{"empty description", R"({"name": "t", "description": " ", )" + kHostOk + "}",
                "description: must not be empty"},
        BadCase{"unknown key", Host(kHostOk + R"(, "capabilites": {})"),
                "capabilites: unknown key"},
        BadCase{"duplicate key", Host(kHostOk + R"(, "noNewPrivs": true)"),
                "noNewPrivs: duplicate key"},
        BadCase{"no seccomp", Host(R"("noNewPrivs": true, "capabilities": {"keep": []})"),
                "seccomp: required"},
        BadCase{"bad mode",
                Host(R"("seccomp": {"profile": "host", "mode": "maybe"}, "noNewPrivs": true,
                        "capabilities": {"keep": []})"),
                "seccomp.mode: expected \"required\" or \"optional\""},
        BadCase{"path as profile",
                Host(R"("seccomp": {"profile": "../x", "mode": "required"}, "noNewPrivs": true,
                        "capabilities": {"keep": []})"),
                "seccomp.profile: \"../x\" is not a profile name"},
        BadCase{"unconfined", Host(R"("seccomp": {"profile": "unconfined", "mode": "required"},
                        "noNewPrivs": true, "capabilities": {"keep": []})"),
                "seccomp.profile: \"unconfined\" is refused"},
        BadCase{"nnp false",
                Host(R"("seccomp": {"profile": "host", "mode": "required"}, "noNewPrivs": false,
                        "capabilities": {"keep": []})"),
                "noNewPrivs: must be true"},
        BadCase{"nnp string",
                Host(R"("seccomp": {"profile": "host", "mode": "required"}, "noNewPrivs": "yes",
                        "capabilities": {"keep": []})"),
                "noNewPrivs: expected true or false"},
        BadCase{"cap ALL",
                Host(R"("seccomp": {"profile": "host", "mode": "required"}, "noNewPrivs": true,
                        "capabilities": {"keep": ["ALL"]})"),
                "capabilities.keep[0]: \"ALL\" is not accepted"},
        BadCase{"unknown cap",
                Host(R"("seccomp": {"profile": "host", "mode": "required"}, "noNewPrivs": true,
                        "capabilities": {"keep": ["CAP_FLY"]})"),
                "capabilities.keep[0]: unknown capability \"CAP_FLY\""},
        BadCase{"lowercase cap",
                Host(R"("seccomp": {"profile": "host", "mode": "required"}, "noNewPrivs": true,
                        "capabilities": {"keep": ["cap_chown"]})"),
                "capabilities.keep[0]: unknown capability"},
        BadCase{"cap twice",
                Host(R"("seccomp": {"profile": "host", "mode": "required"}, "noNewPrivs": true,
                        "capabilities": {"keep": ["CAP_CHOWN", "CAP_CHOWN"]})"),
                "capabilities.keep[1]: \"CAP_CHOWN\" is listed twice"},
        BadCase{"keep not array",
                Host(R"("seccomp": {"profile": "host", "mode": "required"}, "noNewPrivs": true,
                        "capabilities": {"keep": "CAP_CHOWN"})"),
                "capabilities.keep: expected an array"},
        BadCase{"unknown rlimit", Host(kHostOk + R"(, "rlimits": {"RLIMIT_FOO": {"soft": 1,
                "hard": 1}})"),
                "rlimits.RLIMIT_FOO: unknown resource"},
        BadCase{"soft above hard", Host(kHostOk + R"(, "rlimits": {"RLIMIT_NOFILE": {"soft": 9,
                "hard": 8}})"),
                "rlimits.RLIMIT_NOFILE.soft: must not exceed hard"},
        BadCase{"negative limit", Host(kHostOk + R"(, "rlimits": {"RLIMIT_CORE": {"soft": -1,
                "hard": 0}})"),
                "rlimits.RLIMIT_CORE.soft: expected a non-negative integer"},
        BadCase{"missing hard", Host(kHostOk + R"(, "rlimits": {"RLIMIT_CORE": {"soft": 0}})"),
                "rlimits.RLIMIT_CORE.hard: required"},
        BadCase{"bad identity", Host(kHostOk + R"(, "identity": "root")"),
                "identity: expected \"hostUser\" or \"runner\""},
        BadCase{"caps without runner identity",
                Host(R"("seccomp": {"profile": "host", "mode": "required"}, "noNewPrivs": true,
                        "capabilities": {"keep": ["CAP_CHOWN"]})"),
                "capabilities.keep: capabilities can only be kept with \"identity\""},
        BadCase{"confine mode", Host(kHostOk + R"(, "confine": {"mode": "off"})"),
                "confine.mode: expected \"required\" or \"optional\""},
        BadCase{"confine no mode", Host(kHostOk + R"(, "confine": {"mask": []})"),
                "confine.mode: required"},
        BadCase{"confine typo", Host(kHostOk + R"(, "confine": {"mode": "required", "masks": []})"),
                "confine.masks: unknown key"},
        BadCase{"relative mask", Host(kHostOk + R"(, "confine": {"mode": "required",
                "mask": ["run/x"]})"),
                "confine.mask[0]: expected an absolute path"},
        BadCase{"dotdot read-only", Host(kHostOk + R"(, "confine": {"mode": "required",
                "readOnly": ["/a/../etc"]})"),
                "confine.readOnly[0]: expected an absolute path"},
        BadCase{"root read-only", Host(kHostOk + R"(, "confine": {"mode": "required",
                "readOnly": ["/"]})"),
                "confine.readOnly[0]: expected an absolute path other than"},
        BadCase{"mask not array", Host(kHostOk + R"(, "confine": {"mode": "required",
                "mask": "/x"})"),
                "confine.mask: expected an array"},
        BadCase{"limit typo", Host(kHostOk + R"(, "rlimits": {"RLIMIT_CORE": {"soft": 0,
                "hard": 0, "hrad": 1}})"),
                "rlimits.RLIMIT_CORE.hrad: unknown key"}));

TEST(HostProfileLoaderTest, MissingFileNamesThePath) {
  auto p = LoadHostProfile("/nonexistent-dir", "default");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().ToString().find("/nonexistent-dir/host/default.json"), std::string::npos)
      << p.error().ToString();
}

TEST(HostProfileLoaderTest, NamesThatWalkOutOfTheDirectoryAreRefused) {
  for (const char* name : {"../etc/passwd", "", "Default", "a/b", "a.json"}) {
    auto p = LoadHostProfile(SANDRUN_TEST_PROFILES_DIR, name);
    ASSERT_FALSE(p) << name;
    EXPECT_NE(p.error().message.find("invalid host profile name"), std::string::npos);
  }
}

// ---- seccomp profiles -----------------------------------------------------------------------

std::string Seccomp(const std::string& rules, const std::string& extra = "") {
  return R"({"name": "t", "description": "d", "defaultAction": "SCMP_ACT_ERRNO", )" + extra +
         R"("syscalls": [)" + rules + "]}";
}
const std::string kRule = R"({"comment": "why", "names": ["read"], "action": "SCMP_ACT_ALLOW"})";

TEST(SeccompProfileLoaderTest, ParsesDockersFormat) {
  auto p = ParseSeccompProfile(
      Seccomp(kRule + R"(, {"comment": "c", "names": ["clone"], "action": "SCMP_ACT_ERRNO",
          "errnoRet": 38, "args": [{"index": 0, "value": 2114060288, "valueTwo": 0,
          "op": "SCMP_CMP_MASKED_EQ"}], "excludes": {"arches": ["s390x"]},
          "includes": {"minKernel": "4.8", "caps": ["CAP_SYS_ADMIN"]}})",
              R"("defaultErrnoRet": 1, "archMap": [{"architecture": "SCMP_ARCH_X86_64",
          "subArchitectures": ["SCMP_ARCH_X86"]}], )"),
      "/p/seccomp/t.json", "t");
  ASSERT_TRUE(p) << p.error().ToString();
  ASSERT_EQ(p->rules.size(), 2u);
  const SeccompRule& r = p->rules[1];
  EXPECT_EQ(r.action, SeccompAction::kErrno);
  EXPECT_EQ(r.errno_ret, 38);
  ASSERT_EQ(r.args.size(), 1u);
  EXPECT_EQ(r.args[0].op, SeccompOp::kMaskedEq);
  EXPECT_EQ(r.args[0].value, 2114060288u);
  EXPECT_EQ(r.excludes.arches, std::vector<std::string>{"s390x"});
  EXPECT_EQ(r.includes.min_kernel, std::make_pair(4, 8));
  EXPECT_EQ(r.includes.caps, std::vector<std::string>{"CAP_SYS_ADMIN"});
  ASSERT_EQ(p->arch_map.size(), 1u);
  EXPECT_EQ(p->arch_map[0].sub_architectures, std::vector<std::string>{"SCMP_ARCH_X86"});
  EXPECT_EQ(p->compact_json.find('\n'), std::string::npos);
}

class SeccompProfileBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(SeccompProfileBadTest, IsRefusedWithPathKeyAndReason) {
  auto p = ParseSeccompProfile(GetParam().text, "/p/seccomp/t.json", "t");
  ASSERT_FALSE(p) << GetParam().label;
  EXPECT_EQ(p.error().message.rfind("/p/seccomp/t.json", 0), 0u) << p.error().message;
  EXPECT_NE(p.error().message.find(GetParam().expected), std::string::npos) << p.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, SeccompProfileBadTest,
    ::testing::Values(
        BadCase{"no default action", R"({"name": "t", "description": "d", "syscalls": []})",
                "defaultAction: required"},
        BadCase{"bad default action",
                R"({"name": "t", "description": "d", "defaultAction": "DENY", "syscalls": []})",
                "defaultAction: unknown or unsupported action \"DENY\""},
        BadCase{"notify", Seccomp(R"({"comment": "c", "names": ["read"],
                "action": "SCMP_ACT_NOTIFY"})"),
                "syscalls[0].action: unknown or unsupported action"},
        BadCase{"no syscalls", R"({"name": "t", "description": "d", "defaultAction":
                "SCMP_ACT_ALLOW"})",
                "syscalls: required"},
        BadCase{"unknown top key", Seccomp(kRule, R"("architectures": [], )"),
                "architectures: unknown key"},
        BadCase{"no comment", Seccomp(R"({"names": ["read"], "action": "SCMP_ACT_ALLOW"})"),
                "syscalls[0].comment: required"},
        BadCase{"empty comment", Seccomp(R"({"comment": "", "names": ["read"],
                "action": "SCMP_ACT_ALLOW"})"),
                "syscalls[0].comment: must not be empty"},
        BadCase{"old name key", Seccomp(R"({"comment": "c", "name": "read",
                "action": "SCMP_ACT_ALLOW"})"),
                "syscalls[0].name: unknown key"},
        BadCase{"empty names", Seccomp(R"({"comment": "c", "names": [],
                "action": "SCMP_ACT_ALLOW"})"),
                "syscalls[0].names: must not be empty"},
        BadCase{"errnoRet with allow", Seccomp(R"({"comment": "c", "names": ["read"],
                "action": "SCMP_ACT_ALLOW", "errnoRet": 1})"),
                "syscalls[0].errnoRet: only allowed with SCMP_ACT_ERRNO"},
        BadCase{"errnoRet range", Seccomp(R"({"comment": "c", "names": ["read"],
                "action": "SCMP_ACT_ERRNO", "errnoRet": 5000})"),
                "syscalls[0].errnoRet: must be between 1 and 4095"},
        BadCase{"arg index", Seccomp(R"({"comment": "c", "names": ["read"],
                "action": "SCMP_ACT_ALLOW", "args": [{"index": 6, "value": 0, "op":
                "SCMP_CMP_EQ"}]})"),
                "syscalls[0].args[0].index: must be between 0 and 5"},
        BadCase{"arg op", Seccomp(R"({"comment": "c", "names": ["read"],
                "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 0, "op":
                "SCMP_CMP_IN"}]})"),
                "syscalls[0].args[0].op: unknown operator"},
        BadCase{"negative value", Seccomp(R"({"comment": "c", "names": ["read"],
                "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": -1, "op":
                "SCMP_CMP_EQ"}]})"),
                "syscalls[0].args[0].value: expected an integer from 0 to 2^64-1"},
        BadCase{"same arg twice", Seccomp(R"({"comment": "c", "names": ["personality"],
                "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 0, "op":
                "SCMP_CMP_NE"}, {"index": 0, "value": 8, "op": "SCMP_CMP_NE"}]})"),
                "syscalls[0].args[1]: argument 0 is compared twice"},
        BadCase{"unknown go arch", Seccomp(R"({"comment": "c", "names": ["read"],
                "action": "SCMP_ACT_ALLOW", "excludes": {"arches": ["mips3l64n32"]}})"),
                "syscalls[0].excludes.arches[0]: unknown architecture \"mips3l64n32\""},
        BadCase{"bad min kernel", Seccomp(R"({"comment": "c", "names": ["read"],
                "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "4"}})"),
                "syscalls[0].includes.minKernel: expected \"MAJOR.MINOR\""},
        BadCase{"bad cap filter", Seccomp(R"({"comment": "c", "names": ["read"],
                "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["sys_admin"]}})"),
                "syscalls[0].includes.caps[0]: expected a capability name"},
        BadCase{"unknown filter key", Seccomp(R"({"comment": "c", "names": ["read"],
                "action": "SCMP_ACT_ALLOW", "includes": {"kernel": "4.8"}})"),
                "syscalls[0].includes.kernel: unknown key"},
        BadCase{"unknown arch map", Seccomp(kRule, R"("archMap": [{"architecture":
                "SCMP_ARCH_Z80"}], )"),
                "archMap[0].architecture: unknown architecture \"SCMP_ARCH_Z80\""},
        BadCase{"unknown sub arch", Seccomp(kRule, R"("archMap": [{"architecture":
                "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X87"]}], )"),
                "archMap[0].subArchitectures[0]: unknown architecture"},
        BadCase{"arch mapped twice", Seccomp(kRule, R"("archMap": [{"architecture":
                "SCMP_ARCH_X86_64"}, {"architecture": "SCMP_ARCH_X86_64"}], )"),
                "archMap[1].architecture: \"SCMP_ARCH_X86_64\" is mapped twice"},
        BadCase{"default errno with allow",
                R"({"name": "t", "description": "d", "defaultAction": "SCMP_ACT_ALLOW",
                "defaultErrnoRet": 1, "syscalls": []})",
                "defaultErrnoRet: only allowed with SCMP_ACT_ERRNO"}));

TEST(SeccompLintTest, FlagsADangerousAllowWithoutAReasonNamingIt) {
  auto p = ParseSeccompProfile(Seccomp(R"({"comment": "process things", "names": ["getpid",
      "ptrace"], "action": "SCMP_ACT_ALLOW"})"),
                               "/p/seccomp/t.json", "t");
  ASSERT_TRUE(p) << p.error().ToString();
  auto findings = LintSeccompProfile(*p);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].find("syscalls[0]: allows \"ptrace\""), std::string::npos) << findings[0];
}

TEST(SeccompLintTest, AcceptsADangerousAllowWhoseCommentNamesIt) {
  auto p = ParseSeccompProfile(Seccomp(R"({"comment": "ptrace of own children only, as Yama allows",
      "names": ["ptrace"], "action": "SCMP_ACT_ALLOW"})"),
                               "/p/seccomp/t.json", "t");
  ASSERT_TRUE(p);
  EXPECT_TRUE(LintSeccompProfile(*p).empty());
}

TEST(SeccompLintTest, AWordInsideAnotherIsNotAMention) {
  // "mounts" or "umount2" do not name "mount".
  auto p = ParseSeccompProfile(Seccomp(R"({"comment": "mounts via umount2", "names": ["mount"],
      "action": "SCMP_ACT_ALLOW"})"),
                               "/p/seccomp/t.json", "t");
  ASSERT_TRUE(p);
  EXPECT_EQ(LintSeccompProfile(*p).size(), 1u);
}

TEST(SeccompLintTest, DenyListMustNameWhatItLeavesAllowed) {
  auto p = ParseSeccompProfile(
      R"({"name": "t", "description": "allows everything but bpf", "defaultAction":
      "SCMP_ACT_ALLOW", "syscalls": [{"comment": "no bpf", "names": ["bpf"], "action":
      "SCMP_ACT_ERRNO"}]})",
      "/p/seccomp/t.json", "t");
  ASSERT_TRUE(p);
  auto findings = LintSeccompProfile(*p);
  EXPECT_EQ(findings.size(), DangerousSyscalls().size() - 1);
  bool mount = false;
  for (const auto& f : findings)
    mount = mount || f.find("\"mount\" is allowed") != std::string::npos;
  EXPECT_TRUE(mount);
}

// ---- container presets ----------------------------------------------------------------------

std::string Preset(const std::string& host_config, const std::string& extra = "") {
  return R"({"name": "t", "description": "d", "seccompProfile": "default", )" + extra +
         R"("hostConfig": {)" + host_config + "}}";
}
const std::string kHc =
    R"("NetworkMode": "none", "ReadonlyRootfs": true, "CapDrop": ["ALL"],
       "SecurityOpt": ["no-new-privileges:true"])";

TEST(ContainerPresetLoaderTest, ParsesAMinimalPreset) {
  auto p = ParseContainerPreset(Preset(kHc), "/p/containers/t.json", "t");
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->network_mode, "none");
  EXPECT_TRUE(p->tmpfs.empty());
  EXPECT_EQ(p->workdir, "/workspace");
}

class ContainerPresetBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ContainerPresetBadTest, IsRefusedWithPathKeyAndReason) {
  auto p = ParseContainerPreset(GetParam().text, "/p/containers/t.json", "t");
  ASSERT_FALSE(p) << GetParam().label;
  EXPECT_EQ(p.error().message.rfind("/p/containers/t.json", 0), 0u) << p.error().message;
  EXPECT_NE(p.error().message.find(GetParam().expected), std::string::npos) << p.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ContainerPresetBadTest,
    ::testing::Values(BadCase{"host network",
                              Preset(R"("NetworkMode": "host", "ReadonlyRootfs": true,
                "CapDrop": ["ALL"], "SecurityOpt": ["no-new-privileges:true"])"),
                              "hostConfig.NetworkMode: \"host\" is refused"},
                      BadCase{"container network", Preset(R"("NetworkMode": "Container:abc",
                "ReadonlyRootfs": true, "CapDrop": ["ALL"], "SecurityOpt":
                ["no-new-privileges:true"])"),
                              "hostConfig.NetworkMode: \"Container:abc\" is refused"},
                      BadCase{"unconfined seccomp",
                              R"({"name": "t", "description": "d", "seccompProfile": "unconfined",
                "hostConfig": {)" +
                                  kHc + "}}",
                              "seccompProfile: \"unconfined\" is refused"},
                      BadCase{"seccomp in security opt", Preset(R"("NetworkMode": "none",
                "ReadonlyRootfs": true, "CapDrop": ["ALL"], "SecurityOpt":
                ["no-new-privileges:true", "seccomp=unconfined"])"),
                              "hostConfig.SecurityOpt[1]: the seccomp profile comes from"},
                      BadCase{"apparmor unconfined", Preset(R"("NetworkMode": "none",
                "ReadonlyRootfs": true, "CapDrop": ["ALL"], "SecurityOpt":
                ["no-new-privileges:true", "apparmor=unconfined"])"),
                              "hostConfig.SecurityOpt[1]: \"apparmor=unconfined\" is refused"},
                      BadCase{"no nnp", Preset(R"("NetworkMode": "none", "ReadonlyRootfs": true,
                "CapDrop": ["ALL"], "SecurityOpt": [])"),
                              "hostConfig.SecurityOpt: must contain \"no-new-privileges:true\""},
                      BadCase{"nnp false", Preset(R"("NetworkMode": "none", "ReadonlyRootfs": true,
                "CapDrop": ["ALL"], "SecurityOpt": ["no-new-privileges:false"])"),
                              "hostConfig.SecurityOpt[0]: no-new-privileges must be true"},
                      BadCase{"writable root",
                              Preset(R"("NetworkMode": "none", "ReadonlyRootfs": false,
                "CapDrop": ["ALL"], "SecurityOpt": ["no-new-privileges:true"])"),
                              "hostConfig.ReadonlyRootfs: must be true"},
                      BadCase{"caps kept", Preset(R"("NetworkMode": "none", "ReadonlyRootfs": true,
                "CapDrop": ["NET_RAW"], "SecurityOpt": ["no-new-privileges:true"])"),
                              "hostConfig.CapDrop: must contain \"ALL\""},
                      BadCase{"privileged", Preset(kHc + R"(, "Privileged": true)"),
                              "hostConfig.Privileged: not allowed in a preset"},
                      BadCase{"cap add", Preset(kHc + R"(, "CapAdd": ["SYS_ADMIN"])"),
                              "hostConfig.CapAdd: not allowed in a preset"},
                      BadCase{"binds", Preset(kHc + R"(, "Binds": ["/:/host"])"),
                              "hostConfig.Binds: not allowed in a preset"},
                      BadCase{"pid mode", Preset(kHc + R"(, "PidMode": "host")"),
                              "hostConfig.PidMode: not allowed in a preset"},
                      BadCase{"unknown host config", Preset(kHc + R"(, "ShmSize": 1)"),
                              "hostConfig.ShmSize: unknown key"},
                      BadCase{"tmpfs root", Preset(kHc + R"(, "Tmpfs": {"/": "rw"})"),
                              "hostConfig.Tmpfs./: expected an absolute mount point"},
                      BadCase{"negative pids", Preset(kHc + R"(, "PidsLimit": -1)"),
                              "hostConfig.PidsLimit: must be between 0"},
                      BadCase{"relative workdir", Preset(kHc, R"("workdir": "ws", )"),
                              "workdir: expected an absolute path"},
                      BadCase{"bad env", Preset(kHc, R"("env": {"A-B": "x"}, )"),
                              "env.A-B: not a portable variable name"},
                      BadCase{"no host config",
                              R"({"name": "t", "description": "d", "seccompProfile": "default"})",
                              "hostConfig: required"}));

}  // namespace
}  // namespace sandrun::harden

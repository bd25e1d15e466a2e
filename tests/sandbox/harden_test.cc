// Host commands under the host profiles, with real seccomp filters and capability drops: the
// try_syscall helper run through HostExecutor shows what is denied (EPERM) and what ordinary work
// still does; /proc/self/status shows the resulting state. We run as root here, so the
// capability drop is observable; tests that need root skip without it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/executors/host/host_executor.h"
#include "sandbox/harden/caps.h"
#include "sandbox/harden/child_steps.h"
#include "sandbox/harden/host_hardening.h"
#include "sandbox/harden/host_profile.h"
#include "sandbox/harden/profile_file.h"
#include "sandbox/os/subprocess.h"
#include "tests/support/process.h"

namespace sandrun::harden {
namespace {

using exec::ExecOutcome;
using exec::HostExecutor;
using exec::Plan;

const std::string kTry = TRY_SYSCALL_BINARY;
const std::string kProfiles = SANDRUN_TEST_PROFILES_DIR;

Plan HostPlan(const std::string& command, const std::string& profile = "default") {
  Plan plan;
  plan.target = exec::Target::kGateway;
  plan.shell = "/bin/sh";
  plan.command = command;
  plan.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"SANDRUN_SHELL", "exec"}};
  plan.timeout_ms = 60000;
  plan.host_profile = profile;
  return plan;
}

Result<ExecOutcome> RunWith(const Plan& plan, HostExecutor::Options options = {}) {
  HostExecutor host(std::move(options));
  return host.Run(plan, nullptr, nullptr);
}

ExecOutcome RunOk(const Plan& plan, HostExecutor::Options options = {}) {
  auto outcome = RunWith(plan, std::move(options));
  EXPECT_TRUE(outcome) << outcome.error().ToString();
  return outcome ? std::move(outcome).value() : ExecOutcome{};
}

// The helper's exit code (the errno of the call, 0 on success) under `profile`.
int TryUnder(const std::string& name, const std::string& profile = "default",
             HostExecutor::Options options = {}) {
  ExecOutcome o = RunOk(HostPlan("exec " + kTry + " " + name, profile), std::move(options));
  EXPECT_EQ(o.status, ExecOutcome::Status::kExited) << name << ": " << o.aggregated;
  return o.exit_code;
}

// "Key:\tvalue" lines of a /proc/<pid>/status text.
std::map<std::string, std::string> StatusFields(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    size_t v = line.find_first_not_of(" \t", colon + 1);
    out[line.substr(0, colon)] = v == std::string::npos ? "" : line.substr(v);
  }
  return out;
}

std::map<std::string, std::string> HostStatus(const std::string& profile = "default",
                                              HostExecutor::Options options = {}) {
  ExecOutcome o = RunOk(HostPlan("exec " + kTry + " status", profile), std::move(options));
  EXPECT_EQ(o.exit_code, 0) << o.aggregated;
  return StatusFields(o.aggregated);
}

std::string Hex(CapMask mask) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(mask));
  return buf;
}

bool IsRoot() { return ::geteuid() == 0; }

// A private profiles/ tree: the shipped files plus whatever a test writes.
class TempProfiles {
 public:
  TempProfiles() {
    char tmpl[] = "/tmp/sandrun-profiles-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    std::filesystem::copy(kProfiles, dir_, std::filesystem::copy_options::recursive);
  }
  ~TempProfiles() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void Write(const std::string& relative, const std::string& text) const {
    std::ofstream(dir_ + "/" + relative) << text;
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

std::string HostProfileJson(const std::string& name, const std::string& seccomp,
                            const std::string& keep, const std::string& mode = "required") {
  return R"({"name": ")" + name + R"(", "description": "test", "seccomp": {"profile": ")" +
         seccomp + R"(", "mode": ")" + mode +
         R"("}, "noNewPrivs": true, "capabilities": {"keep": [)" + keep + "]}" +
         (keep.empty() ? "" : R"(, "identity": "runner")") + "}";
}

// ---- the default profile --------------------------------------------------------------------

class DefaultProfileDeniesTest : public ::testing::TestWithParam<const char*> {};

TEST_P(DefaultProfileDeniesTest, WithEperm) { EXPECT_EQ(TryUnder(GetParam()), EPERM); }

INSTANTIATE_TEST_SUITE_P(KernelLevelCalls, DefaultProfileDeniesTest,
                         ::testing::Values("mount", "unshare", "ptrace", "kexec_load", "bpf",
                                           "init_module", "chroot", "keyctl", "personality"));

class DefaultProfileAllowsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(DefaultProfileAllowsTest, OrdinaryWork) { EXPECT_EQ(TryUnder(GetParam()), 0); }

INSTANTIATE_TEST_SUITE_P(Work, DefaultProfileAllowsTest,
                         ::testing::Values("getpid", "files", "pipe", "fork", "exec"));

TEST(DefaultProfileTest, Clone3AnswersEnosysSoLibcFallsBackToClone) {
  EXPECT_EQ(TryUnder("clone3"), ENOSYS);
}

TEST(DefaultProfileTest, StatusShowsNoCapabilitiesNoNewPrivsAndAFilter) {
  auto s = HostStatus();
  EXPECT_EQ(s["CapEff"], "0000000000000000");
  EXPECT_EQ(s["CapPrm"], "0000000000000000");
  EXPECT_EQ(s["CapInh"], "0000000000000000");
  EXPECT_EQ(s["CapAmb"], "0000000000000000");
  if (IsRoot()) {
    EXPECT_EQ(s["CapBnd"], "0000000000000000");
  }
  EXPECT_EQ(s["NoNewPrivs"], "1");
  EXPECT_EQ(s["Seccomp"], "2");
}

TEST(DefaultProfileTest, RlimitsApply) {
  ExecOutcome o = RunOk(HostPlan("ulimit -n; ulimit -Hn; ulimit -c"));
  EXPECT_EQ(o.aggregated, "4096\n4096\n0\n");
}

TEST(DefaultProfileTest, ShellPipelinesAndFilesStillWork) {
  char tmpl[] = "/tmp/sandrun-harden-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  ::chmod(dir.c_str(), 0777);  // a root runner's command runs as nobody
  ExecOutcome o = RunOk(HostPlan("cd " + dir +
                                 " && printf 'b\\na\\n' | sort > out && cat out && "
                                 "(sleep 0.01 &) && wait && rm out && echo ok"));
  std::filesystem::remove_all(dir);
  EXPECT_EQ(o.exit_code, 0) << o.aggregated;
  EXPECT_EQ(o.aggregated, "a\nb\nok\n");
}

TEST(DefaultProfileTest, WithoutTheProfileTheSameCallsGetFurther) {
  // The control: the EPERMs above come from the profile, not from this machine.
  if (!IsRoot()) GTEST_SKIP() << "needs root (CAP_SYS_ADMIN) for the unfiltered control";
  EXPECT_EQ(testing::RunProcess({kTry, "mount"}).exit_code, ENOENT);
  EXPECT_EQ(testing::RunProcess({kTry, "clone3"}).exit_code, EINVAL);
  EXPECT_EQ(testing::RunProcess({kTry, "ptrace"}).exit_code, 0);
  EXPECT_EQ(testing::RunProcess({kTry, "unshare"}).exit_code, 0);
}

TEST(DefaultProfileTest, TheRunnerItselfStaysUnfilteredAndPrivileged) {
  // The child shares the runner's memory until execve (CLONE_VM): the hardening must land on the
  // child only.
  ASSERT_EQ(TryUnder("getpid"), 0);
  std::ifstream in("/proc/self/status");
  std::stringstream text;
  text << in.rdbuf();
  auto s = StatusFields(text.str());
  EXPECT_EQ(s["Seccomp"], "0");
  EXPECT_EQ(s["NoNewPrivs"], "0");
  if (IsRoot()) {
    EXPECT_NE(s["CapEff"], "0000000000000000");
  }
}

TEST(DefaultProfileTest, BackgroundRunsAreHardenedToo) {
  HostExecutor host;
  auto proc = host.Start(HostPlan("exec " + kTry + " status"), nullptr);
  ASSERT_TRUE(proc) << proc.error().ToString();
  ExecOutcome o = (*proc)->Wait();
  auto s = StatusFields(o.aggregated);
  EXPECT_EQ(s["Seccomp"], "2");
  EXPECT_EQ(s["CapEff"], "0000000000000000");
}

TEST(DefaultProfileTest, ConcurrentHardenedRunsShareOneCompiledProfile) {
  HardeningCache cache;
  auto a = cache.Get(kProfiles, "default");
  auto b = cache.Get(kProfiles, "default");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->get(), b->get());
  // The cache is its owner's, not the process's: another one prepares its own.
  HardeningCache other;
  auto c = other.Get(kProfiles, "default");
  ASSERT_TRUE(c);
  EXPECT_NE(c->get(), a->get());
  HostExecutor host;  // one executor, one compiled profile, used by every thread
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto o = host.Run(HostPlan("exec " + kTry + " ptrace"), nullptr, nullptr);
        if (!o || o->exit_code != EPERM) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---- the privileged profile -----------------------------------------------------------------

TEST(PrivilegedProfileTest, KeepsItsCapabilitiesButNotTheKernelLevelCalls) {
  if (!IsRoot()) GTEST_SKIP() << "a non-root runner has no capabilities to keep";
  auto profile = LoadHostProfile(kProfiles, "privileged");
  ASSERT_TRUE(profile) << profile.error().ToString();
  auto caps = CurrentCapabilities();
  ASSERT_TRUE(caps);
  const CapMask expected = profile->keep_mask & caps->permitted & caps->bounding;
  EXPECT_NE(expected, 0u);
  auto s = HostStatus("privileged");
  EXPECT_EQ(s["CapEff"], Hex(expected));
  EXPECT_EQ(s["CapPrm"], Hex(expected));
  EXPECT_EQ(s["CapBnd"], Hex(expected));
  EXPECT_EQ(s["NoNewPrivs"], "1");
  EXPECT_EQ(s["Seccomp"], "2");
  for (const char* call : {"kexec_load", "init_module", "bpf"}) {
    EXPECT_EQ(TryUnder(call, "privileged"), EPERM) << call;
  }
  EXPECT_EQ(TryUnder("files", "privileged"), 0);
  EXPECT_EQ(TryUnder("exec", "privileged"), 0);
}

TEST(PrivilegedProfileTest, ItsFilterDeniesModuleLoadingKexecAndBpfEvenWithTheCapabilities) {
  // With CAP_SYS_MODULE, CAP_SYS_BOOT and CAP_BPF kept, only the filter stands in the way: under
  // an allow-all filter the same calls get past the permission checks (another errno).
  if (!IsRoot()) GTEST_SKIP() << "needs root to keep kernel capabilities";
  TempProfiles t;
  const std::string keep = R"("CAP_SYS_MODULE", "CAP_SYS_BOOT", "CAP_SYS_ADMIN")";
  t.Write("host/kernel.json", HostProfileJson("kernel", "host-privileged", keep));
  t.Write("seccomp/allow-all.json",
          R"({"name": "allow-all", "description": "control", "defaultAction": "SCMP_ACT_ALLOW",
              "syscalls": [{"comment": "a rule that changes nothing here", "names": ["uselib"],
              "action": "SCMP_ACT_ERRNO"}]})");
  t.Write("host/control.json", HostProfileJson("control", "allow-all", keep));
  HostExecutor::Options options;
  options.profiles_dir = t.dir();
  for (const char* call : {"kexec_load", "init_module", "bpf"}) {
    int control = TryUnder(call, "control", options);
    EXPECT_NE(control, EPERM) << call << " gets past the capability checks without the filter";
    EXPECT_EQ(TryUnder(call, "kernel", options), EPERM) << call;
  }
}

// ---- broken profiles and unavailable seccomp ------------------------------------------------

TEST(BrokenProfileTest, IsRefusedWithItsPathAndReasonAndNothingRuns) {
  TempProfiles t;
  t.Write("host/broken.json", HostProfileJson("broken", "host", R"("CAP_FLY")"));
  HostExecutor::Options options;
  options.profiles_dir = t.dir();
  const std::string marker = t.dir() + "/ran";
  auto o = RunWith(HostPlan("touch " + marker, "broken"), options);
  ASSERT_FALSE(o);
  const std::string msg = o.error().ToString();
  EXPECT_NE(msg.find(t.dir() + "/host/broken.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("capabilities.keep[0]: unknown capability \"CAP_FLY\""), std::string::npos)
      << msg;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(BrokenProfileTest, ABrokenSeccompFileIsNamedToo) {
  TempProfiles t;
  t.Write("seccomp/bad.json", R"({"name": "bad", "description": "d", "defaultAction":
      "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mount"], "action": "SCMP_ACT_ERRNO"}]})");
  t.Write("host/uses-bad.json", HostProfileJson("uses-bad", "bad", ""));
  HostExecutor::Options options;
  options.profiles_dir = t.dir();
  auto o = RunWith(HostPlan("true", "uses-bad"), options);
  ASSERT_FALSE(o);
  const std::string msg = o.error().ToString();
  EXPECT_NE(msg.find(t.dir() + "/seccomp/bad.json: syscalls[0].comment: required"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("host/uses-bad.json"), std::string::npos) << msg;
}

TEST(BrokenProfileTest, AMissingProfileNamesTheFile) {
  auto o = RunWith(HostPlan("true", "no-such-profile"));
  ASSERT_FALSE(o);
  EXPECT_NE(o.error().ToString().find("/host/no-such-profile.json"), std::string::npos)
      << o.error().ToString();
}

TEST(SeccompUnavailableTest, OptionalModeRunsUnfilteredWithAWarning) {
  TempProfiles t;
  t.Write("host/soft.json", HostProfileJson("soft", "host", "", "optional"));
  HostExecutor::Options options;
  options.profiles_dir = t.dir();
  options.seccomp_support = Error(ErrorCode::kSyscall, "no seccomp in this test kernel");
  ExecOutcome o = RunOk(HostPlan("exec " + kTry + " status", "soft"), options);
  ASSERT_EQ(o.warnings.size(), 1u);
  EXPECT_NE(o.warnings[0].find("seccomp is unavailable on this host"), std::string::npos);
  EXPECT_NE(o.warnings[0].find("no seccomp in this test kernel"), std::string::npos);
  auto s = StatusFields(o.aggregated);
  EXPECT_EQ(s["Seccomp"], "0");
  EXPECT_EQ(s["NoNewPrivs"], "1");
  EXPECT_EQ(s["CapEff"], "0000000000000000");
}

TEST(SeccompUnavailableTest, RequiredModeFailsTheCallClearly) {
  HostExecutor::Options options;
  options.seccomp_support = Error(ErrorCode::kSyscall, "no seccomp in this test kernel");
  auto o = RunWith(HostPlan("true"), options);
  ASSERT_FALSE(o);
  const std::string msg = o.error().ToString();
  EXPECT_NE(msg.find("host profile \"default\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("requires seccomp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"optional\""), std::string::npos) << msg;
}

// ---- the child sequence itself --------------------------------------------------------------

TEST(ChildStepsTest, AFailingStepIsReportedWithItsNameAndErrno) {
  ChildHardening::Spec spec;
  spec.caps.reset();
  // A jump past the end of the program: the kernel's filter check refuses it with EINVAL.
  spec.bpf = std::vector<sock_filter>{BPF_JUMP(BPF_JMP | BPF_JA, 5, 0, 0),
                                      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  auto hardening = ChildHardening::Create(std::move(spec));
  ASSERT_TRUE(hardening) << hardening.error().ToString();
  SpawnOptions opts;
  opts.path = "/bin/true";
  opts.argv = {"true"};
  opts.child_steps = (*hardening)->steps();
  auto proc = Subprocess::Spawn(opts);
  ASSERT_FALSE(proc);
  EXPECT_EQ(proc.error().message, "harden: seccomp: Invalid argument");
  EXPECT_EQ(proc.error().sys_errno, EINVAL);
}

TEST(ChildStepsTest, HardLimitsAboveTheRunnersAreClampedNotFailed) {
  ChildHardening::Spec spec;
  spec.caps.reset();
  spec.no_new_privs = false;
  RlimitSetting nofile;
  nofile.name = "RLIMIT_NOFILE";
  nofile.resource = RLIMIT_NOFILE;
  nofile.soft = RLIM_INFINITY;
  nofile.hard = RLIM_INFINITY;
  spec.rlimits = {nofile};
  auto hardening = ChildHardening::Create(std::move(spec));
  ASSERT_TRUE(hardening) << hardening.error().ToString();
  SpawnOptions opts;
  opts.path = "/bin/sh";
  opts.argv = {"sh", "-c", "ulimit -Hn"};
  opts.child_steps = (*hardening)->steps();
  auto proc = Subprocess::Spawn(opts);
  ASSERT_TRUE(proc) << proc.error().ToString();
  auto status = proc->Reap();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->exit_code, 0);
}

TEST(FilterProbeTest, ReportsThatFilteringWorksHere) {
  auto h = HostHardening::Prepare(kProfiles, "default");
  ASSERT_TRUE(h) << h.error().ToString();
  EXPECT_TRUE((*h)->seccomp_active());
  auto probe = ProbeFilter(**h);
  ASSERT_TRUE(probe) << probe.error().ToString();
  EXPECT_TRUE(probe->filter_mode);
  EXPECT_EQ(probe->unshare_errno, EPERM);
}

// The compiled program kept between processes: the second preparation reads it (same program,
// no compile), a changed seccomp file gets a new key, and the cached program really filters.
TEST(FilterCacheTest, SecondPreparationReadsTheProgramAndAChangedFileMissesIt) {
  char templ[] = "/tmp/sandrun-bpfcache-XXXXXX";
  ASSERT_NE(::mkdtemp(templ), nullptr);
  const std::string root = templ;
  const std::string profiles = root + "/profiles";
  std::filesystem::copy(kProfiles, profiles, std::filesystem::copy_options::recursive);
  HardeningEnvironment env;
  env.cache_dir = root + "/cache";
  env.masked = {root};  // the cache is used only where commands cannot write

  auto first = HostHardening::Prepare(profiles, "default", env);
  ASSERT_TRUE(first) << first.error().ToString();
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(env.cache_dir)) {
    files.push_back(e.path().string());
  }
  ASSERT_EQ(files.size(), 1u);
  struct stat st {};
  ASSERT_EQ(::stat(files[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto second = HostHardening::Prepare(profiles, "default", env);
  ASSERT_TRUE(second) << second.error().ToString();
  EXPECT_EQ((*second)->child().filter_instructions(), (*first)->child().filter_instructions());
  auto probe = ProbeFilter(**second);
  ASSERT_TRUE(probe) << probe.error().ToString();
  EXPECT_TRUE(probe->filter_mode);
  EXPECT_EQ(probe->unshare_errno, EPERM);

  // A changed seccomp file (same rules, one more byte) is compiled again under a new key.
  { std::ofstream(profiles + "/seccomp/host.json", std::ios::app) << "\n"; }
  auto third = HostHardening::Prepare(profiles, "default", env);
  ASSERT_TRUE(third) << third.error().ToString();
  size_t count = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(env.cache_dir)) ++count;
  EXPECT_EQ(count, 2u);

  // A broken seccomp file is an error even when an old program is cached.
  { std::ofstream(profiles + "/seccomp/host.json") << "{"; }
  EXPECT_FALSE(HostHardening::Prepare(profiles, "default", env));
  std::filesystem::remove_all(root);
}

// A program planted in the cache (what a command that could write there would do): an allow-all
// filter that is world-writable, or owned by someone else, is never loaded; and without a
// directory the commands cannot write, nothing is cached at all.
TEST(FilterCacheTest, APlantedAllowAllProgramIsNeverLoaded) {
  char templ[] = "/tmp/sandrun-bpfplant-XXXXXX";
  ASSERT_NE(::mkdtemp(templ), nullptr);
  const std::string root = templ;
  HardeningEnvironment env;
  env.cache_dir = root + "/cache";

  auto unprotected = HostHardening::Prepare(kProfiles, "default", env);
  ASSERT_TRUE(unprotected) << unprotected.error().ToString();
  EXPECT_FALSE(std::filesystem::exists(env.cache_dir)) << "cached outside a masked directory";

  env.masked = {root};
  auto first = HostHardening::Prepare(kProfiles, "default", env);
  ASSERT_TRUE(first) << first.error().ToString();
  std::string file;
  for (const auto& e : std::filesystem::directory_iterator(env.cache_dir)) file = e.path();
  ASSERT_FALSE(file.empty());
  const sock_filter allow_all = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  for (int variant = 0; variant < 2; ++variant) {
    {
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(&allow_all), sizeof(allow_all));
    }
    if (variant == 0) {
      ::chmod(file.c_str(), 0666);
    } else {
      ::chmod(file.c_str(), 0600);
      ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
    }
    auto again = HostHardening::Prepare(kProfiles, "default", env);
    ASSERT_TRUE(again) << again.error().ToString();
    EXPECT_EQ((*again)->child().filter_instructions(), (*first)->child().filter_instructions())
        << "variant " << variant;
    auto probe = ProbeFilter(**again);
    ASSERT_TRUE(probe) << probe.error().ToString();
    EXPECT_EQ(probe->unshare_errno, EPERM) << "the planted allow-all program was loaded";
  }
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace sandrun::harden

// The sandbox containers as the runner builds them (profiles/containers/default.json through the
// preset loader, the inline seccomp profile, the gate's spec, the Docker executor) against the
// real engine: the security state inside (no capabilities, no_new_privs, a seccomp filter,
// read-only root, only loopback), a fork bomb stopped by the pids limit and a memory bomb killed
// by the memory limit, each followed by a call in the same scope that works.
//
// Containers are created by the executor, so they carry its labels (sandrun.sandbox,
// sandrun.instance=<a per-test id>) and are removed by instance in TearDown.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "runner/policy/sandbox_spec.h"
#include "sandbox/executors/docker/docker_executor.h"
#include "sandbox/harden/container_preset.h"
#include "sandbox/harden/profile_file.h"
#include "sandbox/harden/seccomp_profile.h"
#include "tests/support/docker_env.h"
#include "tests/support/mounts.h"

namespace sandrun::testing {
namespace {

using exec::ExecOutcome;
constexpr char kInstanceMarker[] = "-harden-test-";  // <8 hex>-harden-test-<pid>

std::map<std::string, std::string> KeyValues(const std::string& text, char sep) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find(sep);
    if (at == std::string::npos) continue;
    size_t v = line.find_first_not_of(" \t", at + 1);
    out[line.substr(0, at)] = v == std::string::npos ? "" : line.substr(v);
  }
  return out;
}

class ContainerLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SANDRUN_REQUIRE_DOCKER(c);
    client_ = std::shared_ptr<docker::Client>(std::move(c));
    RemoveLeftovers();
    // Container names use the first 8 characters of the instance id: make those unique, so
    // that tests running in parallel never share a container.
    std::random_device rd;
    char head[16];
    std::snprintf(head, sizeof(head), "%08x", static_cast<unsigned>(rd()));
    instance_ = std::string(head) + kInstanceMarker + std::to_string(::getpid());
    char tmpl[] = "/tmp/sandrun-limits-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    state_dir_ = tmpl;

    auto preset = harden::LoadContainerPreset(SANDRUN_TEST_PROFILES_DIR, "default");
    ASSERT_TRUE(preset) << preset.error().ToString();
    auto seccomp =
        harden::LoadSeccompProfileJson(SANDRUN_TEST_PROFILES_DIR, preset->seccomp_profile);
    ASSERT_TRUE(seccomp) << seccomp.error().ToString();
    tmpfs_options_ = preset->tmpfs;
    seccomp_json_ = *seccomp;
    settings_.sandbox.docker.image = kMinimalImage;
  }

  void TearDown() override {
    if (client_ && !instance_.empty()) {
      auto list =
          client_->ListContainers({std::string(exec::kInstanceLabel) + "=" + instance_}, true);
      if (list) {
        for (const auto& ct : *list) EXPECT_TRUE(client_->RemoveContainer(ct.id, true));
      }
    }
    std::error_code ec;
    if (!state_dir_.empty()) {
      DetachMountsBelow(state_dir_);
      std::filesystem::remove_all(state_dir_, ec);
    }
  }

  // Containers of an earlier run of this suite that was killed before its TearDown.
  void RemoveLeftovers() {
    auto list = client_->ListContainers({std::string(exec::kSandboxLabel) + "=1"}, true);
    if (!list) return;
    for (const auto& ct : *list) {
      auto it = ct.labels.find(exec::kInstanceLabel);
      if (it == ct.labels.end()) continue;
      size_t at = it->second.find(kInstanceMarker);
      if (at == std::string::npos) continue;
      const std::string pid = it->second.substr(at + sizeof(kInstanceMarker) - 1);
      if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0) {
        (void)client_->RemoveContainer(ct.id, true);
      }
    }
  }

  // The spec as the gate builds it, from settings_ and the preset.
  exec::SandboxSpec Spec() {
    policy::GateContext ctx;
    ctx.settings = &settings_;
    ctx.caller.agent_id = "main";
    ctx.state_dir = state_dir_;
    ctx.instance_id = instance_;
    ctx.host_env = {{"HOME", state_dir_}};
    ctx.seccomp_profile_json = seccomp_json_;
    ctx.tmpfs_options = tmpfs_options_;
    auto spec = policy::BuildSandboxSpec(ctx);
    EXPECT_TRUE(spec) << spec.error().message;
    return spec ? std::move(spec).value() : exec::SandboxSpec{};
  }

  Result<ExecOutcome> Run(const std::string& command, int64_t timeout_ms = 60000) {
    exec::Plan plan;
    plan.target = exec::Target::kSandbox;
    plan.command = command;
    plan.sandbox = Spec();
    plan.cwd = plan.sandbox.workdir;
    plan.timeout_ms = timeout_ms;
    plan.kill_grace_ms = 1000;
    plan.max_output_chars = 4000;
    exec::DockerExecutor executor(client_);
    return executor.Run(plan, nullptr, nullptr);
  }

  ExecOutcome RunOk(const std::string& command) {
    auto o = Run(command);
    EXPECT_TRUE(o) << o.error().ToString();
    return o ? std::move(o).value() : ExecOutcome{};
  }

  size_t ContainerCount() {
    auto list =
        client_->ListContainers({std::string(exec::kInstanceLabel) + "=" + instance_}, true);
    return list ? list->size() : 0;
  }

  std::shared_ptr<docker::Client> client_;
  std::string instance_;
  std::string state_dir_;
  std::string seccomp_json_;
  std::map<std::string, std::string> tmpfs_options_;
  config::AgentSettings settings_;
};

TEST_F(ContainerLimitsTest, NoCapabilitiesNoNewPrivsFilteredReadOnlyRootOnlyLoopback) {
  ExecOutcome o = RunOk(
      "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; "
      "if touch /x 2>/dev/null; then echo root=writable; else echo root=readonly; fi; "
      "touch /tmp/y && echo tmp=ok; "
      "echo ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')");
  ASSERT_EQ(o.exit_code, 0) << o.aggregated;
  auto status = KeyValues(o.aggregated, ':');
  EXPECT_EQ(status["CapEff"], "0000000000000000");
  EXPECT_EQ(status["CapPrm"], "0000000000000000");
  EXPECT_EQ(status["CapBnd"], "0000000000000000");
  EXPECT_EQ(status["NoNewPrivs"], "1");
  EXPECT_EQ(status["Seccomp"], "2");
  auto facts = KeyValues(o.aggregated, '=');
  EXPECT_EQ(facts["root"], "readonly");
  EXPECT_EQ(facts["tmp"], "ok");
  EXPECT_EQ(facts["ifaces"], "lo");
}

TEST_F(ContainerLimitsTest, TheSeccompProfileDeniesKernelLevelCallsInside) {
  // The static helper, copied into the scope's workspace (mounted at /workspace) once the first
  // call has made it (the mount of the scope's scratch image).
  exec::SandboxSpec spec = Spec();
  ASSERT_EQ(RunOk("true").exit_code, 0);
  std::filesystem::copy_file(TRY_SYSCALL_BINARY, spec.workspace_host_dir + "/try_syscall");
  ExecOutcome o = RunOk(
      "for c in mount unshare bpf keyctl kexec_load init_module files fork; do "
      "/workspace/try_syscall $c; echo \"$c=$?\"; done");
  auto r = KeyValues(o.aggregated, '=');
  for (const char* denied : {"mount", "unshare", "bpf", "keyctl", "kexec_load", "init_module"}) {
    EXPECT_EQ(r[denied], std::to_string(EPERM)) << denied << "\n" << o.aggregated;
  }
  EXPECT_EQ(r["files"], "0") << o.aggregated;
  EXPECT_EQ(r["fork"], "0") << o.aggregated;
}

TEST_F(ContainerLimitsTest, ForkBombIsStoppedByThePidsLimitAndTheScopeStillWorks) {
  settings_.sandbox.docker.pids_limit = 128;
  ASSERT_EQ(RunOk("echo warm").aggregated, "warm\n");
  auto started = std::chrono::steady_clock::now();
  auto bomb = Run("f() { f | f & }; f; sleep 3; echo bomb-returned", 20000);
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // The runner stays healthy: the call returns (an outcome, or a clear error), in bounded time.
  EXPECT_LT(seconds, 60.0);
  if (bomb) {
    EXPECT_NE(bomb->aggregated.find("fork"), std::string::npos)
        << "forks failed at the limit: " << bomb->aggregated;
  }
  // The next call in the same scope works (in the same container, or a recreated one).
  auto after = Run(
      "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max; echo alive");
  ASSERT_TRUE(after) << after.error().ToString();
  EXPECT_EQ(after->exit_code, 0) << after->aggregated;
  EXPECT_EQ(after->aggregated, "128\nalive\n");
  EXPECT_EQ(ContainerCount(), 1u);
}

TEST_F(ContainerLimitsTest, MemoryBombIsKilledByTheMemoryLimitAndTheContainerStaysUp) {
  settings_.sandbox.docker.memory_bytes = 64 << 20;
  ASSERT_EQ(RunOk("echo warm").aggregated, "warm\n");
  auto list = client_->ListContainers({std::string(exec::kInstanceLabel) + "=" + instance_}, true);
  ASSERT_TRUE(list && list->size() == 1u);
  const std::string id = list->front().id;

  // busybox tail keeps an unterminated last line in memory: /dev/zero never ends one.
  ExecOutcome bomb = RunOk("exec tail /dev/zero");
  const bool killed =
      (bomb.status == ExecOutcome::Status::kSignaled && bomb.signal == SIGKILL) ||
      (bomb.status == ExecOutcome::Status::kExited && bomb.exit_code == 128 + SIGKILL);
  EXPECT_TRUE(killed) << "status " << static_cast<int>(bomb.status) << " exit " << bomb.exit_code
                      << " signal " << bomb.signal << ": " << bomb.aggregated;

  ExecOutcome after = RunOk(
      "grep -h '^oom_kill ' /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events "
      "2>/dev/null | head -1; echo alive");
  EXPECT_EQ(after.exit_code, 0) << after.aggregated;
  EXPECT_NE(after.aggregated.find("alive"), std::string::npos);
  auto counters = KeyValues(after.aggregated, ' ');
  EXPECT_GE(std::stol(counters["oom_kill"].empty() ? "0" : counters["oom_kill"]), 1)
      << "the kernel's OOM killer acted for this container: " << after.aggregated;
  for (const auto& w : after.warnings) ADD_FAILURE() << "no recreation expected: " << w;
  auto again = client_->ListContainers({std::string(exec::kInstanceLabel) + "=" + instance_}, true);
  ASSERT_TRUE(again && again->size() == 1u);
  EXPECT_EQ(again->front().id, id) << "the same container, not a recreated one";
}

}  // namespace
}  // namespace sandrun::testing

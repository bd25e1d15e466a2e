// Host-backed mounts through the Docker executor against the real engine: the spec the gate
// built is what gets mounted even when the path changes in between; the staging mounts are
// nosuid,nodev (read-only where asked) and gone after the start, stale ones are swept; a
// container name taken by another scope (a slug collision) or another instance is never reused.
//
// Containers carry the executor's labels (sandrun.instance=<per-test id>) and are removed by
// instance in TearDown; the state dir's mounts are detached.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "runner/policy/sandbox_spec.h"
#include "sandbox/base/slug.h"
#include "sandbox/executors/docker/docker_executor.h"
#include "sandbox/harden/container_preset.h"
#include "sandbox/harden/seccomp_profile.h"
#include "tests/support/docker_env.h"
#include "tests/support/mounts.h"

namespace sandrun::testing {
namespace {

namespace fs = std::filesystem;

class HostMountsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SANDRUN_REQUIRE_DOCKER(c);
    client_ = std::shared_ptr<docker::Client>(std::move(c));
    ASSERT_EQ(::geteuid(), 0u) << "staged mounts need a root runner";
    std::random_device rd;
    char head[16];
    std::snprintf(head, sizeof(head), "%08x", static_cast<unsigned>(rd()));
    instance_ = std::string(head) + "-mounts-test-" + std::to_string(::getpid());
    char tmpl[] = "/tmp/sandrun-e2e-mounts-XXXXXX";  // seen by the suite's leak check
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    state_dir_ = tmpl;
    workspace_ = state_dir_ + "-ws";
    fs::create_directories(workspace_);
    auto seccomp = harden::LoadSeccompProfileJson(SANDRUN_TEST_PROFILES_DIR, "default");
    ASSERT_TRUE(seccomp) << seccomp.error().ToString();
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
      for (const std::string& id : foreign_) (void)client_->RemoveContainer(id, true);
    }
    std::error_code ec;
    for (const std::string& dir : {state_dir_, workspace_}) {
      if (dir.empty()) continue;
      DetachMountsBelow(dir);
      fs::remove_all(dir, ec);
    }
  }

  Result<exec::SandboxSpec> Spec() {
    policy::GateContext ctx;
    ctx.settings = &settings_;
    ctx.caller.agent_id = "main";
    ctx.state_dir = state_dir_;
    ctx.instance_id = instance_;
    ctx.workspace_dir = workspace_;
    ctx.host_env = {{"HOME", state_dir_}};
    ctx.seccomp_profile_json = seccomp_json_;
    return policy::BuildSandboxSpec(ctx);
  }

  Result<exec::ExecOutcome> Run(const exec::SandboxSpec& spec, const std::string& command) {
    exec::Plan plan;
    plan.target = exec::Target::kSandbox;
    plan.command = command;
    plan.sandbox = spec;
    plan.cwd = spec.workdir;
    plan.timeout_ms = 60000;
    plan.max_output_chars = 20000;
    exec::DockerExecutor executor(client_);
    return executor.Run(plan, nullptr, nullptr);
  }

  size_t ContainerCount() {
    auto list =
        client_->ListContainers({std::string(exec::kInstanceLabel) + "=" + instance_}, true);
    return list ? list->size() : 0;
  }

  std::shared_ptr<docker::Client> client_;
  config::AgentSettings settings_;
  std::string instance_, state_dir_, workspace_, seccomp_json_;
  std::vector<std::string> foreign_;  // containers a test created itself
};

TEST_F(HostMountsTest, APathSwappedAfterTheCheckIsNotWhatGetsMounted) {
  settings_.sandbox.workspace_access = config::WorkspaceAccess::kRo;
  auto spec = Spec();
  ASSERT_TRUE(spec) << spec.error().message;
  // Between the gate and the container's creation the workspace becomes a link elsewhere.
  const std::string elsewhere = state_dir_ + "-elsewhere";
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere + "/host-secret") << "secret\n";
  fs::rename(workspace_, workspace_ + "-moved");
  fs::create_directory_symlink(elsewhere, workspace_);
  auto out = Run(*spec, "cat /workspace/host-secret");
  fs::remove(workspace_);
  fs::rename(workspace_ + "-moved", workspace_);
  fs::remove_all(elsewhere);
  ASSERT_FALSE(out) << "mounted the swapped path: " << out->aggregated;
  EXPECT_NE(out.error().ToString().find("symbolic link"), std::string::npos)
      << out.error().ToString();
  EXPECT_EQ(ContainerCount(), 0u);

  // A directory replaced by another one (same path, another object) is refused too.
  fs::rename(workspace_, workspace_ + "-moved");
  fs::create_directories(workspace_);
  out = Run(*spec, "true");
  fs::remove_all(workspace_);
  fs::rename(workspace_ + "-moved", workspace_);
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().ToString().find("changed after it was checked"), std::string::npos)
      << out.error().ToString();
}

TEST_F(HostMountsTest, StagedMountsAreHardenedAndGoneAfterTheStart) {
  const std::string data = state_dir_ + "-data";
  fs::create_directories(data);
  settings_.sandbox.workspace_access = config::WorkspaceAccess::kRw;
  settings_.sandbox.docker.binds = {data + ":/data:ro"};
  auto spec = Spec();
  ASSERT_TRUE(spec) << spec.error().message;
  auto out = Run(*spec, "grep -E ' /(workspace|data) ' /proc/self/mountinfo");
  fs::remove_all(data);
  ASSERT_TRUE(out) << out.error().ToString();
  ASSERT_EQ(out->exit_code, 0) << out->aggregated;
  std::istringstream lines(out->aggregated);
  std::map<std::string, std::string> options;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point, opts;
    f >> id >> parent >> dev >> root >> point >> opts;
    options[point] = opts;
  }
  EXPECT_NE(options["/workspace"].find("nosuid,nodev"), std::string::npos) << out->aggregated;
  EXPECT_EQ(options["/workspace"].rfind("rw,", 0), 0u) << out->aggregated;
  EXPECT_EQ(options["/data"].rfind("ro,nosuid,nodev", 0), 0u) << out->aggregated;

  // The engine was given the staging paths, which are gone now.
  auto list = client_->ListContainers({std::string(exec::kInstanceLabel) + "=" + instance_}, true);
  ASSERT_TRUE(list && list->size() == 1u);
  auto info = client_->InspectContainer(list->front().id);
  ASSERT_TRUE(info);
  ASSERT_EQ(info->host.mounts.size(), 2u);
  for (const auto& m : info->host.mounts) {
    EXPECT_EQ(m.source.rfind(state_dir_ + "/sandbox/mnt/", 0), 0u) << m.source;
    EXPECT_FALSE(m.read_only) << "the runtime would remount and drop nosuid";
    EXPECT_FALSE(fs::exists(m.source)) << m.source;
  }
  EXPECT_TRUE(MountPointsBelow(state_dir_).empty());
  EXPECT_TRUE(fs::is_empty(state_dir_ + "/sandbox/mnt"));
}

TEST_F(HostMountsTest, StagingLeftByADeadRunnerIsSwept) {
  // What a runner killed between staging and start leaves: a bind under mnt/<dead pid>-...
  const std::string stale = state_dir_ + "/sandbox/mnt/999999999-0-0";
  fs::create_directories(stale + "/0");
  ASSERT_EQ(::mount(workspace_.c_str(), (stale + "/0").c_str(), nullptr, MS_BIND, nullptr), 0);
  auto spec = Spec();
  ASSERT_TRUE(spec) << spec.error().message;
  auto out = Run(*spec, "true");
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_TRUE(MountPointsBelow(state_dir_ + "/sandbox/mnt").empty());
  EXPECT_FALSE(fs::exists(stale));
}

TEST_F(HostMountsTest, ANameTakenByAnotherScopeOrInstanceIsNeverReused) {
  auto spec = Spec();
  ASSERT_TRUE(spec) << spec.error().message;
  // An impostor under the scope's readable name: another scope's labels (a slug collision).
  docker::ContainerSpec impostor = exec::BuildContainerSpec(*spec, exec::NowMs());
  impostor.labels[exec::kScopeLabel] = "agent:someone-else";
  impostor.labels[exec::kScopeHashLabel] = ScopeKeyHash("agent:someone-else");
  impostor.labels[kTestLabel] = "1";
  impostor.host.mounts.clear();
  auto id = client_->CreateContainer(exec::ContainerName(*spec), impostor);
  ASSERT_TRUE(id) << id.error().ToString();
  foreign_.push_back(*id);
  ASSERT_TRUE(client_->StartContainer(*id));
  auto out = Run(*spec, "echo mine > /workspace/f; hostname");
  ASSERT_TRUE(out) << out.error().ToString();
  ASSERT_EQ(out->exit_code, 0) << out->aggregated;
  EXPECT_NE(out->where, "container " + exec::ContainerName(*spec));
  EXPECT_EQ(out->where, "container " + exec::CollisionFreeContainerName(*spec));
  auto still = client_->InspectContainer(*id);
  ASSERT_TRUE(still) << "the other scope's container is left alone";
  EXPECT_TRUE(still->state.running);
}

TEST_F(HostMountsTest, WithoutNosuidMountsAUserThatMayBeRootIsRefused) {
  // What a runner that is not root (or a remote engine) gets: plain binds of the checked paths.
  exec::MountSupport plain;
  plain.reason = "the runner is not root";
  settings_.sandbox.workspace_access = config::WorkspaceAccess::kRo;
  for (const char* user : {"0", "root", "0:0", "sandbox"}) {
    settings_.sandbox.docker.user = user;
    auto spec = Spec();
    ASSERT_TRUE(spec) << spec.error().message;
    auto staged = exec::StagedMounts::Prepare(*spec, plain);
    ASSERT_FALSE(staged) << user;
    EXPECT_NE(staged.error().ToString().find("may be root"), std::string::npos)
        << staged.error().ToString();
  }
  settings_.sandbox.docker.user = "1000:1000";
  auto spec = Spec();
  ASSERT_TRUE(spec);
  auto staged = exec::StagedMounts::Prepare(*spec, plain);
  ASSERT_TRUE(staged) << staged.error().ToString();
  ASSERT_EQ(staged->mounts().size(), 1u);
  EXPECT_EQ(staged->mounts()[0].source, workspace_);
  EXPECT_TRUE(staged->mounts()[0].read_only) << "plain binds ask the engine for ro";
  EXPECT_TRUE(MountPointsBelow(state_dir_).empty());
}

}  // namespace
}  // namespace sandrun::testing

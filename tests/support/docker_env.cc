#include "tests/support/docker_env.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "sandbox/base/json.h"
#include "sandbox/os/file.h"
#include "tests/support/mounts.h"

namespace sandrun::testing {

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

std::unique_ptr<docker::Client> ConnectToDocker(std::string* why) {
  auto client = docker::Client::FromEnvironment();
  if (!client) {
    *why = client.error().ToString();
    return nullptr;
  }
  auto api = (*client)->ApiVersion({Deadline::After(std::chrono::seconds(5)), nullptr});
  if (!api) {
    *why = api.error().ToString();
    return nullptr;
  }
  return std::move(client).value();
}

exec::SandboxSpec TestSandboxSpec(const std::string& tag, const std::string& scope_key,
                                  const std::string& state_dir) {
  std::random_device rd;
  char head[16];
  std::snprintf(head, sizeof(head), "%08x", static_cast<unsigned>(rd()));
  exec::SandboxSpec spec;
  spec.instance_id = std::string(head) + "-" + tag + "-" + std::to_string(::getpid());
  spec.scope_key = scope_key;
  spec.image = kMinimalImage;
  spec.workdir = "/tmp";
  spec.tmpfs = {"/tmp"};
  spec.cap_drop = {"ALL"};
  spec.seccomp_profile_name = "default";
  spec.seccomp_profile_json = DefaultSeccompJson();
  spec.user = "65534:65534";
  spec.pids_limit = 256;
  spec.state_dir = state_dir;
  return spec;
}

void RemoveTestSandboxes(docker::Client* client, const std::string& instance_id,
                         const std::string& state_dir) {
  if (client != nullptr) {
    // The label's name as the container pool writes it (exec::kInstanceLabel).
    auto list = client->ListContainers({"sandrun.instance=" + instance_id}, true);
    if (list) {
      for (const auto& ct : *list) EXPECT_TRUE(client->RemoveContainer(ct.id, true));
    }
  }
  std::error_code ec;
  if (state_dir.empty()) return;
  // Scratch images and the warm pool's shared mount stay mounted on the host.
  DetachMountsBelow(state_dir);
  std::filesystem::remove_all(state_dir, ec);
}

std::string DefaultSeccompJson() {
  std::string path = std::string(SANDRUN_TEST_PROFILES_DIR) + "/seccomp/default.json";
  auto text = ReadFile(path);
  if (!text) return "";
  auto doc = ParseJson(*text);
  if (!doc) return "";
  return ToJson(*doc);
}

docker::ContainerSpec SecureSpec(const std::string& image) {
  docker::ContainerSpec spec;
  spec.image = image;
  spec.cmd = {"sleep", "infinity"};
  spec.labels = {{kTestLabel, "1"}};
  spec.working_dir = "/";
  auto& h = spec.host;
  h.network_mode = "none";
  h.readonly_rootfs = true;
  h.cap_drop = {"ALL"};
  h.security_opt = {"no-new-privileges:true", "seccomp=" + DefaultSeccompJson()};
  h.tmpfs = {{"/tmp", "rw,nosuid,nodev,size=64m"},
             {"/var/tmp", "rw,nosuid,nodev,size=16m"},
             {"/run", "rw,nosuid,nodev,size=16m"}};
  h.pids_limit = 512;
  h.memory = int64_t{1} << 30;
  h.memory_swap = int64_t{1} << 30;
  h.nano_cpus = 1000000000;
  h.init = true;
  return spec;
}

}  // namespace sandrun::testing

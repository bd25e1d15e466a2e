// Access to the real Docker engine for integration tests. In CI (CI=true) an unreachable engine
// is a test failure; run by hand without CI=true, the test is skipped with the reason.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "sandbox/docker/client.h"
#include "sandbox/executors/plan.h"

namespace sandrun::testing {

// Connects and pings; on failure returns nullptr and sets *why.
std::unique_ptr<docker::Client> ConnectToDocker(std::string* why);

bool InCi();

// The seccomp profile of the containers, compacted for HostConfig.SecurityOpt.
std::string DefaultSeccompJson();

// A container spec with the security options of SPEC §4 (minus the workspace mount).
docker::ContainerSpec SecureSpec(const std::string& image);

inline constexpr char kMinimalImage[] = "sandrun-sandbox:minimal";

// The sandbox of an executor-level test: the minimal image, /tmp as a tmpfs workdir, every
// capability dropped, the default seccomp profile, nobody, 256 pids, scope `scope_key` of a
// fresh instance id (random, `tag`, this pid) whose registry lives in `state_dir`.
exec::SandboxSpec TestSandboxSpec(const std::string& tag, const std::string& scope_key,
                                  const std::string& state_dir);
// Removes every container of `instance_id` (each removal must succeed) and `state_dir`.
void RemoveTestSandboxes(docker::Client* client, const std::string& instance_id,
                         const std::string& state_dir);
inline constexpr char kTestLabel[] = "sandrun.test";

}  // namespace sandrun::testing

// Declares `client` (std::unique_ptr<docker::Client>) or fails/skips the test.
#define SANDRUN_REQUIRE_DOCKER(client)                                                           \
  std::string client##_why_;                                                                     \
  auto client = ::sandrun::testing::ConnectToDocker(&client##_why_);                             \
  if (!client) {                                                                                 \
    if (::sandrun::testing::InCi()) FAIL() << "Docker engine required in CI: " << client##_why_; \
    GTEST_SKIP() << "no Docker engine (" << client##_why_ << "); CI=true makes this a failure";  \
  }

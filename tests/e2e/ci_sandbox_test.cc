// Issue 19, CI pipelines, through the real binary and dockerd: an agent edits a checkout owned
// by the CI user and its files come back owned by that user; HOME is not the checkout; per-call
// sandbox choices within sandbox.allow.*; `exec --rm` leaves no container or scratch data;
// `sandbox prune --session` removes a finished job's scope.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class CiSandbox : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    SANDRUN_REQUIRE_DOCKER(client);
  }

  // Containers of this state dir whose scope key contains `part`.
  size_t ContainersOfScope(const std::string& part) {
    auto list = Sandrun({"sandbox", "list", "--json"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    size_t n = 0;
    for (size_t at = list.out.find("\"scope\":\""); at != std::string::npos;
         at = list.out.find("\"scope\":\"", at + 1)) {
      const size_t end = list.out.find('"', at + 9);
      if (Contains(list.out.substr(at + 9, end - at - 9), part)) ++n;
    }
    return n;
  }
};

TEST_F(CiSandbox, AnRwCheckoutOfAnotherUserIsEditableAndFilesStayTheirs) {
  MinimalSandboxConfig(R"("workspaceAccess": "rw")");
  ASSERT_EQ(::chown(workspace_.c_str(), 1000, 1000), 0);
  std::filesystem::permissions(workspace_, std::filesystem::perms::owner_all |
                                               std::filesystem::perms::group_read |
                                               std::filesystem::perms::group_exec);
  { std::ofstream(workspace_ + "/README") << "checkout\n"; }
  ASSERT_EQ(::chown((workspace_ + "/README").c_str(), 1000, 1000), 0);
  auto r = Exec({},
                "id -u; echo \"$HOME\"; echo edited >> README && mkdir -p out && "
                "echo built > out/a.txt && echo cache > \"$HOME/.cache-probe\" && "
                "ls -ld \"$HOME\" | cut -c1-10");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "1000\n/home/sandrun\ndrwx------\n");
  struct stat st {};
  for (const std::string path : {"/README", "/out", "/out/a.txt"}) {
    ASSERT_EQ(::stat((workspace_ + path).c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_uid, 1000u) << path;
    EXPECT_EQ(st.st_gid, 1000u) << path;
  }
  EXPECT_FALSE(std::filesystem::exists(workspace_ + "/.cache-probe"))
      << "HOME must not be the checkout";
  // HOME belongs to the sandbox user alone and lives as long as the container.
  auto again = Exec({}, "cat \"$HOME/.cache-probe\"");
  EXPECT_EQ(again.out, "cache\n") << again.err;
}

TEST_F(CiSandbox, CallChoicesWithinTheAllowListAndRefusedBeyondIt) {
  MinimalSandboxConfig(
      R"("allow": {"images": ["sandrun-sandbox:bookworm"], "memory": "512m", "pids": 600})");
  // An allowed image: the bookworm image has bash, the minimal one does not.
  auto image = Exec({"--image", "sandrun-sandbox:bookworm"}, "command -v bash");
  EXPECT_EQ(image.exit_code, 0) << image.out << image.err;
  EXPECT_TRUE(Contains(image.out, "bash")) << image.out;
  // Limits up to the ceilings: the container gets them.
  auto limits = Exec({"--memory", "256m", "--pids", "600"},
                     "cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max 2>/dev/null || "
                     "cat /sys/fs/cgroup/memory/memory.limit_in_bytes "
                     "/sys/fs/cgroup/pids/pids.max");
  EXPECT_EQ(limits.exit_code, 0) << limits.err;
  EXPECT_EQ(limits.out, "268435456\n600\n");
  const size_t containers = ContainerCount();
  struct Refused {
    std::vector<std::string> flags;
    const char* key;
  };
  const Refused refused[] = {
      {{"--image", "busybox:latest"}, "sandbox.allow.images"},
      {{"--network", "bridge"}, "sandbox.allow.network"},
      {{"--network", "host"}, "not allowed"},
      {{"--memory", "1g"}, "sandbox.allow.memory"},
      {{"--pids", "601"}, "sandbox.allow.pids"},
      {{"--cpus", "2"}, "sandbox.allow.cpus"},
      {{"--memory", "lots"}, "memory"},
      {{"--rm", "--background"}, "foreground only"},
      // Red team: below the engine's minimums a limit meant no limit (cpus) or a failed create.
      {{"--cpus", "0.000000001"}, "cpus must be a number from 0.01"},
      {{"--memory", "1k"}, "at least 6m"},
  };
  for (const Refused& c : refused) {
    SCOPED_TRACE(c.flags.front() + " " + c.flags.back());
    auto r = Exec(c.flags, "touch /workspace/ran");
    EXPECT_EQ(r.exit_code, 125) << r.out << r.err;
    EXPECT_TRUE(Contains(r.err, c.key)) << r.err;
  }
  // The same refusals as tool calls.
  auto call = Call(R"({"tool":"exec","command":"true","image":"busybox:latest"})");
  EXPECT_EQ(call.exit_code, 2) << call.out;
  EXPECT_TRUE(Contains(call.out, "sandbox.allow.images")) << call.out;
  call = Call(R"({"tool":"exec","command":"true","pids":"many"})");
  EXPECT_EQ(call.exit_code, 2) << call.out;
  call = Call(R"({"tool":"exec","command":"true","cpus":1e-10})");
  EXPECT_EQ(call.exit_code, 2) << call.out;
  EXPECT_EQ(ContainerCount(), containers) << "a refused call creates nothing";
  auto ran = Exec({}, "test -e /workspace/ran && echo ran || echo clean");
  EXPECT_EQ(ran.out, "clean\n") << "a refused call runs nothing";
}

TEST_F(CiSandbox, RmLeavesNoContainerAndNoScratchData) {
  MinimalSandboxConfig();
  auto kept = Exec({}, "echo kept > /workspace/k");  // the agent's own scope stays as it is
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  const size_t before = ContainerCount();
  auto count = [](const std::string& dir) {
    std::error_code ec;
    return std::distance(std::filesystem::directory_iterator(dir, ec),
                         std::filesystem::directory_iterator{});
  };
  const auto scratch_before = count(home_ + "/sandboxes");
  const auto images_before = count(home_ + "/sandbox/scratch");
  auto r = Exec({"--rm"}, "cat /workspace/k 2>/dev/null || echo fresh; echo done; exit 3");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out, "fresh\ndone\n") << "a scope of its own, not the agent's";
  EXPECT_EQ(ContainerCount(), before);
  EXPECT_EQ(ContainersOfScope("#rm-"), 0u);
  EXPECT_EQ(count(home_ + "/sandboxes"), scratch_before) << "the call's scratch dir is gone";
  EXPECT_EQ(count(home_ + "/sandbox/scratch"), images_before) << "and its scratch image";
  // A timeout ends the call too, and still removes what it made.
  auto slow = Exec({"--rm", "--timeout", "1"}, "sleep 30");
  EXPECT_EQ(slow.exit_code, 124) << slow.err;
  EXPECT_EQ(ContainersOfScope("#rm-"), 0u);
  // Through a server as well.
  StartServer();
  auto served = Exec({"--rm"}, "echo served");
  EXPECT_EQ(served.out, "served\n") << served.err;
  EXPECT_EQ(ContainersOfScope("#rm-"), 0u);
}

TEST_F(CiSandbox, PruneSessionRemovesAFinishedJobsScope) {
  MinimalSandboxConfig(R"("scope": "session")");
  auto job = Sandrun({"--session", "job-41", "exec", "--", "echo artifact > /workspace/a"});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  auto other = Sandrun({"--session", "job-42", "exec", "--", "true"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  ASSERT_EQ(ContainersOfScope("job-41"), 1u);
  auto pruned = Sandrun({"sandbox", "prune", "--session", "job-41"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.out << pruned.err;
  EXPECT_TRUE(Contains(pruned.out, "pruned session job-41: 1 container")) << pruned.out;
  EXPECT_EQ(ContainersOfScope("job-41"), 0u);
  EXPECT_EQ(ContainersOfScope("job-42"), 1u) << "another job's scope is left alone";
  for (const auto& e : std::filesystem::directory_iterator(home_ + "/sandboxes")) {
    EXPECT_FALSE(e.path().filename().string().starts_with("job-41-")) << e.path();
  }
  // The next run of that session starts clean.
  auto again = Sandrun({"--session", "job-41", "exec", "--", "ls /workspace"});
  EXPECT_EQ(again.out, "") << again.err;
  // Red team: a session key that is another scope kind's key names that sandbox: refused, for
  // exec and prune alike (an agent's container, scratch and HOME are not a session's).
  auto agent_scope = Sandrun({"--agent", "alice", "--session", "agent:main", "exec", "--", "true"});
  EXPECT_EQ(agent_scope.exit_code, 125) << agent_scope.out << agent_scope.err;
  EXPECT_TRUE(Contains(agent_scope.err, "names another scope's sandbox")) << agent_scope.err;
  EXPECT_EQ(Sandrun({"sandbox", "prune", "--session", "shared"}).exit_code, 2);
  EXPECT_EQ(ContainersOfScope("job-42"), 1u);
  // Refused: an invalid key, --all with --session, and a scope other sessions share.
  EXPECT_EQ(Sandrun({"sandbox", "prune", "--session", "../x"}).exit_code, 2);
  EXPECT_EQ(Sandrun({"sandbox", "prune", "--all", "--session", "job-42"}).exit_code, 2);
  MinimalSandboxConfig();
  auto shared = Sandrun({"sandbox", "prune", "--session", "job-42"});
  EXPECT_EQ(shared.exit_code, 2);
  EXPECT_TRUE(Contains(shared.err, "sandbox.scope")) << shared.err;
  EXPECT_EQ(ContainersOfScope("job-42"), 1u);
}

}  // namespace
}  // namespace sandrun::testing

// The sandbox's host-backed mounts and scopes, attacked as an agent would (issue 12, "Mounts and
// scopes", and the sandbox half of "Identities"), through the real binary and dockerd:
//   a setuid plant in the scratch dir and in an rw workspace; symlinked bind sources and
//   workspaces; blocked and state-dir workspaces; two agent ids that share a slug; the shared
//   scope; a stale container after the workspace or its access changed; a dead container; the
//   workdir oracle; the scratch size bound.
// The runner is root here (as in CI); a stranger on the host is uid 1234.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sandbox/base/slug.h"
#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kStranger = 1234;
// Two agent ids with one slug (and so one container name and, before, one scratch dir): found
// by a birthday search over sha256("agent:<id>")'s first 8 hex digits.
constexpr char kCollidingA[] = "collide-agent-with-a-long-name-219";
constexpr char kCollidingB[] = "collide-agent-with-a-long-name-37ab";

// Runs the file at `path` as the stranger, through an fd this (root) test opened: directory
// permissions play no part, only the file's mode, owner and its mount's nosuid.
std::string RunAsStranger(const std::string& path, const std::vector<std::string>& args) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return "cannot open " + path;
  int out[2];
  if (::pipe(out) != 0) return "no pipe";
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(kStranger, kStranger, kStranger) != 0 ||
        ::setresuid(kStranger, kStranger, kStranger) != 0) {
      _exit(126);
    }
    ::fexecve(fd, argv.data(), envp);
    _exit(127);
  }
  ::close(out[1]);
  ::close(fd);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return text;
}

// Regular files below `dir` that are setuid and owned by root.
std::vector<std::string> SetuidRootFiles(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_ISUID) &&
        st.st_uid == 0) {
      found.push_back(it->path().string());
    }
  }
  return found;
}

bool MountIsNosuid(const std::string& path) {
  struct statvfs st {};
  return ::statvfs(path.c_str(), &st) == 0 && (st.f_flag & ST_NOSUID) && (st.f_flag & ST_NODEV);
}

// A workspace of uid 1000 that anyone may write too: the sandbox runs as its owner, and an
// older sandrun's capability-less root could write it as well (so its tests fail where the
// attack succeeds, not while setting up).
void ShareWorkspace(const std::string& dir) {
  ASSERT_EQ(::chown(dir.c_str(), 1000, 1000), 0);
  fs::permissions(dir, fs::perms::all);
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    ASSERT_EQ(::lchown(e.path().c_str(), 1000, 1000), 0) << e.path();
    if (e.is_directory()) fs::permissions(e.path(), fs::perms::all);
  }
}

class SandboxMounts : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    SANDRUN_REQUIRE_DOCKER(client);
    client_ = std::move(client);
    ASSERT_EQ(::geteuid(), 0u) << "these tests attack a root runner";
    MinimalSandboxConfig();
  }

  // The host side of the default scope's scratch dir (whatever it is named: an older sandrun
  // named it by the 8-hex slug, so its failures show where the attack succeeds).
  std::string ScratchDir(const std::string& key = "agent:main") const {
    const std::string dir = home_ + "/sandboxes/" + ScopeDirName(key);
    std::error_code ec;
    if (fs::exists(dir, ec)) return dir;
    for (const auto& e : fs::directory_iterator(home_ + "/sandboxes", ec)) {
      if (e.path().filename().string().rfind(SlugifyScopeKey(key), 0) == 0) return e.path();
    }
    return dir;
  }

  ProcessResult ExecAs(const std::string& agent, const std::string& command) {
    return Sandrun({"--agent", agent, "exec", "--", command});
  }

  // The plant: the host's `id` (coreutils, which keeps a setuid euid and shows it; busybox
  // drops it), put where the sandbox sees it, copied and made setuid by whoever the sandbox runs
  // as. `host_dir` is the host side of /workspace.
  void Plant(const std::string& host_dir) {
    ASSERT_EQ(Exec({}, "true").exit_code, 0);  // the scratch dir exists once a call made it
    fs::copy_file("/usr/bin/id", host_dir + "/id", fs::copy_options::overwrite_existing);
    auto r = Exec({}, "cp /workspace/id /workspace/x && chmod 4755 /workspace/x");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  std::unique_ptr<docker::Client> client_;
};

// ---- Identities: nobody runs as root by accident; host-backed mounts are nosuid,nodev ----

TEST_F(SandboxMounts, SetuidPlantInTheScratchDirGainsNothing) {
  auto id = Exec({}, "id -u; id -g; grep ' /workspace ' /proc/self/mountinfo");
  ASSERT_EQ(id.exit_code, 0) << id.err;
  EXPECT_EQ(id.out.substr(0, 12), "65534\n65534\n") << "a root runner's scratch: nobody";
  EXPECT_NE(id.out.find("nosuid,nodev"), std::string::npos) << id.out;
  Plant(ScratchDir());
  EXPECT_EQ(SetuidRootFiles(home_), std::vector<std::string>{}) << "no root-owned setuid file";
  ASSERT_TRUE(fs::exists(ScratchDir() + "/x"));
  EXPECT_TRUE(MountIsNosuid(ScratchDir())) << "the host side of the scratch is nosuid,nodev too";
  const std::string ran = RunAsStranger(ScratchDir() + "/x", {"id"});
  EXPECT_NE(ran.find("uid=1234"), std::string::npos) << ran;
  EXPECT_EQ(ran.find("euid="), std::string::npos) << "no privilege gained: " << ran;
}

TEST_F(SandboxMounts, SetuidPlantAsAnExplicitRootUserStillGainsNothingOnTheHost) {
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal", "user": "0"}}})");
  auto id = Exec({}, "id -u");
  EXPECT_EQ(id.out, "0\n") << "root only when sandbox.docker.user says so";
  Plant(ScratchDir());
  ASSERT_EQ(SetuidRootFiles(ScratchDir()).size(), 1u) << "root planted one";
  const std::string ran = RunAsStranger(ScratchDir() + "/x", {"id"});
  EXPECT_NE(ran.find("uid=1234"), std::string::npos) << ran;
  EXPECT_EQ(ran.find("euid="), std::string::npos) << "the scratch mount is nosuid: " << ran;
}

TEST_F(SandboxMounts, SetuidPlantInAnRwWorkspaceIsNeverRootOwned) {
  MinimalSandboxConfig(R"("workspaceAccess": "rw")");
  ShareWorkspace(workspace_);
  auto id = Exec({}, "id -u; grep ' /workspace ' /proc/self/mountinfo");
  EXPECT_EQ(id.out.substr(0, 5), "1000\n") << "the workspace's owner: " << id.out;
  EXPECT_NE(id.out.find("nosuid,nodev"), std::string::npos) << id.out;
  Plant(workspace_);
  EXPECT_EQ(SetuidRootFiles(workspace_), std::vector<std::string>{});
  // The workspace's owner's own setuid file at most: never root's.
  const std::string ran = RunAsStranger(workspace_ + "/x", {"id"});
  EXPECT_NE(ran.find("uid=1234"), std::string::npos) << ran;
  EXPECT_EQ(ran.find("euid=0"), std::string::npos) << ran;
}

TEST_F(SandboxMounts, RootOwnedRwWorkspaceRunsTheSandboxAsNobody) {
  MinimalSandboxConfig(R"("workspaceAccess": "rw")");
  fs::permissions(workspace_, fs::perms::all | fs::perms::sticky_bit);  // writable by anyone
  Plant(workspace_);
  EXPECT_EQ(SetuidRootFiles(workspace_), std::vector<std::string>{});
  struct stat st {};
  ASSERT_EQ(::stat((workspace_ + "/x").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
  const std::string ran = RunAsStranger(workspace_ + "/x", {"id"});
  EXPECT_NE(ran.find("uid=1234"), std::string::npos) << ran;
  EXPECT_EQ(ran.find("euid=0"), std::string::npos) << ran;
}

// ---- Bind sources and the workspace are checked as what they resolve to ----

TEST_F(SandboxMounts, SymlinkedBindSourceIsRefused) {
  const std::string link = home_ + "-run";
  fs::create_symlink("/var/run", link);
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal", "binds": [")" + link +
         R"(:/mnt/run"]}}})");
  auto r = Exec({}, "ls /mnt/run/docker.sock && echo REACHED");
  fs::remove(link);
  EXPECT_EQ(r.exit_code, 125) << r.out << r.err;
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("REACHED"), std::string::npos);
  EXPECT_EQ(ContainerCount(), 0u) << "nothing was created";
}

TEST_F(SandboxMounts, BindSourceSwappedForASymlinkIsRefusedOnTheNextCall) {
  const std::string data = home_ + "-data";
  fs::create_directories(data);
  std::ofstream(data + "/seen") << "data\n";
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal", "binds": [")" + data +
         R"(:/data:ro"]}}})");
  auto first = Exec({}, "cat /data/seen; grep ' /data ' /proc/self/mountinfo");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("data\n"), std::string::npos);
  EXPECT_NE(first.out.find("ro,nosuid,nodev"), std::string::npos) << first.out;
  fs::rename(data, data + "-old");
  fs::create_symlink("/var/run", data);
  auto second = Exec({}, "ls /data/docker.sock && echo REACHED");
  fs::remove(data);
  fs::remove_all(data + "-old");
  EXPECT_EQ(second.exit_code, 125) << second.out << second.err;
  EXPECT_NE(second.err.find("symbolic link"), std::string::npos) << second.err;
}

TEST_F(SandboxMounts, BindSourceInsideTheRwWorkspaceIsRefused) {
  fs::create_directories(workspace_ + "/data");
  Config(R"({"sandbox": {"workspaceAccess": "rw", "docker": {"image": "sandrun-sandbox:minimal",
      "binds": [")" +
         workspace_ + R"(/data:/data"]}}})");
  auto r = Exec({}, "true");
  EXPECT_EQ(r.exit_code, 125) << r.err;
  EXPECT_NE(r.err.find("where the sandbox can write"), std::string::npos) << r.err;
}

TEST_F(SandboxMounts, SymlinkedOrBlockedWorkspaceIsRefused) {
  MinimalSandboxConfig(R"("workspaceAccess": "ro")");
  const std::string link = home_ + "-etc";
  fs::create_symlink("/etc", link);
  for (const std::string& ws : {link, std::string("/etc"), std::string("/"), std::string("/var"),
                                home_, home_ + "/sandbox", home_ + "/sandboxes"}) {
    auto r = RunSandrun({"--workspace", ws, "exec", "--", "cat /workspace/passwd"}, Env());
    EXPECT_EQ(r.exit_code, 125) << ws << ": " << r.out << r.err;
    EXPECT_EQ(r.out.find("root:"), std::string::npos) << ws;
    EXPECT_NE(r.err.find("cannot be mounted"), std::string::npos) << ws << ": " << r.err;
  }
  fs::remove(link);
  EXPECT_EQ(ContainerCount(), 0u);
  // Below the state dir's workspace areas it is fine.
  fs::create_directories(home_ + "/sandboxes/project");
  std::ofstream(home_ + "/sandboxes/project/f") << "ok\n";
  auto ok = RunSandrun(
      {"--workspace", home_ + "/sandboxes/project", "exec", "--", "cat /workspace/f"}, Env());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "ok\n");
}

// ---- Scopes: one container and one directory per scope key, compared in full ----

TEST_F(SandboxMounts, AgentIdsThatShareASlugNeverShareAContainerOrAScratchDir) {
  auto a = ExecAs(kCollidingA, "echo secret-of-a > /workspace/secret; hostname");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto b = ExecAs(kCollidingB, "ls -A /workspace; cat /workspace/secret 2>/dev/null; hostname");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out.find("secret"), std::string::npos) << "agent B read agent A's data: " << b.out;
  EXPECT_NE(a.out, b.out) << "one container for both";
  EXPECT_EQ(ContainerCount(), 2u);
  // And A is still in its own container with its own data.
  auto again = ExecAs(kCollidingA, "cat /workspace/secret");
  EXPECT_EQ(again.out, "secret-of-a\n") << again.err;
  EXPECT_EQ(ContainerCount(), 2u);
}

TEST_F(SandboxMounts, InvalidAgentIdsAndSessionKeysAreRefusedNotRewritten) {
  for (const std::vector<std::string>& ids : {std::vector<std::string>{"--agent", "main/../x"},
                                              {"--agent", "Main Agent"},
                                              {"--agent", "agent:main"},
                                              {"--session", "s 1"},
                                              {"--session", "$(id)"}}) {
    std::vector<std::string> args = ids;
    args.insert(args.end(), {"exec", "--", "echo ran"});
    auto r = Sandrun(args);
    EXPECT_EQ(r.exit_code, 125) << ids[1] << ": " << r.out << r.err;
    EXPECT_EQ(r.out.find("ran"), std::string::npos);
    EXPECT_NE(r.err.find("refused, never rewritten"), std::string::npos) << r.err;
  }
  EXPECT_EQ(ContainerCount(), 0u);
}

TEST_F(SandboxMounts, TheServerRefusesInvalidIdsInItsHeaders) {
  StartServer();
  auto exec = Sandrun({"--agent", "a/b", "exec", "--", "echo ran"});
  EXPECT_EQ(exec.exit_code, 125) << exec.out << exec.err;
  EXPECT_EQ(exec.out.find("ran"), std::string::npos);
  EXPECT_NE(exec.err.find("Invalid agent id"), std::string::npos) << exec.err;
  auto process = Sandrun({"--session", "x y", "process", "list"});
  EXPECT_NE(process.exit_code, 0) << process.out;
  EXPECT_NE((process.out + process.err).find("Invalid session key"), std::string::npos)
      << process.out << process.err;
  StopServer();
  EXPECT_EQ(ContainerCount(), 0u);
}

TEST_F(SandboxMounts, SharedScopeSeesOnlyItsOwnDirectory) {
  Config(R"({"sandbox": {"docker": {"image": "sandrun-sandbox:minimal"}},
             "agents": {"list": [{"id": "ops", "sandbox": {"scope": "shared"}}]}})");
  ASSERT_EQ(Exec({}, "echo private > /workspace/secret").exit_code, 0);
  auto shared = ExecAs("ops", "ls -A /workspace; cat /workspace/*/secret 2>/dev/null; echo end");
  ASSERT_EQ(shared.exit_code, 0) << shared.err;
  EXPECT_EQ(shared.out, "end\n") << "the shared scope sees other scopes' scratch: " << shared.out;
  // It cannot plant a link where another scope's scratch dir will be created either.
  auto plant = ExecAs("ops", "ln -s / /workspace/../" + ScopeDirName("agent:victim") + " 2>&1");
  EXPECT_FALSE(fs::is_symlink(home_ + "/sandboxes/" + ScopeDirName("agent:victim"))) << plant.out;
}

TEST_F(SandboxMounts, ALinkPlantedWhereAScratchDirWillBeIsNeverFollowed) {
  // A scratch root someone else can write (here: the test), and a planted link under the name
  // the next scope's scratch dir will get (its name before and now).
  const std::string root = home_ + "-root";
  const std::string target = home_ + "-target";
  fs::create_directories(root);
  fs::create_directories(target);
  std::ofstream(target + "/host-file") << "host\n";
  for (const std::string& name : {SlugifyScopeKey("agent:main"), ScopeDirName("agent:main")}) {
    fs::create_symlink(target, root + "/" + name);
  }
  MinimalSandboxConfig(R"("workspaceRoot": ")" + root + R"(")");
  auto r = Exec({}, "ls -A /workspace");
  fs::remove_all(root);
  fs::remove_all(target);
  EXPECT_EQ(r.out.find("host-file"), std::string::npos) << "the link was followed: " << r.out;
  EXPECT_EQ(r.exit_code, 123) << r.out << r.err;
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
}

// ---- Stale containers: reused only when everything they reach is what the call asks for ----

TEST_F(SandboxMounts, AnotherWorkspaceGetsANewContainerAtOnce) {
  MinimalSandboxConfig(R"("workspaceAccess": "rw")");
  const std::string other = home_ + "-ws-b";
  fs::create_directories(other);
  ShareWorkspace(workspace_);
  ShareWorkspace(other);
  ASSERT_EQ(Exec({}, "touch /workspace/in-a").exit_code, 0);
  auto b = RunSandrun({"--workspace", other, "exec", "--", "touch /workspace/in-b; ls /workspace"},
                      Env());
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, "in-b\n") << "the call sees the workspace it asked for";
  EXPECT_TRUE(fs::exists(other + "/in-b"));
  EXPECT_FALSE(fs::exists(workspace_ + "/in-b")) << "checkout B's job wrote into checkout A";
  EXPECT_NE(b.err.find("replaced it with a new one"), std::string::npos) << b.err;
  EXPECT_EQ(ContainerCount(), 1u);
  fs::remove_all(other);
}

TEST_F(SandboxMounts, TighteningRwToNoneStopsWritingTheRealWorkspace) {
  MinimalSandboxConfig(R"("workspaceAccess": "rw")");
  ShareWorkspace(workspace_);
  ASSERT_EQ(Exec({}, "touch /workspace/before").exit_code, 0);
  MinimalSandboxConfig(R"("workspaceAccess": "none")");
  auto r = Exec({}, "ls -A /workspace; touch /workspace/after");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "") << "still the real workspace: " << r.out;
  EXPECT_FALSE(fs::exists(workspace_ + "/after"));
}

TEST_F(SandboxMounts, ADeadContainerIsCreatedAgainWithAWarning) {
  ASSERT_EQ(Exec({}, "echo kept > /workspace/note").exit_code, 0);
  auto list = client_->ListContainers({"sandrun.instance=" + InstanceId()}, true);
  ASSERT_TRUE(list && list->size() == 1u);
  ASSERT_TRUE(client_->KillContainer(list->front().id));
  ASSERT_TRUE(client_->WaitContainer(list->front().id));
  auto r = Exec({}, "cat /workspace/note");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "kept\n") << "the scope's scratch survives";
  EXPECT_NE(r.err.find("had stopped"), std::string::npos) << r.err;
  EXPECT_EQ(ContainerCount(), 1u);
}

// ---- The workdir is resolved inside the mount; messages name container paths only ----

TEST_F(SandboxMounts, WorkdirThroughAPlantedLinkIsNoOracleAndNamesNoHostPath) {
  MinimalSandboxConfig(R"("workspaceAccess": "rw")");
  ShareWorkspace(workspace_);
  ASSERT_EQ(Exec({}, "ln -s / /workspace/hostroot && mkdir /workspace/real").exit_code, 0);
  auto probe = Exec({"--workdir", "/workspace/hostroot/etc"}, "pwd");
  EXPECT_EQ(probe.out, "/workspace\n") << "a host directory was probed through the link";
  EXPECT_NE(probe.err.find("Warning: workdir \"/workspace/hostroot/etc\" is unavailable; using "
                           "\"/workspace\"."),
            std::string::npos)
      << probe.err;
  EXPECT_EQ(probe.err.find(workspace_), std::string::npos) << "the host path leaked: " << probe.err;
  auto real = Exec({"--workdir", "real"}, "pwd");
  EXPECT_EQ(real.out, "/workspace/real\n") << real.err;
}

// ---- The scratch dir is bounded ----

TEST_F(SandboxMounts, ScratchLimitStopsWritesAndBoundsTheHostDisk) {
  MinimalSandboxConfig(R"("scratchLimit": "16m")");
  auto r = Exec({}, "dd if=/dev/zero of=/workspace/big bs=1M count=32 2>&1; echo rc=$?");
  EXPECT_NE(r.out.find("No space left on device"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("rc=0"), std::string::npos) << r.out;
  // What the state dir takes on the host's own file system (the mounted scratch is the image).
  struct stat home {};
  ASSERT_EQ(::stat(home_.c_str(), &home), 0);
  uintmax_t used = 0;
  for (const auto& e : fs::recursive_directory_iterator(home_)) {
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == home.st_dev) {
      used += static_cast<uintmax_t>(st.st_blocks) * 512;
    }
  }
  EXPECT_LE(used, uintmax_t{17} << 20) << "host disk used by the state dir (16m + bookkeeping)";
  // The file system stays usable once the file goes.
  auto freed = Exec({},
                    "rm /workspace/big && dd if=/dev/zero of=/workspace/small bs=1M count=4 "
                    "2>&1 >/dev/null; echo rc=$?");
  EXPECT_NE(freed.out.find("rc=0"), std::string::npos) << freed.out;
}

TEST_F(SandboxMounts, WhatApplyPatchMakesInTheScratchIsTheSandboxUsers) {
  // Before any container: apply_patch makes the scope's scratch as the sandbox makes it.
  auto r = Call(
      R"({"tool":"apply_patch","input":"*** Begin Patch\n*** Add File: notes/a.txt\n+one\n*** End Patch\n"})");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(MountIsNosuid(ScratchDir())) << "the scope's image, mounted";
  auto e = Exec({},
                "echo two >> /workspace/notes/a.txt && touch /workspace/notes/b && "
                "cat /workspace/notes/a.txt");
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.out, "one\ntwo\n");
}

TEST_F(SandboxMounts, PruneAndRecreateLeaveNoMountBehind) {
  ASSERT_EQ(Exec({}, "true").exit_code, 0);
  EXPECT_EQ(MountPointsBelow(home_), std::vector<std::string>{ScratchDir()})
      << "the scope's scratch image only: no staging mount is left";
  EXPECT_TRUE(MountPointsBelow(home_ + "/sandbox/mnt").empty());
  ASSERT_EQ(Sandrun({"sandbox", "recreate", "--all"}).exit_code, 0);
  EXPECT_TRUE(MountPointsBelow(home_).empty()) << "recreate detached the scratch mount";
  ASSERT_EQ(Exec({}, "true").exit_code, 0);
  ASSERT_EQ(Sandrun({"sandbox", "prune", "--all"}).exit_code, 0);
  EXPECT_TRUE(MountPointsBelow(home_).empty()) << "prune detached the scratch mount";
}

TEST_F(SandboxMounts, DoctorReportsNosuidMountsAndTheScratchBound) {
  auto r = Sandrun({"doctor", "--json"});
  auto doc = Parsed(r.out);
  std::map<std::string, std::string> status;
  for (const auto& c : JsonMember(doc, "checks")->GetArray()) {
    status[JsonString(c, "name")] = JsonString(c, "status");
  }
  EXPECT_EQ(status["mounts"], "ok") << r.out;
  EXPECT_EQ(status["scratch"], "ok") << r.out;
  EXPECT_TRUE(MountPointsBelow(home_).empty()) << "the doctor's trials are cleaned up";
  // A remote engine's host paths are not this host's: said so, not hidden.
  auto remote = Sandrun({"doctor", "--json"}, {{"DOCKER_HOST", "tcp://127.0.0.1:9"}});
  auto rdoc = Parsed(remote.out);
  std::map<std::string, std::string> detail;
  for (const auto& c : JsonMember(rdoc, "checks")->GetArray()) {
    status[JsonString(c, "name")] = JsonString(c, "status");
    detail[JsonString(c, "name")] = JsonString(c, "detail");
  }
  EXPECT_EQ(status["mounts"], "warn") << remote.out;
  EXPECT_NE(detail["mounts"].find("not local"), std::string::npos) << detail["mounts"];
  EXPECT_EQ(status["scratch"], "warn") << remote.out;
}

}  // namespace
}  // namespace sandrun::testing

// `sandrun sandbox cp` (issue 19, "Artifacts"), through the real binary and dockerd: files and
// trees into and out of a scope's workspace (the scratch dir, an rw and an ro workspace), and the
// escapes an agent would try: a symlink it planted to /etc, `..`, container paths outside the
// workspace. Every refusal checks that nothing was written. The runner is root here (as in CI).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every path below `dir` (relative, sorted): what a refused copy must leave as it was.
std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(fs::relative(it->path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class SandboxCp : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    SANDRUN_REQUIRE_DOCKER(client);
    ASSERT_EQ(::geteuid(), 0u) << "these tests copy as a root runner";
    MinimalSandboxConfig();
    host_ = marks_ + "/host";
    fs::create_directories(host_);
    std::ofstream(host_ + "/f.txt") << "artifact\n";
  }

  ProcessResult Cp(const std::string& src, const std::string& dest) {
    return Sandrun({"sandbox", "cp", src, dest});
  }

  // The sandbox's view of its workspace (`ls -A` of every directory): unchanged by a refusal.
  std::string SandboxListing() {
    auto r = Exec({}, "cd /workspace && find . | sort");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  std::string host_;  // the caller's side: under marks_ (removed by the fixture)
};

// ---- Into the sandbox ----

TEST_F(SandboxCp, FileCopiedInIsSeenAndWritableInTheSandbox) {
  auto r = Cp(host_ + "/f.txt", "sandbox:in/f.txt");  // missing parents are made
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto cat = Exec({}, "cat /workspace/in/f.txt && echo more >> /workspace/in/f.txt && id -u");
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_EQ(cat.out, "artifact\n65534\n") << "the sandbox user (nobody for a root runner's "
                                             "scratch) owns what was copied in";
  // Into an existing directory, by absolute container path: under the source's name.
  ASSERT_EQ(Cp(host_ + "/f.txt", "sandbox:/workspace/in").exit_code, 0);
  EXPECT_EQ(Exec({}, "cat /workspace/in/f.txt").out, "artifact\n") << "replaced whole";
}

TEST_F(SandboxCp, DirectoryTreeCopiedInSkipsSymlinks) {
  fs::create_directories(host_ + "/tree/sub");
  std::ofstream(host_ + "/tree/sub/a") << "A\n";
  fs::create_symlink("/etc/passwd", host_ + "/tree/link");
  auto r = Cp(host_ + "/tree", "sandbox:");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("skipped"), std::string::npos) << r.err;
  auto seen = Exec({},
                   "cat /workspace/tree/sub/a; test -e /workspace/tree/link || echo no-link; "
                   "touch /workspace/tree/sub/b && echo writable");
  EXPECT_EQ(seen.out, "A\nno-link\nwritable\n") << seen.err;
}

TEST_F(SandboxCp, RwWorkspaceGetsItsOwnersFiles) {
  MinimalSandboxConfig(R"("workspaceAccess": "rw")");
  ASSERT_EQ(::chown(workspace_.c_str(), 1000, 1000), 0);
  ASSERT_EQ(Cp(host_ + "/f.txt", "sandbox:d/f.txt").exit_code, 0);
  struct stat st {};
  ASSERT_EQ(::stat((workspace_ + "/d/f.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1000u) << "the workspace owner, whom the sandbox runs as";
  ASSERT_EQ(::stat((workspace_ + "/d").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1000u);
  auto edit = Exec({}, "echo x >> /workspace/d/f.txt && id -u");
  EXPECT_EQ(edit.out, "1000\n") << edit.err;
}

TEST_F(SandboxCp, ReadOnlyWorkspaceRefusesCopyInButCopiesOut) {
  MinimalSandboxConfig(R"("workspaceAccess": "ro")");
  std::ofstream(workspace_ + "/src.txt") << "source\n";
  auto before = Listing(workspace_);
  auto r = Cp(host_ + "/f.txt", "sandbox:f.txt");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("read-only"), std::string::npos) << r.err;
  EXPECT_EQ(Listing(workspace_), before) << "nothing written";
  ASSERT_EQ(Cp("sandbox:src.txt", host_ + "/").exit_code, 0);
  EXPECT_EQ(Slurp(host_ + "/src.txt"), "source\n");
}

TEST_F(SandboxCp, FileNeverReplacesADirectory) {
  ASSERT_EQ(Exec({}, "mkdir -p /workspace/f.txt/keep").exit_code, 0);
  const std::string before = SandboxListing();
  // DEST is a directory: the file would go to f.txt/f.txt. Name the directory itself instead.
  std::ofstream(host_ + "/keep") << "file\n";
  auto r = Cp(host_ + "/keep", "sandbox:f.txt");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot overwrite the directory"), std::string::npos) << r.err;
  EXPECT_EQ(SandboxListing(), before) << "nothing written";
}

// ---- Out of the sandbox ----

TEST_F(SandboxCp, FileAndTreeMadeInTheSandboxCopyOut) {
  auto made = Exec({},
                   "mkdir -p /workspace/out/sub && echo built > /workspace/out/r.txt && "
                   "echo deep > /workspace/out/sub/d.txt");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto r = Cp("sandbox:/workspace/out/r.txt", host_);  // into an existing directory
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Slurp(host_ + "/r.txt"), "built\n");
  ASSERT_EQ(Cp("sandbox:out/r.txt", host_ + "/renamed.txt").exit_code, 0);
  EXPECT_EQ(Slurp(host_ + "/renamed.txt"), "built\n");
  ASSERT_EQ(Cp("sandbox:out", host_ + "/out2").exit_code, 0);
  EXPECT_EQ(Slurp(host_ + "/out2/sub/d.txt"), "deep\n");
  // A directory never replaces a file.
  auto clash = Cp("sandbox:out", host_ + "/r.txt");
  EXPECT_EQ(clash.exit_code, 2) << clash.err;
  EXPECT_EQ(Slurp(host_ + "/r.txt"), "built\n");
}

// ---- Escapes ----

TEST_F(SandboxCp, SymlinkPlantedByTheSandboxIsNeverFollowedOut) {
  auto plant = Exec({},
                    "ln -s /etc /workspace/link && ln -s /etc/passwd /workspace/pw && "
                    "mkdir /workspace/d && ln -s /etc/shadow /workspace/d/sh");
  ASSERT_EQ(plant.exit_code, 0) << plant.err;
  const std::string before = SandboxListing();

  auto in = Cp(host_ + "/f.txt", "sandbox:link/x");
  EXPECT_EQ(in.exit_code, 2) << in.out << in.err;
  EXPECT_NE(in.err.find("leads out of the workspace"), std::string::npos) << in.err;
  EXPECT_FALSE(fs::exists("/etc/x"));
  auto in_file = Cp(host_ + "/f.txt", "sandbox:pw");
  EXPECT_EQ(in_file.exit_code, 2) << in_file.err;
  EXPECT_NE(Slurp("/etc/passwd"), "artifact\n");

  auto out = Cp("sandbox:link/passwd", host_ + "/passwd");
  EXPECT_EQ(out.exit_code, 2) << out.out << out.err;
  EXPECT_FALSE(fs::exists(host_ + "/passwd"));
  auto out_file = Cp("sandbox:pw", host_ + "/pw");
  EXPECT_EQ(out_file.exit_code, 2) << out_file.err;
  EXPECT_FALSE(fs::exists(host_ + "/pw"));
  // Inside a copied tree a link is skipped, never read.
  auto tree = Cp("sandbox:d", host_ + "/d");
  EXPECT_EQ(tree.exit_code, 0) << tree.err;
  EXPECT_NE(tree.err.find("skipped"), std::string::npos) << tree.err;
  EXPECT_FALSE(fs::exists(fs::symlink_status(host_ + "/d/sh")));
  EXPECT_EQ(SandboxListing(), before) << "the sandbox side is as it was";
}

TEST_F(SandboxCp, PathsOutsideTheWorkspaceAreRefused) {
  const std::string before = SandboxListing();
  const auto home_before = Listing(home_);
  for (const std::string dest : {"sandbox:../x", "sandbox:a/../../x", "sandbox:/etc/passwd",
                                 "sandbox:/tmp/x", "sandbox:/workspacex/y", "sandbox:/"}) {
    auto r = Cp(host_ + "/f.txt", dest);
    EXPECT_EQ(r.exit_code, 2) << dest << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(dest.substr(0, 12)), std::string::npos) << r.err;
  }
  for (const std::string src : {"sandbox:../x", "sandbox:/etc/passwd", "sandbox:/tmp/x"}) {
    auto r = Cp(src, host_ + "/got");
    EXPECT_EQ(r.exit_code, 2) << src << ": " << r.out << r.err;
    EXPECT_FALSE(fs::exists(host_ + "/got")) << src;
  }
  EXPECT_NE(Slurp("/etc/passwd"), "artifact\n");
  EXPECT_EQ(SandboxListing(), before) << "nothing written in the sandbox";
  EXPECT_EQ(Listing(home_), home_before) << "nothing written next to the scratch dir";
}

// ---- Usage ----

TEST_F(SandboxCp, ExactlyOneSideIsTheSandbox) {
  auto neither = Cp(host_ + "/f.txt", host_ + "/g.txt");
  EXPECT_EQ(neither.exit_code, 2) << neither.err;
  EXPECT_NE(neither.err.find("exactly one of SRC and DEST"), std::string::npos) << neither.err;
  EXPECT_FALSE(fs::exists(host_ + "/g.txt"));
  auto both = Cp("sandbox:a", "sandbox:b");
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_FALSE(fs::exists(home_ + "/sandboxes")) << "no scope was even looked up";
  auto missing = Cp(host_ + "/nope", "sandbox:nope");
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  auto missing_out = Cp("sandbox:nope", host_ + "/nope");
  EXPECT_EQ(missing_out.exit_code, 2) << missing_out.err;
  EXPECT_FALSE(fs::exists(host_ + "/nope"));
}

TEST_F(SandboxCp, HostOnlyConfigHasNoSandboxToCopyTo) {
  Config(R"({"sandbox": {"mode": "off"}})");
  auto before = Listing(workspace_);
  auto r = Cp(host_ + "/f.txt", "sandbox:f.txt");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("runs on the host"), std::string::npos) << r.err;
  EXPECT_EQ(Listing(workspace_), before);
  EXPECT_FALSE(fs::exists(home_ + "/sandboxes"));
}

}  // namespace
}  // namespace sandrun::testing

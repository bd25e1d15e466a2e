// `cmake --install` lays out a tree that works wherever it is copied (issue 19): bin/sandrun and
// the exec wrapper next to it, share/sandrun/{profiles,images} found from the executable's real
// path (sandbox/os/data_dir.h), never from the prefix or the source tree.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/e2e/sandrun_home.h"

namespace sandrun::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class InstallTest : public SandrunHome {
 protected:
  void SetUp() override {
    SandrunHome::SetUp();
    root_ = home_ + "-install";
    fs::create_directories(root_);
    fs::permissions(root_, fs::perms::owner_all);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
    SandrunHome::TearDown();
  }

  // Installs the build into root_/<name> and returns that prefix.
  std::string Install(const std::string& name) {
    const std::string prefix = root_ + "/" + name;
    auto r = RunProcess({CMAKE_COMMAND, "--install", SANDRUN_BUILD_DIR, "--prefix", prefix});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return prefix;
  }

  // `cp -a from to`, then `from` is removed: nothing may still point into it.
  std::string Relocate(const std::string& from, const std::string& name) {
    const std::string to = root_ + "/" + name;
    auto r = RunProcess({"/bin/cp", "-a", from, to});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    fs::remove_all(from);
    return to;
  }

  // The installed binary, with this test's state dir and no SANDRUN_*_DIR variables.
  ProcessResult Run(const std::string& prefix, std::vector<std::string> args) {
    args.insert(args.begin(), {prefix + "/bin/sandrun", "--workspace", workspace_});
    auto env = Env();
    env["SANDRUN_PROFILES_DIR"] = "";  // unset
    env["SANDRUN_IMAGES_DIR"] = "";
    return RunProcess(args, env);
  }

  std::string root_;
};

TEST_F(InstallTest, LaysOutBinariesDataAndUnitOnly) {
  const std::string p = Install("prefix");
  std::set<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(p)) {
    if (!e.is_directory()) files.insert(fs::relative(e.path(), p).string());
  }
  EXPECT_TRUE(files.count("bin/sandrun"));
  EXPECT_TRUE(files.count("bin/sandrun-exec"));
  EXPECT_TRUE(files.count("bin/sandrun-agent"));
  EXPECT_TRUE(files.count("share/sandrun/profiles/seccomp/default.json"));
  EXPECT_TRUE(files.count("share/sandrun/profiles/README.md"));
  EXPECT_TRUE(files.count("share/sandrun/images/minimal/rootfs.sh"));
  EXPECT_TRUE(files.count("share/sandrun/images/common/profile"));
  EXPECT_TRUE(files.count("lib/systemd/system/sandrun.service"));
  // Nothing else: no test binary, helper or library.
  for (const std::string& f : files) {
    const bool expected = f == "bin/sandrun" || f == "bin/sandrun-exec" ||
                          f == "bin/sandrun-agent" || f.rfind("share/sandrun/", 0) == 0 ||
                          f == "share/doc/sandrun/README.md" ||
                          f == "lib/systemd/system/sandrun.service";
    EXPECT_TRUE(expected) << "unexpected installed file " << f;
  }
  struct stat st {};
  ASSERT_EQ(::stat((p + "/share/sandrun/images/minimal/rootfs.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  ASSERT_EQ(::stat((p + "/share/sandrun/profiles/seccomp/default.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "profiles must not be writable by group or others";
  ASSERT_EQ(::stat((p + "/bin/sandrun-exec").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u) << "the exec wrapper is trusted only if only root writes it";
  // The unit runs the binary of the prefix it was installed under.
  const std::string unit = ReadText(p + "/lib/systemd/system/sandrun.service");
  EXPECT_NE(unit.find("ExecStart=" + p + "/bin/sandrun serve\n"), std::string::npos) << unit;
}

TEST_F(InstallTest, CopiedTreeRunsDoctorAndSandboxedExecFromItsShareDir) {
  SANDRUN_REQUIRE_DOCKER(client);
  const std::string p = Relocate(Install("prefix"), "copied");
  MinimalSandboxConfig();

  auto doctor = Run(p, {"doctor"});
  EXPECT_EQ(doctor.exit_code, 0) << doctor.out << doctor.err;
  EXPECT_NE(
      doctor.out.find(p + "/share/sandrun/profiles (installed next to " + p + "/bin/sandrun)"),
      std::string::npos)
      << doctor.out;
  EXPECT_NE(doctor.out.find(p + "/share/sandrun/images (installed next to"), std::string::npos)
      << doctor.out;
  // The exec wrapper of the copy (not of the build tree) is what containers get.
  EXPECT_NE(doctor.out.find("ok    exec-wrapper " + p + "/bin/sandrun-exec at"), std::string::npos)
      << doctor.out;
  EXPECT_NE(doctor.out.find("ok    exec-path    sandbox agent: " + p + "/bin/sandrun-agent at"),
            std::string::npos)
      << doctor.out;
  EXPECT_EQ(doctor.out.find(SANDRUN_SOURCE_DIR "/profiles"), std::string::npos) << doctor.out;

  auto exec = Run(p, {"exec", "--", "echo hi"});
  EXPECT_EQ(exec.exit_code, 0) << exec.err;
  EXPECT_EQ(exec.out, "hi\n") << exec.err;
}

// A damaged install fails naming its own directory; it never falls back to the source tree it
// was built from (which is still there, next to this test).
TEST_F(InstallTest, TreeWithoutProfilesFailsNamingTheDir) {
  ASSERT_TRUE(fs::is_directory(SANDRUN_SOURCE_DIR "/profiles"));
  const std::string p = Relocate(Install("prefix"), "damaged");
  fs::remove_all(p + "/share/sandrun/profiles");
  MinimalSandboxConfig();
  const std::string missing = p + "/share/sandrun/profiles";

  auto doctor = Run(p, {"doctor"});
  EXPECT_EQ(doctor.exit_code, 1) << doctor.out << doctor.err;
  EXPECT_NE(doctor.out.find("FAIL  profiles     " + missing + " (installed next to " + p +
                            "/bin/sandrun) is missing"),
            std::string::npos)
      << doctor.out;
  EXPECT_NE(doctor.out.find("SANDRUN_PROFILES_DIR"), std::string::npos) << doctor.out;

  auto exec = Run(p, {"exec", "--", "echo hi"});
  EXPECT_EQ(exec.exit_code, 125) << exec.out << exec.err;
  EXPECT_EQ(exec.out, "");
  EXPECT_NE(exec.err.find(missing), std::string::npos) << exec.err;
}

// SANDRUN_PROFILES_DIR still comes first, also for an installed tree.
TEST_F(InstallTest, ProfilesVariableOverridesTheShareDir) {
  const std::string p = Relocate(Install("prefix"), "overridden");
  fs::remove_all(p + "/share/sandrun/profiles");
  auto env = Env();
  env["SANDRUN_PROFILES_DIR"] = SANDRUN_SOURCE_DIR "/profiles";
  env["SANDRUN_IMAGES_DIR"] = "";
  auto doctor = RunProcess({p + "/bin/sandrun", "doctor"}, env);
  EXPECT_NE(doctor.out.find("ok    profiles     " SANDRUN_SOURCE_DIR
                            "/profiles (from $SANDRUN_PROFILES_DIR)"),
            std::string::npos)
      << doctor.out;
}

}  // namespace
}  // namespace sandrun::testing

// The exec wrapper's runner side without an engine: which binaries may be bind-mounted into a
// container (the rules of any bind source), how argv is wrapped, and what the adoption key and
// the config hash carry about it.
#include "sandbox/executors/docker/exec_wrapper.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sandbox/executors/docker/adopted_exec.h"
#include "sandbox/executors/docker/container_pool.h"

namespace sandrun::exec {
namespace {

namespace fs = std::filesystem;

class ExecWrapperFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sandrun-wrapper-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
    bin_ = dir_ + "/sandrun-exec";
    std::ofstream(bin_) << "#!/bin/sh\n";
    ASSERT_EQ(::chmod(bin_.c_str(), 0755), 0);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string dir_, bin_;
};

TEST_F(ExecWrapperFiles, ATrustedExecutableIsUsable) {
  ExecWrapper w = CheckExecWrapper(bin_);
  EXPECT_TRUE(w.usable()) << w.reason;
  EXPECT_EQ(w.host_path, bin_);
  docker::BindMount m = WrapperMount(w);
  EXPECT_EQ(m.source, bin_);
  EXPECT_EQ(m.target, kExecWrapperPath);
  EXPECT_TRUE(m.read_only);
}

TEST_F(ExecWrapperFiles, ASymlinkIsRefused) {
  const std::string link = dir_ + "/link";
  fs::create_symlink(bin_, link);
  ExecWrapper w = CheckExecWrapper(link);
  EXPECT_FALSE(w.usable());
  EXPECT_NE(w.reason.find("symbolic link"), std::string::npos) << w.reason;
}

TEST_F(ExecWrapperFiles, WritableByOthersOrOwnedByAnotherUserIsRefused) {
  ASSERT_EQ(::chmod(bin_.c_str(), 0775), 0);
  EXPECT_FALSE(CheckExecWrapper(bin_).usable()) << "group-writable";
  ASSERT_EQ(::chmod(bin_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  EXPECT_FALSE(CheckExecWrapper(bin_).usable()) << "in a world-writable directory";
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(bin_.c_str(), 65534, 65534), 0);
    EXPECT_FALSE(CheckExecWrapper(bin_).usable()) << "owned by nobody";
  }
}

TEST_F(ExecWrapperFiles, MissingNotExecutableOrNotAFileIsRefused) {
  EXPECT_FALSE(CheckExecWrapper(dir_ + "/none").usable());
  ASSERT_EQ(::chmod(bin_.c_str(), 0644), 0);
  EXPECT_FALSE(CheckExecWrapper(bin_).usable());
  EXPECT_FALSE(CheckExecWrapper(dir_).usable()) << "a directory";
  EXPECT_FALSE(CheckExecWrapper("relative/sandrun-exec").usable());
}

TEST(ExecWrapper, ARemoteEngineGetsNone) {
  ExecWrapper w = FindExecWrapper(/*engine_is_local=*/false);
  EXPECT_FALSE(w.usable());
  EXPECT_NE(w.reason.find("not local"), std::string::npos) << w.reason;
}

TEST(ExecWrapper, WrapsTheCommandOnlyWhenTheContainerHasIt) {
  std::vector<std::string> cmd = {"/bin/sh", "-lc", "--", "echo hi"};
  EXPECT_EQ(WrapCommand(false, cmd), cmd);
  std::vector<std::string> wrapped = {kExecWrapperPath, "/bin/sh", "-lc", "--", "echo hi"};
  EXPECT_EQ(WrapCommand(true, cmd), wrapped);
  EXPECT_EQ(ExecRecordPath("abc123"), "/dev/shm/.sandrun-exec-abc123");
}

TEST(ExecWrapper, TheRecordCountsOnlyWhereItAgreesWithTheEnginesExitCode) {
  EXPECT_EQ(SignalFromRecord("P 7\nS 11\n", 139), 11) << "the child died from SIGSEGV";
  EXPECT_EQ(SignalFromRecord("P 7\n", 137), 9) << "the wrapper itself was killed";
  EXPECT_EQ(SignalFromRecord("", 139), 0) << "no record: `exit 139`";
  EXPECT_EQ(SignalFromRecord("P 7\nS 9\n", 139), 0) << "a record the exit code contradicts";
  EXPECT_EQ(SignalFromRecord("P 7\nS 11\n", 11), 0) << "not a 128+N code";
  EXPECT_EQ(SignalFromRecord("P 7\nS 11\n", 255), 0);
  for (const char* junk : {"S 11\n", "P x\nS 11\n", "P 7 S 11", "P -7\nS 11\n", "P 7\nS 11x\n",
                           "P 99999999999999\nS 11\n"}) {
    EXPECT_EQ(SignalFromRecord(junk, 139), 0) << junk;
  }
}

TEST(ExecWrapper, TheAdoptionKeyCarriesWhetherTheExecIsWrapped) {
  ExecTree tree;
  tree.container = "c1";
  tree.exec_id = "e1";
  tree.token = "0123abcd";
  tree.user = "65534:65534";
  tree.wrapped = true;
  auto parsed = ParseExecAdoptionKey(ExecAdoptionKey(tree));
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_TRUE(parsed->wrapped);
  EXPECT_EQ(parsed->token, "0123abcd");
  // An older server's key: read, not wrapped.
  auto v1 = ParseExecAdoptionKey("sandrun-exec-v1|c1|e1|0123abcd|65534:65534|5");
  ASSERT_TRUE(v1) << v1.error().ToString();
  EXPECT_FALSE(v1->wrapped);
  for (const char* bad : {"sandrun-exec-v2|c1|e1|0123abcd|65534:65534|5",
                          "sandrun-exec-v2|c1|e1|0123abcd|65534:65534|5|2",
                          "sandrun-exec-v1|c1|e1|0123abcd|65534:65534|5|1"}) {
    EXPECT_FALSE(ParseExecAdoptionKey(bad)) << bad;
  }
}

TEST(ExecWrapper, ContainersWithoutTheWrapperHaveAnotherConfigHash) {
  SandboxSpec spec;
  spec.image = "sandrun-sandbox:minimal";
  spec.instance_id = "0123456789abcdef";
  spec.scope_key = "agent:main";
  EXPECT_NE(ConfigHash(spec, true), ConfigHash(spec, false));
  EXPECT_EQ(ConfigHash(spec, false), ConfigHash(spec));
}

}  // namespace
}  // namespace sandrun::exec

// ResolveExecutable with the production probes: what a PATH word resolves to follows the file
// system as it is at each evaluation, never a real path remembered from an earlier one.
#include "runner/policy/command_resolution.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace sandrun::policy {
namespace {

namespace fs = std::filesystem;

class CommandResolution : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sandrun-resolve-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/system");
    fs::create_directories(root_ + "/planted");
    MakeExecutable(root_ + "/system/tool");
    MakeExecutable(root_ + "/planted/tool");
  }
  void TearDown() override { fs::remove_all(root_); }
  static void MakeExecutable(const std::string& path) {
    std::ofstream(path) << "#!/bin/sh\n";
    ::chmod(path.c_str(), 0755);
  }
  ExecutableResolution Resolve(const std::string& word, const std::string& path) {
    PathScan scan;  // one evaluation, as the allowlist evaluator makes it
    ResolveContext ctx;
    ctx.path = path;
    ctx.cwd = root_;
    ctx.scan = &scan;
    return ResolveExecutable(word, ctx);
  }
  std::string root_;
};

TEST_F(CommandResolution, ARelinkedPathDirectoryIsResolvedAfreshAtTheNextEvaluation) {
  // bin -> system: `tool` is system/tool.
  const std::string bin = root_ + "/bin";
  fs::create_directory_symlink(root_ + "/system", bin);
  ExecutableResolution first = Resolve("tool", bin);
  ASSERT_TRUE(first.resolved());
  EXPECT_EQ(first.real_path, root_ + "/system/tool");
  // A command between two calls points bin elsewhere (what an agent on the gateway can do to
  // a PATH directory it owns): the next evaluation must see the planted file, or an allowlist
  // entry for system/tool would let planted/tool run.
  fs::remove(bin);
  fs::create_directory_symlink(root_ + "/planted", bin);
  ExecutableResolution second = Resolve("tool", bin);
  ASSERT_TRUE(second.resolved());
  EXPECT_EQ(second.real_path, root_ + "/planted/tool");
  // And a real directory in its place.
  fs::remove(bin);
  fs::create_directory(bin);
  MakeExecutable(bin + "/tool");
  EXPECT_EQ(Resolve("tool", bin).real_path, bin + "/tool");
}

TEST_F(CommandResolution, AMissingNameIsNotFound) {
  EXPECT_FALSE(Resolve("no-such-tool", root_ + "/system").resolved());
  EXPECT_FALSE(Resolve("tool", root_ + "/does-not-exist").resolved());
}

}  // namespace
}  // namespace sandrun::policy

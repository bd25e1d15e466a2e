#include "sandbox/os/data_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace sandrun {
namespace {

namespace fs = std::filesystem;

class DataDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sandrun-datadir-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    root_ = templ;
    fs::create_directories(root_ + "/prefix/bin");
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

TEST_F(DataDirTest, VariableComesFirst) {
  fs::create_directories(root_ + "/prefix/share/sandrun/profiles");
  DataDir d =
      FindDataDirFrom(DataKind::kProfiles, "/etc/custom", root_ + "/prefix/bin/sandrun", "/src");
  EXPECT_EQ(d.path, "/etc/custom");
  EXPECT_EQ(d.source, DataDir::Source::kEnvironment);
  EXPECT_EQ(DescribeSource(d), "from $SANDRUN_PROFILES_DIR");
}

TEST_F(DataDirTest, EmptyVariableIsUnset) {
  DataDir d = FindDataDirFrom(DataKind::kImages, "", root_ + "/prefix/bin/sandrun", "/src");
  EXPECT_EQ(d.path, "/src/images");
  EXPECT_EQ(d.source, DataDir::Source::kSourceTree);
  EXPECT_EQ(DescribeSource(d), "the source tree /src");
}

TEST_F(DataDirTest, InstalledTreeIsFoundFromTheExecutable) {
  fs::create_directories(root_ + "/prefix/share/sandrun/images");
  DataDir d = FindDataDirFrom(DataKind::kImages, nullptr, root_ + "/prefix/bin/sandrun", "/src");
  EXPECT_EQ(d.path, root_ + "/prefix/share/sandrun/images");
  EXPECT_EQ(d.source, DataDir::Source::kInstalled);
  EXPECT_EQ(DescribeSource(d), "installed next to " + root_ + "/prefix/bin/sandrun");
}

// An installed tree without one of its directories names that directory (the caller fails on
// it) instead of falling back to the source tree.
TEST_F(DataDirTest, InstalledTreeMissingAKindDoesNotFallBack) {
  fs::create_directories(root_ + "/prefix/share/sandrun/images");
  DataDir d = FindDataDirFrom(DataKind::kProfiles, nullptr, root_ + "/prefix/bin/sandrun", "/src");
  EXPECT_EQ(d.path, root_ + "/prefix/share/sandrun/profiles");
  EXPECT_EQ(d.source, DataDir::Source::kInstalled);
}

TEST_F(DataDirTest, BuildTreeOrUnknownExecutableUsesTheSourceTree) {
  // No share/sandrun next to the binary (a build dir, a binary copied by hand).
  EXPECT_EQ(
      FindDataDirFrom(DataKind::kProfiles, nullptr, root_ + "/prefix/bin/sandrun", "/src").path,
      "/src/profiles");
  EXPECT_EQ(FindDataDirFrom(DataKind::kProfiles, nullptr, "", "/src").path, "/src/profiles");
  EXPECT_EQ(FindDataDirFrom(DataKind::kProfiles, nullptr, "relative/bin/sandrun", "/src").path,
            "/src/profiles");
  // A file named share/sandrun is not an installed tree.
  fs::create_directories(root_ + "/prefix/share");
  { std::ofstream(root_ + "/prefix/share/sandrun") << "x"; }
  EXPECT_EQ(
      FindDataDirFrom(DataKind::kProfiles, nullptr, root_ + "/prefix/bin/sandrun", "/src").source,
      DataDir::Source::kSourceTree);
}

TEST(DataDirSelfTest, ThisProcessIsAt) {
  const std::string exe = ExecutablePath();
  ASSERT_FALSE(exe.empty());
  EXPECT_EQ(exe.front(), '/');
  EXPECT_TRUE(fs::equivalent(exe, "/proc/self/exe"));
}

}  // namespace
}  // namespace sandrun

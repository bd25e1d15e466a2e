#include "runner/config/state_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

namespace sandrun::config {
namespace {

class StateDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sandrun-state-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    root_ = templ;
    const char* old = std::getenv("SANDRUN_HOME");
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
  }
  void TearDown() override {
    std::filesystem::remove_all(root_);
    if (had_old_) {
      setenv("SANDRUN_HOME", old_.c_str(), 1);
    } else {
      unsetenv("SANDRUN_HOME");
    }
  }
  std::string root_, old_;
  bool had_old_ = false;
};

TEST_F(StateDirTest, SandrunHomeWins) {
  setenv("SANDRUN_HOME", (root_ + "/state").c_str(), 1);
  auto path = StateDirPath();
  ASSERT_TRUE(path);
  EXPECT_EQ(*path, root_ + "/state");
}

TEST_F(StateDirTest, DefaultsToHomeDotSandrun) {
  unsetenv("SANDRUN_HOME");
  std::string old_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  setenv("HOME", root_.c_str(), 1);
  auto path = StateDirPath();
  setenv("HOME", old_home.c_str(), 1);
  ASSERT_TRUE(path);
  EXPECT_EQ(*path, root_ + "/.sandrun");
}

TEST_F(StateDirTest, RelativeSandrunHomeIsRefused) {
  setenv("SANDRUN_HOME", "relative/dir", 1);
  auto path = StateDirPath();
  ASSERT_FALSE(path);
  EXPECT_NE(path.error().message.find("absolute"), std::string::npos);
}

TEST_F(StateDirTest, CreatesPrivateDirectoryWithParents) {
  std::string dir = root_ + "/a/b/state";
  ASSERT_TRUE(EnsureStateDir(dir));
  struct stat st {};
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(EnsureStateDir(dir)) << "idempotent";
}

TEST_F(StateDirTest, RefusesGroupOrWorldAccessibleDirectory) {
  std::string dir = root_ + "/open";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  auto ok = EnsureStateDir(dir);
  ASSERT_FALSE(ok);
  EXPECT_NE(ok.error().message.find("chmod 700"), std::string::npos) << ok.error().message;
}

TEST_F(StateDirTest, RefusesAFileInThePlaceOfTheDirectory) {
  std::string file = root_ + "/file";
  FILE* f = fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  EXPECT_FALSE(EnsureStateDir(file));
}

}  // namespace
}  // namespace sandrun::config

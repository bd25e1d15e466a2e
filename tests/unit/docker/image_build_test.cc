#include "sandbox/docker/image_build.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sandrun::docker {
namespace {

class RecipeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sandrun-recipes-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
    Write("tiny/rootfs.sh", "#!/bin/sh\nexit 0\n", 0755);
    Write("tiny/changes", "CMD [\"sleep\",\"infinity\"]\n");
    Write("common/profile", "PATH=/bin\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& content, mode_t mode = 0644) {
    std::filesystem::path p = std::filesystem::path(dir_) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
    chmod(p.c_str(), mode);
  }
  std::string dir_;
};

TEST_F(RecipeTest, HashIsStableAndFollowsEveryRecipeFile) {
  auto h1 = RecipeHash(dir_, "tiny");
  ASSERT_TRUE(h1) << h1.error().ToString();
  EXPECT_EQ(h1->size(), 64u);
  EXPECT_EQ(*RecipeHash(dir_, "tiny"), *h1);
  Write("tiny/changes", "CMD [\"sh\"]\n");
  auto h2 = RecipeHash(dir_, "tiny");
  EXPECT_NE(*h2, *h1);
  Write("common/profile", "PATH=/usr/bin\n");
  EXPECT_NE(*RecipeHash(dir_, "tiny"), *h2) << "the shared profile is part of every recipe";
}

TEST_F(RecipeTest, RejectsBadNamesAndMissingRecipes) {
  for (const char* bad : {"", "../tiny", "Tiny", "a/b", "common", "tiny name"}) {
    auto st = ValidateRecipe(dir_, bad);
    ASSERT_FALSE(st) << bad;
    EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument) << bad;
  }
  auto missing = ValidateRecipe(dir_, "nonesuch");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  Write("noexec/rootfs.sh", "#!/bin/sh\n", 0644);
  EXPECT_FALSE(ValidateRecipe(dir_, "noexec"));
  EXPECT_TRUE(ValidateRecipe(dir_, "tiny"));
}

TEST_F(RecipeTest, ImagesMapToTheRecipeThatBuildsThem) {
  Write("latest/rootfs.sh", "#!/bin/sh\n", 0755);
  EXPECT_EQ(ListRecipes(dir_), (std::vector<std::string>{"latest", "tiny"})) << "not common/";
  EXPECT_EQ(RecipeForImage(dir_, "sandrun-sandbox:tiny"), "tiny");
  EXPECT_EQ(RecipeForImage(dir_, "docker.io/library/sandrun-sandbox:tiny"), "tiny");
  EXPECT_EQ(RecipeForImage(dir_, "sandrun-sandbox"), "latest") << "no tag is :latest";
  for (const char* other : {"sandrun-sandbox:nonesuch", "sandrun-sandbox:common", "busybox:tiny",
                            "sandrun-sandbox2:tiny", "example.com/sandrun-sandbox:tiny",
                            "sandrun-sandbox@sha256:0123", "sandrun-sandbox:../tiny", "tiny"}) {
    EXPECT_EQ(RecipeForImage(dir_, other), "") << other;
  }
}

TEST_F(RecipeTest, MissingImageHintNamesABuildableRecipe) {
  EXPECT_EQ(MissingImageHint(dir_, "sandrun-sandbox:tiny"), "build it: sandrun image build tiny");
  Write("alpha/rootfs.sh", "#!/bin/sh\n", 0755);
  const std::string hint = MissingImageHint(dir_, "myorg/agent:latest");
  EXPECT_EQ(hint, "no recipe builds myorg/agent:latest (a recipe NAME in " + dir_ +
                      " builds sandrun-sandbox:NAME); set sandbox.docker.image to one that is "
                      "built (sandrun image build alpha|tiny) or load myorg/agent:latest into the "
                      "engine yourself");
  EXPECT_EQ(hint.find("image build latest"), std::string::npos);
  const std::string none = MissingImageHint(dir_ + "/nonesuch", "sandrun-sandbox:tiny");
  EXPECT_NE(none.find("there are no recipes there: write one (images/README.md)"),
            std::string::npos)
      << none;
}

// A user recipe directory next to the built-in recipes dir (dir_ holds tiny/ and common/).
class UserRecipeTest : public RecipeTest {
 protected:
  void SetUp() override {
    RecipeTest::SetUp();
    Write("mine/tools/rootfs.sh", "#!/bin/sh\nexit 0\n", 0755);
    Write("mine/tools/changes", "LABEL team=tools\n");
    Write("mine/tools/files/motd", "hello\n");
    ::chmod((dir_ + "/mine").c_str(), 0755);
    ::chmod((dir_ + "/mine/tools").c_str(), 0755);
  }
  std::string Tools() const { return dir_ + "/mine/tools"; }
};

TEST_F(UserRecipeTest, ADirectoryIsNamedAfterItselfOrItsTag) {
  auto r = ResolveRecipe(Tools(), "", dir_);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->name, "tools");
  EXPECT_EQ(r->dir, Tools());
  EXPECT_EQ(r->common_dir, dir_ + "/common");
  EXPECT_TRUE(r->user);
  auto tagged = ResolveRecipe(Tools() + "/", "team-tools_1.0", dir_);
  ASSERT_TRUE(tagged) << tagged.error().ToString();
  EXPECT_EQ(tagged->name, "team-tools_1.0");
  EXPECT_EQ(tagged->dir, Tools()) << "the resolved path";
}

TEST_F(UserRecipeTest, ABareNameIsABuiltinRecipeFirstThenADirectory) {
  auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir_ + "/mine");
  auto dir = ResolveRecipe("tools", "", dir_);
  auto builtin = ResolveRecipe("tiny", "", dir_);
  std::filesystem::create_directories(dir_ + "/mine/tiny");
  auto shadowed = ResolveRecipe("tiny", "", dir_);
  auto missing = ResolveRecipe("nonesuch", "", dir_);
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(dir) << dir.error().ToString();
  EXPECT_TRUE(dir->user);
  EXPECT_EQ(dir->dir, Tools());
  ASSERT_TRUE(builtin) << builtin.error().ToString();
  EXPECT_FALSE(builtin->user);
  EXPECT_EQ(builtin->dir, dir_ + "/tiny");
  ASSERT_TRUE(shadowed);
  EXPECT_FALSE(shadowed->user) << "a built-in name wins over a directory of the same name";
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(missing.error().ToString(), ::testing::HasSubstr("nor a recipe directory"));
}

TEST_F(UserRecipeTest, HashCoversTheDirectoryAndTheCommonFiles) {
  auto r = ResolveRecipe(Tools(), "", dir_);
  ASSERT_TRUE(r);
  auto h1 = RecipeHash(*r);
  ASSERT_TRUE(h1) << h1.error().ToString();
  EXPECT_EQ(*RecipeHash(*r), *h1);
  Write("mine/tools/files/motd", "bye\n");
  auto h2 = RecipeHash(*r);
  EXPECT_NE(*h2, *h1) << "a file in a subdirectory";
  Write("common/profile", "PATH=/sbin\n");
  EXPECT_NE(*RecipeHash(*r), *h2) << "the built-in common/ it is offered";
}

TEST_F(UserRecipeTest, RefusesBadTagsAndBuiltinNames) {
  for (const char* bad : {"Tools", "-x", ".x", "_x", "a/b", "a:b", "a b", "tiny", "common"}) {
    auto r = ResolveRecipe(Tools(), bad, dir_);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(ValidateUserTag(std::string(129, 'a'), dir_));
  EXPECT_TRUE(ValidateUserTag(std::string(128, 'a'), dir_));
  auto tiny = ResolveRecipe("tiny", "other", dir_);
  ASSERT_FALSE(tiny) << "a built-in recipe is tagged with its own name";
  EXPECT_THAT(tiny.error().ToString(), ::testing::HasSubstr("./tiny"));
  Write("mine/Bad Name/rootfs.sh", "#!/bin/sh\n", 0755);
  ::chmod((dir_ + "/mine/Bad Name").c_str(), 0755);
  auto named = ResolveRecipe(dir_ + "/mine/Bad Name", "", dir_);
  ASSERT_FALSE(named) << "the directory's name is no valid tag";
  EXPECT_THAT(named.error().ToString(), ::testing::HasSubstr("unless a tag is given"));
  EXPECT_TRUE(ResolveRecipe(dir_ + "/mine/Bad Name", "bad-name", dir_));
}

TEST_F(UserRecipeTest, RefusesDirectoriesThatAreNoRecipeOrUnsafe) {
  auto none = ResolveRecipe(dir_ + "/mine/nonesuch", "", dir_);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kNotFound);
  auto file = ResolveRecipe(Tools() + "/changes", "x", dir_);
  ASSERT_FALSE(file);
  EXPECT_THAT(file.error().ToString(), ::testing::HasSubstr("not a directory"));

  std::filesystem::remove(Tools() + "/rootfs.sh");
  auto no_script = ResolveRecipe(Tools(), "", dir_);
  ASSERT_FALSE(no_script);
  EXPECT_EQ(no_script.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(no_script.error().ToString(), ::testing::HasSubstr("rootfs.sh"));

  Write("mine/tools/rootfs.sh", "#!/bin/sh\nexit 0\n", 0644);
  auto noexec = ResolveRecipe(Tools(), "", dir_);
  ASSERT_FALSE(noexec);
  EXPECT_THAT(noexec.error().ToString(), ::testing::HasSubstr("not executable"));
  ::chmod((Tools() + "/rootfs.sh").c_str(), 0755);
  ASSERT_TRUE(ResolveRecipe(Tools(), "", dir_));

  ::chmod(Tools().c_str(), 0777);
  auto wide_dir = ResolveRecipe(Tools(), "", dir_);
  ASSERT_FALSE(wide_dir) << "a world-writable recipe directory";
  EXPECT_THAT(wide_dir.error().ToString(), ::testing::HasSubstr("writable by group or others"));
  ::chmod(Tools().c_str(), 0755);

  ::chmod((Tools() + "/files/motd").c_str(), 0666);
  auto wide_file = ResolveRecipe(Tools(), "", dir_);
  ASSERT_FALSE(wide_file) << "any file of it, not only rootfs.sh";
  EXPECT_THAT(wide_file.error().ToString(), ::testing::HasSubstr("files/motd"));
  ::chmod((Tools() + "/files/motd").c_str(), 0644);

  ::chmod((Tools() + "/files").c_str(), 0777);
  EXPECT_FALSE(ResolveRecipe(Tools(), "", dir_)) << "a subdirectory";
  ::chmod((Tools() + "/files").c_str(), 0755);

  // rootfs.sh through a symlink: the target and its directory must be as safe.
  Write("elsewhere/real.sh", "#!/bin/sh\nexit 0\n", 0777);
  ::chmod((dir_ + "/elsewhere").c_str(), 0755);
  std::filesystem::remove(Tools() + "/rootfs.sh");
  std::filesystem::create_symlink(dir_ + "/elsewhere/real.sh", Tools() + "/rootfs.sh");
  EXPECT_FALSE(ResolveRecipe(Tools(), "", dir_)) << "a world-writable target";
  ::chmod((dir_ + "/elsewhere/real.sh").c_str(), 0755);
  EXPECT_TRUE(ResolveRecipe(Tools(), "", dir_));
}

TEST(ShippedRecipesTest, BothImagesHaveRecipes) {
  for (const char* name : {"minimal", "bookworm"}) {
    EXPECT_TRUE(ValidateRecipe(std::string(SANDRUN_SOURCE_DIR) + "/images", name)) << name;
  }
}

}  // namespace
}  // namespace sandrun::docker

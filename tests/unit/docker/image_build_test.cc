#include "sandbox/docker/image_build.h"

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

TEST(ShippedRecipesTest, BothImagesHaveRecipes) {
  for (const char* name : {"minimal", "bookworm"}) {
    EXPECT_TRUE(ValidateRecipe(std::string(SANDRUN_SOURCE_DIR) + "/images", name)) << name;
  }
}

}  // namespace
}  // namespace sandrun::docker

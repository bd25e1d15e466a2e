// `sandrun image build DIR` through the binary and the real dockerd: a user recipe directory
// (busybox-static, written by the test) becomes sandrun-sandbox:<tag> with the recipe-hash
// label; a second build is a no-op, a changed file rebuilds (and drops the old image); invalid or
// unsafe directories and bad tags are refused (exit 2) and change nothing. Every image the test
// makes carries a per-process tag and is removed at the end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/docker_env.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace sandrun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Copies the host's static busybox and the shared profile ($SANDRUN_COMMON_DIR, which the
// runner provides) into a one-shell rootfs.
constexpr char kRootfsScript[] = R"(#!/bin/sh
set -eu
out=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/etc"
cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "$SANDRUN_COMMON_DIR/profile" "$root/etc/profile"
cp "$(dirname "$0")/files/motd" "$root/etc/motd"
tar --numeric-owner -C "$root" -cf "$out" .
)";

class UserImageBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/bin/busybox", X_OK) != 0) GTEST_SKIP() << "needs busybox-static";
    client_ = ConnectToDocker(&why_);
    if (!client_) {
      if (InCi()) FAIL() << "Docker engine required in CI: " << why_;
      GTEST_SKIP() << "no Docker engine (" << why_ << ")";
    }
    recipe_ = tmp_.path() + "/team-tools";
    Write("rootfs.sh", kRootfsScript, 0755);
    Write("changes", "CMD [\"/bin/sh\"]\nLABEL team=tools\n", 0644);
    Write("files/motd", "v1\n", 0644);
    ::chmod(recipe_.c_str(), 0755);
  }
  void TearDown() override {
    if (!client_) return;
    for (const std::string& tag : {tag_, other_tag_}) {
      (void)client_->RemoveImage(Ref(tag), /*force=*/true);
      EXPECT_EQ(client_->InspectImage(Ref(tag)).error().code, ErrorCode::kNotFound) << tag;
    }
  }

  void Write(const std::string& rel, const std::string& content, mode_t mode) {
    std::filesystem::path p = std::filesystem::path(recipe_) / rel;
    std::filesystem::create_directories(p.parent_path());
    ::chmod(p.parent_path().c_str(), 0755);
    std::ofstream(p) << content;
    ::chmod(p.c_str(), mode);
  }
  static std::string Ref(const std::string& tag) { return "sandrun-sandbox:" + tag; }
  ProcessResult Build(std::vector<std::string> args) {
    args.insert(args.begin(), {"image", "build"});
    return RunSandrun(args);
  }
  // The refusal changed nothing: the tag still names no image.
  void ExpectRefused(const ProcessResult& r, const std::string& why) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(why));
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(client_->InspectImage(Ref(tag_)).error().code, ErrorCode::kNotFound);
  }

  std::string why_;
  std::unique_ptr<docker::Client> client_;
  TempDir tmp_{"image-recipe"};
  std::string recipe_;
  const std::string tag_ = "e2e-recipe-" + std::to_string(::getpid());
  const std::string other_tag_ = "e2e-recipe-" + std::to_string(::getpid()) + "-named";
};

TEST_F(UserImageBuild, BuildsOnceAndRebuildsWhenTheRecipeChanges) {
  auto first = Build({recipe_, "--tag", tag_});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.out, ::testing::StartsWith(Ref(tag_) + " sha256:"));
  auto image = client_->InspectImage(Ref(tag_));
  ASSERT_TRUE(image) << image.error().ToString();
  EXPECT_EQ(image->labels["sandrun.recipe"], tag_);
  EXPECT_EQ(image->labels["sandrun.recipeDir"], recipe_);
  EXPECT_EQ(image->labels["team"], "tools") << "the recipe's changes were applied";
  const std::string hash = image->labels["sandrun.recipeHash"];
  EXPECT_EQ(hash.size(), 64u);

  auto again = Build({recipe_, "--tag", tag_});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err, HasSubstr("is up to date"));
  EXPECT_THAT(again.err, Not(HasSubstr("building the root filesystem")));
  EXPECT_EQ(again.out, first.out) << "the same image";

  Write("files/motd", "v2\n", 0644);
  auto changed = Build({recipe_, "--tag", tag_});
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  EXPECT_THAT(changed.err, HasSubstr("building the root filesystem"));
  auto rebuilt = client_->InspectImage(Ref(tag_));
  ASSERT_TRUE(rebuilt);
  EXPECT_NE(rebuilt->id, image->id);
  EXPECT_NE(rebuilt->labels["sandrun.recipeHash"], hash);
  EXPECT_EQ(client_->InspectImage(image->id).error().code, ErrorCode::kNotFound)
      << "the replaced image was removed";
}

TEST_F(UserImageBuild, WithoutATagTheImageIsNamedAfterTheDirectory) {
  std::filesystem::path named = tmp_.path() + "/" + other_tag_;
  std::filesystem::rename(recipe_, named);
  auto r = Build({named.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::StartsWith(Ref(other_tag_) + " "));
  EXPECT_TRUE(client_->InspectImage(Ref(other_tag_)));
}

TEST_F(UserImageBuild, RefusesWhatIsNoSafeRecipeAndChangesNothing) {
  std::filesystem::rename(recipe_ + "/rootfs.sh", recipe_ + "/build.sh");
  ExpectRefused(Build({recipe_, "--tag", tag_}), "rootfs.sh");
  std::filesystem::rename(recipe_ + "/build.sh", recipe_ + "/rootfs.sh");

  ::chmod((recipe_ + "/rootfs.sh").c_str(), 0644);
  ExpectRefused(Build({recipe_, "--tag", tag_}), "not executable");
  ::chmod((recipe_ + "/rootfs.sh").c_str(), 0755);

  ::chmod(recipe_.c_str(), 0777);
  ExpectRefused(Build({recipe_, "--tag", tag_}), "writable by group or others");
  ::chmod(recipe_.c_str(), 0755);

  ExpectRefused(Build({recipe_, "--tag", "Bad:Tag"}), "invalid image tag");
  ExpectRefused(Build({tmp_.path() + "/nonesuch", "--tag", tag_}), "no recipe directory");
}

TEST_F(UserImageBuild, RefusesTheNameOfABuiltinRecipe) {
  auto before = client_->InspectImage(kMinimalImage);
  auto r = Build({recipe_, "--tag", "minimal"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("built-in recipe"));
  auto after = client_->InspectImage(kMinimalImage);
  ASSERT_EQ(bool(before), bool(after));
  if (before) {
    EXPECT_EQ(after->id, before->id) << "sandrun-sandbox:minimal untouched";
  }

  auto builtin_tag = Build({"minimal", "--tag", tag_});
  ExpectRefused(builtin_tag, "a tag applies to a recipe directory");
}

}  // namespace
}  // namespace sandrun::testing

// Building the sandbox images from the recipes in images/ without a registry: run the recipe's
// rootfs.sh to get a root filesystem tar, then import it through the Engine API
// (POST /images/create?fromSrc=-) with the recipe's `changes` and a content-hash label, so an
// image is rebuilt only when its recipe changes.
//
// Pattern of use:
//   ImageBuildOptions opts; opts.images_dir = "/src/images";
//   SANDRUN_ASSIGN_OR_RETURN(ImageBuildOutcome out, BuildImage(client, "minimal", opts));
//   SANDRUN_ASSIGN_OR_RETURN(Recipe r, ResolveRecipe("./myimg", "", opts.images_dir));
//   SANDRUN_ASSIGN_OR_RETURN(ImageBuildOutcome mine, BuildImage(client, r, opts));
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/docker/client.h"
#include "sandbox/docker/image_recipe.h"

namespace sandrun::docker {

inline constexpr char kImageRepository[] = "sandrun-sandbox";
inline constexpr char kRecipeHashLabel[] = "sandrun.recipeHash";

struct ImageBuildOptions {
  std::string images_dir;  // holds <name>/rootfs.sh, <name>/changes, common/ (name overloads only)
  bool force = false;      // rebuild even when the recipe hash matches
  std::function<void(const std::string&)> log;  // progress lines (optional)
};

struct ImageBuildOutcome {
  std::string reference;  // sandrun-sandbox:<name>
  std::string image_id;
  std::string recipe_hash;
  bool rebuilt = false;  // false: the image was up to date
};

// Recipe names are [a-z0-9-]+ naming a directory with an executable rootfs.sh.
Status ValidateRecipe(const std::string& images_dir, const std::string& name);

// sha256 over the relative path and content of every file of the recipe and of common/.
Result<std::string> RecipeHash(const std::string& images_dir, const std::string& name);

// Builds sandrun-sandbox:<recipe.name> unless an image of that name carries the recipe's hash
// (or options.force): runs rootfs.sh OUT_TAR (with SANDRUN_COMMON_DIR=<recipe.common_dir> in its
// environment when there is one) and imports the tar with the recipe's `changes` and the labels
// sandrun.recipeHash, sandrun.recipe (the name) and, for a user recipe, sandrun.recipeDir.
Result<ImageBuildOutcome> BuildImage(Client& client, const Recipe& recipe,
                                     const ImageBuildOptions& options);
// The built-in recipe `name` of options.images_dir.
Result<ImageBuildOutcome> BuildImage(Client& client, const std::string& name,
                                     const ImageBuildOptions& options);

// The directory holding the recipes: $SANDRUN_IMAGES_DIR, else an installed tree's
// share/sandrun/images, else the source tree's images/ (FindDataDir in sandbox/os/data_dir.h).
std::string DefaultImagesDir();

// The recipes of `images_dir` (names that pass ValidateRecipe), sorted; none when it cannot be
// read.
std::vector<std::string> ListRecipes(const std::string& images_dir);

// The recipe of `images_dir` that builds `image`: BuildImage tags kImageRepository:<recipe>, so
// "sandrun-sandbox:minimal" (also "docker.io/library/sandrun-sandbox:minimal"; no tag means
// "latest") -> "minimal" when that recipe exists there; "" for any other image (another
// repository, a digest, a tag no recipe has).
std::string RecipeForImage(const std::string& images_dir, std::string_view image);

// How to get `image` into the engine, for messages about a missing image:
//   a recipe builds it:  "build it: sandrun image build minimal"
//   none does:           "no recipe builds busybox:latest (a recipe NAME in <dir> builds
//                         sandrun-sandbox:NAME); set sandbox.docker.image to one that is built
//                         (sandrun image build minimal|bookworm) or load busybox:latest into the
//                         engine yourself"
//   (without recipes:    "... there are no recipes in <dir>; write one (images/README.md) ...")
std::string MissingImageHint(const std::string& images_dir, std::string_view image);

}  // namespace sandrun::docker

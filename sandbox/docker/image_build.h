// Building the sandbox images from the recipes in images/ without a registry: run the recipe's
// rootfs.sh to get a root filesystem tar, then import it through the Engine API
// (POST /images/create?fromSrc=-) with the recipe's `changes` and a content-hash label, so an
// image is rebuilt only when its recipe changes.
//
// Pattern of use:
//   ImageBuildOptions opts; opts.images_dir = "/src/images";
//   SANDRUN_ASSIGN_OR_RETURN(ImageBuildOutcome out, BuildImage(client, "minimal", opts));
#pragma once

#include <functional>
#include <string>

#include "sandbox/base/result.h"
#include "sandbox/docker/client.h"

namespace sandrun::docker {

inline constexpr char kImageRepository[] = "sandrun-sandbox";
inline constexpr char kRecipeHashLabel[] = "sandrun.recipeHash";

struct ImageBuildOptions {
  std::string images_dir;                       // holds <name>/rootfs.sh, <name>/changes, common/
  bool force = false;                           // rebuild even when the recipe hash matches
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

Result<ImageBuildOutcome> BuildImage(Client& client, const std::string& name,
                                     const ImageBuildOptions& options);

// The directory holding the recipes: $SANDRUN_IMAGES_DIR, else an installed tree's
// share/sandrun/images, else the source tree's images/ (FindDataDir in sandbox/os/data_dir.h).
std::string DefaultImagesDir();

}  // namespace sandrun::docker

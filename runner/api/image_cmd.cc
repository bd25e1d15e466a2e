#include "runner/api/image_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "runner/api/cli_context.h"
#include "sandbox/docker/client.h"
#include "sandbox/docker/image_build.h"

namespace sandrun::api {

CLI::App* AddImageCommand(CLI::App& app, ImageFlags& flags) {
  CLI::App* image = app.add_subcommand("image", "Manage the sandbox images");
  image->require_subcommand(1);
  CLI::App* build = image->add_subcommand(
      "build",
      "Build an image from a recipe in images/ or a recipe directory and import it (no registry)");
  build
      ->add_option("RECIPE", flags.recipe,
                   "Built-in recipe name (minimal, bookworm) or a recipe directory (contains '/', "
                   "e.g. ./myimg, or an existing directory): rootfs.sh + changes")
      ->required();
  build->add_option("--tag", flags.tag,
                    "Image tag for a recipe directory: sandrun-sandbox:TAG (default: the "
                    "directory's name); [a-z0-9][a-z0-9._-]*, not a built-in recipe's name");
  build->add_flag("--force", flags.force, "Rebuild even when the image is up to date");
  build->add_option("--images-dir", flags.images_dir,
                    "Directory of the built-in recipes and common/ (default $SANDRUN_IMAGES_DIR "
                    "or the data dir)");
  return build;
}

int RunImageBuildCommand(const ImageFlags& flags) {
  docker::ImageBuildOptions options;
  options.images_dir = flags.images_dir.empty() ? docker::DefaultImagesDir() : flags.images_dir;
  options.force = flags.force;
  options.log = [](const std::string& line) {
    std::fprintf(stderr, "sandrun: %s\n", line.c_str());
  };
  auto recipe = docker::ResolveRecipe(flags.recipe, flags.tag, options.images_dir);
  if (!recipe) {
    PrintError(recipe.error().ToString());
    return kExitRefused;
  }
  auto client = docker::Client::FromEnvironment();
  if (!client) {
    PrintError(client.error().ToString());
    return kExitFailure;
  }
  auto outcome = docker::BuildImage(**client, *recipe, options);
  if (!outcome) {
    PrintError("image build " + flags.recipe + " failed: " + outcome.error().ToString());
    return kExitFailure;
  }
  std::printf("%s %s\n", outcome->reference.c_str(), outcome->image_id.c_str());
  return kExitOk;
}

}  // namespace sandrun::api

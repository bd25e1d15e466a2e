// `sandrun image build NAME|DIR [--tag TAG] [--force] [--images-dir DIR]`: builds a sandbox image
// without a registry, from a built-in recipe (images/<NAME>/ of the data dir) or from a user's
// recipe directory of the same shape (sandbox/docker/image_recipe.h), tagged
// sandrun-sandbox:<NAME>, sandrun-sandbox:<basename of DIR> or sandrun-sandbox:<TAG>. Up to date
// images (their recipe-hash label matches) are not rebuilt unless --force.
// Prints "<reference> <image id>" on stdout; progress goes to stderr.
// Exit codes: 0 built or up to date, 2 refused (usage, an unknown recipe, an invalid or unsafe
// recipe directory, a bad tag), 1 the engine or the build failed.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace sandrun::api {

struct ImageFlags {
  std::string recipe;  // NAME or DIR
  std::string tag;
  std::string images_dir;
  bool force = false;
};

// Adds `image` and its `build` subcommand to `app`, filling `flags`; returns `image build`.
CLI::App* AddImageCommand(CLI::App& app, ImageFlags& flags);
int RunImageBuildCommand(const ImageFlags& flags);

}  // namespace sandrun::api

// Image recipes: a built-in one (images/<name>/ of the data dir) or a user's recipe directory of
// the same shape (an executable rootfs.sh, an optional `changes` file), resolved to one Recipe
// that image_build.h builds. Both see the built-in images/common/ (the shared /etc/profile): the
// recipe's rootfs.sh gets its path as $SANDRUN_COMMON_DIR and the recipe hash covers it.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(Recipe r, ResolveRecipe("./myimg", /*tag=*/"", images_dir));
//   SANDRUN_ASSIGN_OR_RETURN(std::string hash, RecipeHash(r));
#pragma once

#include <string>

#include "sandbox/base/result.h"

namespace sandrun::docker {

struct Recipe {
  std::string name;        // the image tag: sandrun-sandbox:<name>
  std::string dir;         // holds rootfs.sh and changes (absolute for a user recipe)
  std::string common_dir;  // the built-in images/common/, or empty when there is none
  bool user = false;       // a user's recipe directory rather than a built-in recipe
};

// The built-in recipe `name` ([a-z0-9-]+, not "common") of `images_dir`, with an executable
// rootfs.sh. kInvalidArgument for a bad name, kNotFound for a missing recipe.
Result<Recipe> BuiltinRecipe(const std::string& images_dir, const std::string& name);

// A tag for a user recipe: [a-z0-9][a-z0-9._-]*, at most 128 characters, and not the name of a
// built-in recipe of `images_dir` (nor "common"): `sandrun image build bookworm` would silently
// replace it, and doctor would call it outdated. kInvalidArgument otherwise.
Status ValidateUserTag(const std::string& tag, const std::string& images_dir);

// A user recipe directory `dir`, tagged `tag` (empty: the directory's base name). The runner
// runs its rootfs.sh with the runner's own rights (root, to build Debian images), so every file
// of the directory must pass CheckTrustedFile (owned by the runner's uid or root, not writable by
// group or others, nor its directory); rootfs.sh must be executable (symlinks are followed and
// checked the same way). kInvalidArgument (a bad tag, an unsafe or non-executable file) or
// kNotFound (no such directory, no rootfs.sh).
Result<Recipe> UserRecipe(const std::string& dir, const std::string& tag,
                          const std::string& images_dir);

// `sandrun image build ARG`: a directory when ARG contains '/' or is "." or "..", a built-in
// recipe when one is named ARG, else a directory ARG when it exists. `tag` applies to a
// directory only (kInvalidArgument with a built-in recipe).
Result<Recipe> ResolveRecipe(const std::string& arg, const std::string& tag,
                             const std::string& images_dir);

// sha256 over the relative path and content of every file of the recipe and of its common dir.
Result<std::string> RecipeHash(const Recipe& recipe);

}  // namespace sandrun::docker

#include "sandbox/docker/image_recipe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "sandbox/base/sha256.h"
#include "sandbox/os/file.h"
#include "sandbox/os/trusted_file.h"

namespace sandrun::docker {
namespace {

constexpr char kRecipeFormat[] =
    "a recipe directory holds an executable rootfs.sh OUT_TAR and an optional `changes` file "
    "(see images/README.md)";

std::string CommonDir(const std::string& images_dir) {
  std::string common = images_dir + "/common";
  return std::filesystem::is_directory(common) ? common : std::string();
}

bool IsLower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// Every file and directory below `root` (the root itself is the directory of its files): whoever
// could change one of them could change what rootfs.sh does as the runner.
Status CheckTrustedTree(const std::string& root) {
  std::error_code ec;
  std::filesystem::recursive_directory_iterator it(root, ec), end;
  if (ec) return Error(ErrorCode::kNotFound, "cannot list " + root + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return Error(ErrorCode::kIo, "cannot list " + root + ": " + ec.message());
    if (!it->is_regular_file() && !it->is_directory()) continue;
    SANDRUN_RETURN_IF_ERROR(CheckTrustedFile(it->path().string(), "image recipe file"));
  }
  return Ok();
}

Status CheckRootfsScript(const std::string& dir) {
  const std::string script = dir + "/rootfs.sh";
  struct stat st {};
  if (::stat(script.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) {
      return Error(ErrorCode::kNotFound, "no " + script + ": " + std::string(kRecipeFormat));
    }
    return Error::FromErrno(err, "stat " + script);
  }
  if (!S_ISREG(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument, script + " is not a regular file");
  }
  if ((st.st_mode & S_IXUSR) == 0 || ::access(script.c_str(), X_OK) != 0) {
    return Error(ErrorCode::kInvalidArgument,
                 script + " is not executable; fix: chmod u+x " + script);
  }
  return Ok();
}

}  // namespace

Result<Recipe> BuiltinRecipe(const std::string& images_dir, const std::string& name) {
  bool valid_name = !name.empty() && name != "common";
  for (char c : name) {
    if (!IsLower(c) && c != '-') valid_name = false;
  }
  if (!valid_name) {
    return Error(ErrorCode::kInvalidArgument, "invalid image recipe name \"" + name + "\"");
  }
  std::string script = images_dir + "/" + name + "/rootfs.sh";
  if (::access(script.c_str(), X_OK) != 0) {
    return Error(ErrorCode::kNotFound,
                 "no image recipe \"" + name + "\" (" + script + " missing or not executable)");
  }
  return Recipe{name, images_dir + "/" + name, CommonDir(images_dir), false};
}

Status ValidateUserTag(const std::string& tag, const std::string& images_dir) {
  bool valid = !tag.empty() && tag.size() <= 128 && IsLower(tag.front());
  for (char c : tag) {
    if (!IsLower(c) && c != '.' && c != '_' && c != '-') valid = false;
  }
  if (!valid) {
    return Error(ErrorCode::kInvalidArgument,
                 "invalid image tag \"" + tag + "\": use [a-z0-9][a-z0-9._-]* (at most 128)");
  }
  if (tag == "common" || BuiltinRecipe(images_dir, tag)) {
    return Error(ErrorCode::kInvalidArgument,
                 "image tag \"" + tag + "\" is the name of a built-in recipe of " + images_dir +
                     " (rebuilding that recipe would replace it): choose another tag");
  }
  return Ok();
}

Result<Recipe> UserRecipe(const std::string& dir, const std::string& tag,
                          const std::string& images_dir) {
  char resolved[PATH_MAX];
  if (::realpath(dir.c_str(), resolved) == nullptr) {
    int err = errno;
    if (err == ENOENT) return Error(ErrorCode::kNotFound, "no recipe directory " + dir);
    return Error::FromErrno(err, "cannot resolve " + dir);
  }
  Recipe recipe{tag, resolved, CommonDir(images_dir), true};
  if (!std::filesystem::is_directory(recipe.dir)) {
    return Error(ErrorCode::kInvalidArgument,
                 dir + " is not a directory: " + std::string(kRecipeFormat));
  }
  if (recipe.name.empty()) {
    recipe.name = std::filesystem::path(recipe.dir).filename().string();
    if (auto st = ValidateUserTag(recipe.name, images_dir); !st) {
      return std::move(st).error().Wrap("the image is named after the directory " + recipe.dir +
                                        " unless a tag is given");
    }
  } else {
    SANDRUN_RETURN_IF_ERROR(ValidateUserTag(recipe.name, images_dir));
  }
  SANDRUN_RETURN_IF_ERROR(CheckRootfsScript(recipe.dir));
  SANDRUN_RETURN_IF_ERROR(CheckTrustedTree(recipe.dir));
  return recipe;
}

Result<Recipe> ResolveRecipe(const std::string& arg, const std::string& tag,
                             const std::string& images_dir) {
  const bool path_like = arg.find('/') != std::string::npos || arg == "." || arg == "..";
  if (!path_like) {
    auto builtin = BuiltinRecipe(images_dir, arg);
    if (builtin && !tag.empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   "\"" + arg +
                       "\" is a built-in recipe, tagged with its name; a tag applies to "
                       "a recipe directory (write ./" +
                       arg + " for a directory of that name)");
    }
    if (builtin) return builtin;
    if (!std::filesystem::is_directory(arg)) {
      if (builtin.error().code != ErrorCode::kNotFound) return builtin;
      return Error(ErrorCode::kNotFound,
                   builtin.error().message + ", nor a recipe directory \"" + arg + "\" here");
    }
  }
  return UserRecipe(arg, tag, images_dir);
}

Result<std::string> RecipeHash(const Recipe& recipe) {
  Sha256 hash;
  for (const auto& [prefix, root] : {std::pair<std::string, std::string>{recipe.name, recipe.dir},
                                     {"common", recipe.common_dir}}) {
    if (root.empty()) continue;
    SANDRUN_ASSIGN_OR_RETURN(std::vector<std::string> files, ListFilesRecursive(root));
    for (const auto& rel : files) {
      SANDRUN_ASSIGN_OR_RETURN(std::string content, ReadFile(root + "/" + rel));
      hash.Update(prefix + "/" + rel);
      hash.Update(std::string(1, '\0'));
      hash.Update(std::to_string(content.size()));
      hash.Update(std::string(1, '\0'));
      hash.Update(content);
    }
  }
  return hash.HexDigest();
}

}  // namespace sandrun::docker

#include "sandbox/docker/image_build.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "sandbox/base/sha256.h"
#include "sandbox/os/data_dir.h"
#include "sandbox/os/file.h"
#include "sandbox/os/spawn.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::docker {
namespace {

void Log(const ImageBuildOptions& options, const std::string& line) {
  if (options.log) options.log(line);
}

// A temporary directory removed with everything in it when this goes out of scope.
class TempDir {
 public:
  static Result<TempDir> Create(const std::string& parent) {
    std::string templ = parent + "/sandrun-image-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      return Error::FromErrno(errno, "cannot create a temporary directory in " + parent);
    }
    return TempDir(templ);
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

Result<std::vector<std::string>> ReadChanges(const std::string& path) {
  std::vector<std::string> out;
  auto text = ReadFile(path, 1u << 20);
  if (!text) {
    if (text.error().code == ErrorCode::kNotFound) return out;
    return std::move(text).error();
  }
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    out.push_back(line);
  }
  return out;
}

// A Dockerfile LABEL value in double quotes (a directory may hold spaces).
std::string QuoteLabel(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string DefaultImagesDir() { return FindDataDir(DataKind::kImages).path; }

std::vector<std::string> ListRecipes(const std::string& images_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(images_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (ValidateRecipe(images_dir, name)) names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string RecipeForImage(const std::string& images_dir, std::string_view image) {
  for (std::string_view prefix : {"docker.io/library/", "library/"}) {
    if (image.starts_with(prefix)) image.remove_prefix(prefix.size());
  }
  const std::string_view repository = kImageRepository;
  if (!image.starts_with(repository)) return "";
  std::string_view rest = image.substr(repository.size());
  std::string tag;
  if (rest.empty()) {
    tag = "latest";
  } else if (rest.front() == ':') {
    tag = std::string(rest.substr(1));
  } else {
    return "";  // another repository ("sandrun-sandbox2") or a digest
  }
  return ValidateRecipe(images_dir, tag) ? tag : "";
}

std::string MissingImageHint(const std::string& images_dir, std::string_view image) {
  if (std::string recipe = RecipeForImage(images_dir, image); !recipe.empty()) {
    return "build it: sandrun image build " + recipe;
  }
  const std::string ref(image);
  std::string hint = "no recipe builds " + ref + " (a recipe NAME in " + images_dir + " builds " +
                     kImageRepository + ":NAME); ";
  const std::vector<std::string> recipes = ListRecipes(images_dir);
  if (recipes.empty()) {
    return hint +
           "there are no recipes there: write one (images/README.md) and build it with "
           "sandrun image build NAME, or load " +
           ref + " into the engine yourself";
  }
  std::string names;
  for (const std::string& r : recipes) names += (names.empty() ? "" : "|") + r;
  return hint + "set sandbox.docker.image to one that is built (sandrun image build " + names +
         ") or load " + ref + " into the engine yourself";
}

Status ValidateRecipe(const std::string& images_dir, const std::string& name) {
  auto recipe = BuiltinRecipe(images_dir, name);
  if (!recipe) return std::move(recipe).error();
  return Ok();
}

Result<std::string> RecipeHash(const std::string& images_dir, const std::string& name) {
  SANDRUN_ASSIGN_OR_RETURN(Recipe recipe, BuiltinRecipe(images_dir, name));
  return RecipeHash(recipe);
}

Result<ImageBuildOutcome> BuildImage(Client& client, const std::string& name,
                                     const ImageBuildOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(Recipe recipe, BuiltinRecipe(options.images_dir, name));
  return BuildImage(client, recipe, options);
}

Result<ImageBuildOutcome> BuildImage(Client& client, const Recipe& recipe,
                                     const ImageBuildOptions& options) {
  ImageBuildOutcome out;
  out.reference = std::string(kImageRepository) + ":" + recipe.name;
  SANDRUN_ASSIGN_OR_RETURN(out.recipe_hash, RecipeHash(recipe));

  auto existing = client.InspectImage(out.reference);
  if (existing) {
    auto it = existing->labels.find(kRecipeHashLabel);
    if (!options.force && it != existing->labels.end() && it->second == out.recipe_hash) {
      out.image_id = existing->id;
      Log(options, out.reference + " is up to date (recipe " + out.recipe_hash.substr(0, 12) + ")");
      return out;
    }
  } else if (existing.error().code != ErrorCode::kNotFound) {
    return std::move(existing).error();
  }

  const char* tmp_parent = std::getenv("TMPDIR");
  SANDRUN_ASSIGN_OR_RETURN(TempDir tmp,
                           TempDir::Create(tmp_parent && *tmp_parent ? tmp_parent : "/var/tmp"));
  std::string tar_path = tmp.path() + "/rootfs.tar";
  std::string script = recipe.dir + "/rootfs.sh";
  Log(options, "building the root filesystem of " + out.reference + " (" + script + ")");
  RunOptions run;
  run.stdout_to_stderr = true;
  if (!recipe.common_dir.empty()) run.env.push_back("SANDRUN_COMMON_DIR=" + recipe.common_dir);
  SANDRUN_ASSIGN_OR_RETURN(int status, RunToCompletion({script, tar_path}, run));
  if (status != 0) {
    return Error(ErrorCode::kInternal,
                 "image recipe " + script + " failed with exit status " + std::to_string(status));
  }

  UniqueFd tar(::open(tar_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!tar.valid()) return Error::FromErrno(errno, "recipe produced no " + tar_path);
  struct stat st {};
  if (::fstat(tar.get(), &st) != 0) return Error::FromErrno(errno, "stat " + tar_path);

  ImportRequest req;
  req.repo = kImageRepository;
  req.tag = recipe.name;
  SANDRUN_ASSIGN_OR_RETURN(req.changes, ReadChanges(recipe.dir + "/changes"));
  req.changes.push_back(std::string("LABEL ") + kRecipeHashLabel + "=" + out.recipe_hash);
  req.changes.push_back("LABEL sandrun.recipe=" + recipe.name);
  if (recipe.user) req.changes.push_back("LABEL sandrun.recipeDir=" + QuoteLabel(recipe.dir));
  req.body_size = st.st_size;
  int fd = tar.get();
  req.body_reader = [fd, &tar_path](char* buf, size_t cap) -> Result<size_t> {
    for (;;) {
      ssize_t n = ::read(fd, buf, cap);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return Error::FromErrno(errno, "reading " + tar_path);
    }
  };
  req.on_progress = [&](const ProgressMessage& m) {
    if (!m.status.empty()) Log(options, "engine: " + m.status);
  };
  Log(options, "importing " + std::to_string(st.st_size >> 20) + " MiB as " + out.reference);
  SANDRUN_ASSIGN_OR_RETURN(out.image_id, client.ImportImage(req));
  out.rebuilt = true;
  if (existing && existing->id != out.image_id) {
    // The tag moved to the new image; drop the old one unless a container still uses it.
    if (auto removed = client.RemoveImage(existing->id, false); !removed) {
      Log(options, "kept the previous image " + existing->id.substr(0, 19) + ": " +
                       removed.error().ToString());
    }
  }
  Log(options, "built " + out.reference + " (" + out.image_id.substr(0, 19) + ")");
  return out;
}

}  // namespace sandrun::docker

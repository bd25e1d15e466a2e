#include "sandbox/docker/image_build.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

}  // namespace

std::string DefaultImagesDir() { return FindDataDir(DataKind::kImages).path; }

Status ValidateRecipe(const std::string& images_dir, const std::string& name) {
  bool valid_name = !name.empty() && name != "common";
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) valid_name = false;
  }
  if (!valid_name) {
    return Error(ErrorCode::kInvalidArgument, "invalid image recipe name \"" + name + "\"");
  }
  std::string script = images_dir + "/" + name + "/rootfs.sh";
  if (::access(script.c_str(), X_OK) != 0) {
    return Error(ErrorCode::kNotFound,
                 "no image recipe \"" + name + "\" (" + script + " missing or not executable)");
  }
  return Ok();
}

Result<std::string> RecipeHash(const std::string& images_dir, const std::string& name) {
  SANDRUN_RETURN_IF_ERROR(ValidateRecipe(images_dir, name));
  Sha256 hash;
  for (const std::string& dir : {name, std::string("common")}) {
    std::string root = images_dir + "/" + dir;
    if (dir == "common" && !std::filesystem::is_directory(root)) continue;
    SANDRUN_ASSIGN_OR_RETURN(std::vector<std::string> files, ListFilesRecursive(root));
    for (const auto& rel : files) {
      SANDRUN_ASSIGN_OR_RETURN(std::string content, ReadFile(root + "/" + rel));
      hash.Update(dir + "/" + rel);
      hash.Update(std::string(1, '\0'));
      hash.Update(std::to_string(content.size()));
      hash.Update(std::string(1, '\0'));
      hash.Update(content);
    }
  }
  return hash.HexDigest();
}

Result<ImageBuildOutcome> BuildImage(Client& client, const std::string& name,
                                     const ImageBuildOptions& options) {
  ImageBuildOutcome out;
  out.reference = std::string(kImageRepository) + ":" + name;
  SANDRUN_ASSIGN_OR_RETURN(out.recipe_hash, RecipeHash(options.images_dir, name));

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
  std::string script = options.images_dir + "/" + name + "/rootfs.sh";
  Log(options, "building the root filesystem of " + out.reference + " (" + script + ")");
  SANDRUN_ASSIGN_OR_RETURN(int status, RunToCompletion({script, tar_path}, {true}));
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
  req.tag = name;
  SANDRUN_ASSIGN_OR_RETURN(req.changes, ReadChanges(options.images_dir + "/" + name + "/changes"));
  req.changes.push_back(std::string("LABEL ") + kRecipeHashLabel + "=" + out.recipe_hash);
  req.changes.push_back("LABEL sandrun.recipe=" + name);
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

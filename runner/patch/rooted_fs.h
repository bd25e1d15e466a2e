// File access confined to one directory tree, for apply_patch: every path is resolved by the
// kernel beneath the root (openat2 RESOLVE_BENEATH), so `..` and symlinks that lead out of it
// (absolute ones included) are refused, also when the tree changes while we work (a sandboxed
// command writing to the same mount). Unconfined mode resolves from "/" as usual.
//
// Paths given to RootedFs are relative to the root, normalized ("a/b", no "." or ".."), never
// empty. Errors that mean "this path leads out of the root" carry sys_errno EXDEV (the kernel's
// own errno for it); everything else is an ordinary I/O error.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(RootedFs fs, RootedFs::Open("/work/ws", /*confined=*/true));
//   SANDRUN_ASSIGN_OR_RETURN(PathInfo info, fs.Resolve("src/a.txt", /*follow_final=*/true));
//   SANDRUN_ASSIGN_OR_RETURN(std::string text, fs.ReadFile(info.rel, kMaxBytes));
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::patch {

enum class FileType { kMissing, kRegular, kDirectory, kSymlink, kOther };

struct PathInfo {
  std::string rel;                     // canonical path relative to the root (symlinks resolved)
  FileType type = FileType::kMissing;  // of the final component (a dangling link: kSymlink)
  struct stat st {};                   // when it exists
};

class RootedFs {
 public:
  // `root` must be an existing directory. Unconfined: paths are resolved from "/" (then `rel`
  // is an absolute path without its leading '/').
  static Result<RootedFs> Open(const std::string& root, bool confined);

  RootedFs(RootedFs&&) = default;
  RootedFs& operator=(RootedFs&&) = default;

  const std::string& root() const { return root_; }  // the real path of the root ("/" unconfined)
  bool confined() const { return confined_; }

  // Resolves `rel`: parent directories are followed (symlinks allowed while they stay beneath
  // the root); the final component is followed when `follow_final` (else a symlink is reported
  // as kSymlink). Missing parents are fine: the path is then kMissing. Errors: EXDEV (leads out),
  // ENOTDIR (a parent is not a directory), ELOOP, other I/O.
  Result<PathInfo> Resolve(const std::string& rel, bool follow_final) const;

  // Reads a regular file (following symlinks beneath the root), at most `max_bytes`.
  Result<std::string> ReadFile(const std::string& rel, size_t max_bytes) const;

  // Opens `rel` ("" = the root) with open(2) `flags` (O_CLOEXEC added), resolved beneath the root
  // like Resolve (symlinks followed while they stay beneath it; O_NOFOLLOW refuses a final one).
  // Errors: EXDEV (leads out), kNotFound (ENOENT), other I/O.
  Result<UniqueFd> Open(const std::string& rel, int flags) const;

  // Opens directory `rel` ("" = the root) for *at() calls. With `create`, missing directories
  // are made (mode 0777 & ~umask; owned like their parent when we run as root) and appended to
  // `created` (relative paths, outermost first).
  Result<UniqueFd> OpenDir(const std::string& rel, bool create,
                           std::vector<std::string>* created) const;

  // The path for messages: root + "/" + rel.
  std::string Display(const std::string& rel) const;

 private:
  RootedFs(UniqueFd fd, std::string root, bool confined)
      : fd_(std::move(fd)), root_(std::move(root)), confined_(confined) {}

  // openat2 beneath the root (or plain resolution unconfined); -1 with errno on failure.
  int OpenBeneath(const std::string& rel, int flags) const;
  // The canonical root-relative path of an open fd (via /proc/self/fd).
  Result<std::string> RelOf(int fd) const;

  UniqueFd fd_;
  std::string root_;
  bool confined_ = true;
};

// Splits "a/b/c" into its components.
std::vector<std::string> SplitRel(const std::string& rel);
std::string JoinRel(const std::vector<std::string>& parts, size_t begin, size_t end);

}  // namespace sandrun::patch

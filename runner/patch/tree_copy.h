// Copies a file or a directory tree between two already opened places, for `sandrun sandbox cp`:
// the source is an open fd (a regular file, or a directory opened O_RDONLY), the destination a
// directory fd and a name in it. Everything below is reached with *at() calls and O_NOFOLLOW, so
// no symbolic link is ever followed on either side, also when a sandboxed command swaps an entry
// for a link mid-copy; the callers make the top-level fds safe (RootedFs for the sandbox side).
//
// What is copied: regular files (content and permission bits 0777 under the umask; never
// setuid/setgid/sticky, never the owner) and directories. Symbolic links, devices, fifos and
// sockets inside a directory are skipped, each with a warning. A file is written to a temp file
// next to its target and renamed over it (an existing file is replaced whole, or not at all); a
// directory is created when missing and merged into when it exists. A file never replaces a
// directory and a directory never replaces a file (refused before anything of that entry is
// written).
//
// Pattern of use:
//   TreeCopy copy({.own_like_parent = geteuid() == 0});
//   SANDRUN_RETURN_IF_ERROR(copy.Copy(src_fd.get(), dest_dir_fd.get(), "name", "display/name"));
//   for (const auto& w : copy.warnings()) PrintWarning(w);
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/base/result.h"

namespace sandrun::patch {

struct TreeCopyOptions {
  // What is created gets the owner of the directory it is created in (a root runner copying
  // into a sandbox workspace: the workspace owner or the sandbox user, as RootedFs::OpenDir does
  // for directories). Off: the runner's own.
  bool own_like_parent = false;
  size_t max_depth = 256;  // directories deeper than this are refused (fds, stack)
};

class TreeCopy {
 public:
  explicit TreeCopy(TreeCopyOptions options);

  // Copies what `src_fd` is (fstat decides) to `name` in `dest_dir_fd`. `display` names the
  // destination in messages and warnings. Errors: kInvalidArgument for a refused replacement or
  // a source that is neither a file nor a directory (nothing of that entry written); I/O errors
  // as they come (what was copied before stays).
  Status Copy(int src_fd, int dest_dir_fd, const std::string& name, const std::string& display);

  const std::vector<std::string>& warnings() const { return warnings_; }
  size_t files() const { return files_; }

 private:
  Status CopyFile(int src_fd, int dest_dir_fd, const std::string& name, const std::string& display);
  Status CopyDir(int src_fd, int dest_dir_fd, const std::string& name, const std::string& display,
                 size_t depth);
  Status CopyEntry(int src_fd, const struct stat& st, int dest_dir_fd, const std::string& name,
                   const std::string& display, size_t depth);
  void Own(int fd, int dest_dir_fd) const;

  TreeCopyOptions options_;
  std::string temp_prefix_;
  uint64_t counter_ = 0;
  // Directories this copy created: never walked as a source (a tree copied into itself).
  std::set<std::pair<dev_t, ino_t>> made_;
  std::vector<std::string> warnings_;
  size_t files_ = 0;
};

}  // namespace sandrun::patch

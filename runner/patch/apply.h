// Applying a parsed patch to a directory tree, all or nothing (SPEC §6b).
//
// Two phases. Plan: every hunk is checked against the files as they are (and as earlier hunks of
// the same patch leave them: a file may be deleted and added again, or updated twice), paths are
// resolved beneath the root, and the final content of every touched file is computed; any
// problem stops here and nothing on disk has changed. Commit: new contents go to temp files next
// to their targets, then each target is swapped in with rename(2) (originals kept as hard-linked
// backups until the end); if any step fails, every step already done is undone, temp files and
// directories we created are removed, and the error says nothing was changed.
//
// Paths: relative paths are taken from `workdir`. With `workspace_only` every path must stay
// inside `root`: absolute paths elsewhere, `..` escapes and symlinks leading out are refused.
// Absolute paths under `alias_root` (the container's view of the same directory, /workspace)
// are mapped onto `root`.
//
// Files: updated files keep their mode (and owner, when we run as root), CRLF line endings and a
// missing final newline (text_apply.h); files with NUL bytes are refused; new files are created
// with mode 0666 & ~umask (owned like their directory when we run as root); missing parent
// directories are created. Add File onto an existing path and Move to an existing path are
// refused (delete it first in the same patch to replace it); deleting a symlink deletes the link.
//
// Errors (Error::code): kInvalidArgument / kNotFound / kConflict: the patch does not fit the
// files, nothing changed (sys_errno EXDEV: a path leads out of the workspace); kIo: writing
// failed and was rolled back, nothing changed; kInternal: the rollback failed too (the message
// lists what may be left changed).
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(patch::Patch p, patch::ParsePatch(text));
//   SANDRUN_ASSIGN_OR_RETURN(patch::ApplySummary s, patch::ApplyPatch(p, options));
//   std::cout << patch::SummaryText(s);
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runner/patch/patch.h"
#include "sandbox/base/result.h"

namespace sandrun::patch {

inline constexpr size_t kMaxFileBytes = 64u << 20;  // files apply_patch reads

struct ApplyOptions {
  std::string root;            // absolute; must exist
  std::string workdir;         // absolute; "" = root
  bool workspace_only = true;  // confine every path to root
  std::string alias_root;      // absolute paths under it mean the same paths under root
  std::string fence = "tools.exec.applyPatch.workspaceOnly";  // why paths must stay (messages)
  size_t max_file_bytes = kMaxFileBytes;
};

struct Move {
  std::string from;
  std::string to;
};

// Paths as the patch wrote them (each file once, in patch order). A move lists its source in
// `deleted` and its destination in `added`, and the pair in `moved`.
struct ApplySummary {
  std::vector<std::string> added;
  std::vector<std::string> updated;
  std::vector<std::string> deleted;
  std::vector<Move> moved;
};

Result<ApplySummary> ApplyPatch(const Patch& patch, const ApplyOptions& options);

// OpenClaw's text: "Success. Updated the following files:\nA new.txt\nM a.txt\nD old.txt", and
// "R from -> to" for a move.
std::string SummaryText(const ApplySummary& summary);

}  // namespace sandrun::patch

#include "runner/patch/apply.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <map>
#include <optional>

#include "runner/patch/rooted_fs.h"
#include "runner/patch/text_apply.h"

namespace sandrun::patch {
namespace {

// Lexical POSIX normalization ("a/./b/../c" -> "a/c"); keeps a leading "/" and leading ".."s.
std::string Normalize(std::string_view path) {
  const bool absolute = !path.empty() && path[0] == '/';
  std::vector<std::string> parts;
  for (std::string& part : SplitRel(std::string(path))) {
    if (part == ".") continue;
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
      } else if (!absolute) {
        parts.push_back(part);
      }
      continue;
    }
    parts.push_back(std::move(part));
  }
  std::string out = JoinRel(parts, 0, parts.size());
  if (absolute) return "/" + out;
  return out.empty() ? "." : out;
}

// `path` relative to `root` when it is `root` or under it.
std::optional<std::string> RelativeTo(const std::string& path, const std::string& root) {
  if (root == "/") return path.substr(1);
  if (path == root) return std::string();
  if (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
      path[root.size()] == '/') {
    return path.substr(root.size() + 1);
  }
  return std::nullopt;
}

Error OutOfWorkspace(std::string message) {
  Error e(ErrorCode::kInvalidArgument, std::move(message));
  e.sys_errno = EXDEV;
  return e;
}

std::string At(const Hunk& h) { return " (patch line " + std::to_string(h.line) + ")"; }

// One file the patch touches, keyed by its canonical root-relative path.
struct Entry {
  std::string display;  // the patch's path for it (normalized)
  bool existed = false;
  FileType original_type = FileType::kMissing;
  struct stat original_st {};
  std::optional<std::string> original;  // its content, once read
  bool present = false;                 // exists after the hunks so far
  std::optional<std::string> content;   // the content it has then (nullopt: unchanged/absent)
  // The mode and owner it keeps (an existing file's, carried along by a move); nullopt for a
  // new file (default mode, owned like its directory).
  std::optional<mode_t> mode;
  uid_t uid = 0;
  gid_t gid = 0;
};

class Planner {
 public:
  Planner(const RootedFs& fs, const ApplyOptions& options) : fs_(fs), options_(options) {}

  Status Apply(const Hunk& h) {
    switch (h.kind) {
      case Hunk::Kind::kAdd:
        return Add(h);
      case Hunk::Kind::kDelete:
        return Delete(h);
      case Hunk::Kind::kUpdate:
        return Update(h);
    }
    return Ok();
  }

  const std::map<std::string, Entry>& entries() const { return entries_; }
  const std::vector<std::string>& order() const { return order_; }
  const std::vector<Move>& moves() const { return moves_; }

 private:
  // The root-relative path of a patch path (lexically), with the workspaceOnly checks.
  Result<std::string> RootRel(const std::string& path, const Hunk& h) const {
    std::string abs;
    if (path[0] == '/') {
      abs = Normalize(path);
      // The container's view of the root, and the root as configured (it may differ from its
      // real path by a symlink), both mean the root.
      const std::string workspace = fs_.confined() ? fs_.root() : Normalize(options_.root);
      for (const std::string& alias : {options_.alias_root, options_.root}) {
        if (alias.empty()) continue;
        if (auto rel = RelativeTo(abs, Normalize(alias))) {
          abs = rel->empty() ? workspace : Normalize(workspace + "/" + *rel);
          break;
        }
      }
    } else {
      abs = Normalize(options_.workdir + "/" + path);
    }
    std::optional<std::string> rel = RelativeTo(abs, fs_.root());
    if (!rel) {
      if (path[0] == '/') {
        return OutOfWorkspace("path '" + path + "'" + At(h) +
                              " is outside the workspace: apply_patch writes only inside it "
                              "(" +
                              options_.fence + ")");
      }
      return OutOfWorkspace("path '" + path + "'" + At(h) + " leads out of the workspace (" +
                            options_.fence + ")");
    }
    if (rel->empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   "path '" + path + "'" + At(h) + " names a directory, not a file");
    }
    return *rel;
  }

  struct Ref {
    std::string key;
    Entry* entry = nullptr;
  };

  Result<Ref> Lookup(const std::string& path, const Hunk& h, bool follow_final) {
    SANDRUN_ASSIGN_OR_RETURN(std::string rel, RootRel(path, h));
    Result<PathInfo> info = fs_.Resolve(rel, follow_final);
    if (!info) {
      Error e = std::move(info).error();
      if (e.sys_errno == EXDEV) {
        return OutOfWorkspace("path '" + path + "'" + At(h) +
                              " leads out of the workspace through a symlink");
      }
      e.message = "path '" + path + "'" + At(h) + ": " + e.message;
      return e;
    }
    auto [it, inserted] = entries_.try_emplace(info->rel);
    Entry& e = it->second;
    if (inserted) {
      order_.push_back(info->rel);
      e.display = Normalize(path);
      e.existed = info->type != FileType::kMissing;
      e.original_type = info->type;
      e.original_st = info->st;
      e.present = e.existed;
      if (info->type == FileType::kRegular) {
        e.mode = info->st.st_mode & 07777;
        e.uid = info->st.st_uid;
        e.gid = info->st.st_gid;
      }
    }
    return Ref{info->rel, &e};
  }

  // The entry's current content; reads the original file the first time.
  Result<std::string> Current(Entry& e, const std::string& key, const Hunk& h) {
    if (e.content.has_value()) return *e.content;
    if (!e.original.has_value()) {
      if (e.original_type != FileType::kRegular) {
        return Error(ErrorCode::kInvalidArgument,
                     "Update File: " + e.display + At(h) +
                         (e.original_type == FileType::kSymlink ? " is a dangling symlink"
                                                                : " is not a regular file"));
      }
      Result<std::string> text = fs_.ReadFile(key, options_.max_file_bytes);
      if (!text) {
        Error err = std::move(text).error();
        if (err.sys_errno == EXDEV) {
          return OutOfWorkspace("path '" + e.display + "'" + At(h) +
                                " leads out of the workspace through a symlink");
        }
        err.message = "Update File: " + e.display + At(h) + ": " + err.message;
        if (err.code == ErrorCode::kSyscall) err.code = ErrorCode::kInvalidArgument;
        return err;
      }
      e.original = std::move(text).value();
    }
    return *e.original;
  }

  Status Add(const Hunk& h) {
    SANDRUN_ASSIGN_OR_RETURN(Ref ref, Lookup(h.path, h, false));
    Entry* e = ref.entry;
    if (e->present) {
      return Error(ErrorCode::kConflict,
                   "Add File: " + h.path + At(h) +
                       (e->original_type == FileType::kDirectory && !e->content
                            ? " already exists as a directory"
                            : " already exists; use *** Update File to change it (or *** Delete "
                              "File it first in the same patch)"));
    }
    e->present = true;
    e->content = h.contents;
    e->mode.reset();
    return Ok();
  }

  Status Delete(const Hunk& h) {
    SANDRUN_ASSIGN_OR_RETURN(Ref ref, Lookup(h.path, h, false));
    Entry* e = ref.entry;
    if (!e->present) {
      return Error(ErrorCode::kNotFound, "Delete File: " + h.path + At(h) + " does not exist");
    }
    if (!e->content.has_value() && e->original_type == FileType::kDirectory) {
      return Error(ErrorCode::kInvalidArgument,
                   "Delete File: " + h.path + At(h) + " is a directory; apply_patch deletes files");
    }
    e->present = false;
    e->content.reset();
    e->mode.reset();
    return Ok();
  }

  Status Update(const Hunk& h) {
    SANDRUN_ASSIGN_OR_RETURN(Ref ref, Lookup(h.path, h, true));
    Entry* e = ref.entry;
    if (!e->present) {
      return Error(ErrorCode::kNotFound, "Update File: " + h.path + At(h) + " does not exist");
    }
    SANDRUN_ASSIGN_OR_RETURN(std::string current, Current(*e, ref.key, h));
    std::string updated = current;
    if (!h.chunks.empty()) {
      Result<std::string> applied = ApplyChunks(current, h.chunks, h.path);
      if (!applied) return std::move(applied).error();
      updated = std::move(applied).value();
    } else if (LooksBinary(current)) {
      return Error(
          ErrorCode::kInvalidArgument,
          h.path + " is a binary file (it contains NUL bytes); apply_patch edits text only");
    }
    if (!h.move_path.has_value()) {
      e->content = std::move(updated);
      return Ok();
    }
    SANDRUN_ASSIGN_OR_RETURN(Ref dest, Lookup(*h.move_path, h, false));
    Entry* to = dest.entry;
    if (to == e) {  // moved onto itself
      e->content = std::move(updated);
      return Ok();
    }
    if (to->present) {
      return Error(ErrorCode::kConflict,
                   "Move to: " + *h.move_path + " (patch line " + std::to_string(h.line + 1) + ")" +
                       " already exists; delete it first in the same patch to replace it");
    }
    to->present = true;
    to->content = std::move(updated);
    to->mode = e->mode;
    to->uid = e->uid;
    to->gid = e->gid;
    e->present = false;
    e->content.reset();
    moves_.push_back({Normalize(h.path), Normalize(*h.move_path)});
    return Ok();
  }

  const RootedFs& fs_;
  const ApplyOptions& options_;
  std::map<std::string, Entry> entries_;
  std::vector<std::string> order_;
  std::vector<Move> moves_;
};

// One change on disk: the target `name` in directory `dir_rel`.
struct Step {
  enum class Action { kWrite, kCreate, kRemove };
  Action action = Action::kWrite;
  const Entry* entry = nullptr;
  std::string dir_rel;
  std::string name;
  std::string temp;    // the new content, next to the target
  std::string backup;  // the original, kept until the end
  bool temp_written = false;
  bool backed_up = false;
  bool backup_is_link = false;  // the backup is a hard link (the target is still in place)
  bool swapped = false;         // the target is the new content / is gone / was created
};

// Unique names for our temp and backup files: pid, a random tag, a counter.
class TempNames {
 public:
  TempNames() {
    uint32_t tag = 0;
    if (::getrandom(&tag, sizeof tag, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof tag)) {
      tag = static_cast<uint32_t>(::getpid()) * 2654435761u;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, ".sandrun-patch-%d-%08x-", static_cast<int>(::getpid()),
                  static_cast<unsigned>(tag));
    prefix_ = buf;
  }
  std::string Next(const char* suffix) { return prefix_ + std::to_string(++counter_) + suffix; }

 private:
  std::string prefix_;
  uint64_t counter_ = 0;
};

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

Status WriteAll(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "cannot write " + what);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Ok();
}

class Committer {
 public:
  Committer(const RootedFs& fs, std::vector<Step> steps) : fs_(fs), steps_(std::move(steps)) {}

  Status Run() {
    for (Step& step : steps_) {
      if (auto ok = Prepare(step); !ok) return Fail(std::move(ok).error(), step);
    }
    for (Step& step : steps_) {
      if (auto ok = Swap(step); !ok) return Fail(std::move(ok).error(), step);
    }
    for (const Step& step : steps_) {  // done: drop the backups
      if (!step.backed_up) continue;
      if (auto dir = Dir(step.dir_rel, false)) (void)::unlinkat(dir->fd, step.backup.c_str(), 0);
    }
    return Ok();
  }

 private:
  // An open directory (beneath the root) and its owner.
  struct OpenDirectory {
    int fd = -1;
    uid_t uid = 0;
    gid_t gid = 0;
  };
  static constexpr size_t kMaxCachedDirs = 128;  // far below the usual 1024-fd limit

  // Directory `rel`, opened once per patch. The fd stays valid until the next Dir() call.
  Result<OpenDirectory> Dir(const std::string& rel, bool create) {
    auto it = dirs_.find(rel);
    if (it == dirs_.end()) {
      SANDRUN_ASSIGN_OR_RETURN(UniqueFd fd, fs_.OpenDir(rel, create, &created_dirs_));
      struct stat st {};
      (void)::fstat(fd.get(), &st);
      if (dirs_.size() >= kMaxCachedDirs) dirs_.clear();
      it = dirs_.emplace(rel, std::make_pair(std::move(fd), st)).first;
    }
    return OpenDirectory{it->second.first.get(), it->second.second.st_uid,
                         it->second.second.st_gid};
  }

  std::string Where(const Step& s) const {
    return s.dir_rel.empty() ? s.name : s.dir_rel + "/" + s.name;
  }

  // Writes the new content to a temp file in the target's directory (created if missing).
  Status Prepare(Step& s) {
    if (s.action == Step::Action::kRemove) return Ok();
    SANDRUN_ASSIGN_OR_RETURN(OpenDirectory dir, Dir(s.dir_rel, true));
    s.temp = names_.Next(".tmp");
    const Entry& e = *s.entry;
    const mode_t create_mode = e.mode.has_value() ? 0600 : 0666;  // 0666: the umask applies
    UniqueFd fd(::openat(dir.fd, s.temp.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, create_mode));
    if (!fd.valid()) return Error::FromErrno(errno, "cannot create a temp file for " + Where(s));
    s.temp_written = true;
    SANDRUN_RETURN_IF_ERROR(WriteAll(fd.get(), *e.content, Where(s)));
    if (root_) {
      // Keep the file's owner (a new file: its directory's); best effort, the content matters
      // more. chown clears setuid/setgid bits, so the mode is set after it.
      const uid_t uid = e.mode.has_value() ? e.uid : dir.uid;
      const gid_t gid = e.mode.has_value() ? e.gid : dir.gid;
      if (uid != ::geteuid() || gid != ::getegid()) (void)::fchown(fd.get(), uid, gid);
    }
    if (e.mode.has_value() && ::fchmod(fd.get(), *e.mode) != 0) {
      return Error::FromErrno(errno, "cannot set the mode of " + Where(s));
    }
    return Ok();
  }

  // Puts the new state in place, keeping the original as a backup.
  Status Swap(Step& s) {
    SANDRUN_ASSIGN_OR_RETURN(OpenDirectory dir, Dir(s.dir_rel, false));
    const int d = dir.fd;
    const char* name = s.name.c_str();
    if (s.action == Step::Action::kCreate) {
      if (::renameat2(d, s.temp.c_str(), d, name, RENAME_NOREPLACE) != 0) {
        return Error::FromErrno(errno, "cannot create " + Where(s));
      }
      s.temp_written = false;
      s.swapped = true;
      return Ok();
    }
    struct stat now {};
    if (::fstatat(d, name, &now, AT_SYMLINK_NOFOLLOW) != 0 ||
        !SameFile(now, s.entry->original_st)) {
      return Error(ErrorCode::kIo, Where(s) + " changed while the patch was being applied");
    }
    s.backup = names_.Next(".orig");
    if (s.action == Step::Action::kRemove) {
      if (::renameat(d, name, d, s.backup.c_str()) != 0) {
        return Error::FromErrno(errno, "cannot delete " + Where(s));
      }
      s.backed_up = true;
      s.swapped = true;
      return Ok();
    }
    if (::linkat(d, name, d, s.backup.c_str(), 0) == 0) {
      s.backup_is_link = true;
    } else if (::renameat(d, name, d, s.backup.c_str()) != 0) {
      return Error::FromErrno(errno, "cannot back up " + Where(s));
    }
    s.backed_up = true;
    if (::renameat(d, s.temp.c_str(), d, name) != 0) {
      return Error::FromErrno(errno, "cannot replace " + Where(s));
    }
    s.temp_written = false;
    s.swapped = true;
    return Ok();
  }

  // Undoes every step (newest first) and removes what we created.
  Error Fail(Error error, const Step& failed) {
    dirs_.clear();  // fds may have run out: the rollback opens what it needs
    std::vector<std::string> stuck;
    for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
      Step& s = *it;
      Result<UniqueFd> dir = fs_.OpenDir(s.dir_rel, false, nullptr);
      if (!dir) {
        if (s.swapped || s.backed_up) stuck.push_back(Where(s));
        continue;
      }
      const int d = dir->get();
      bool ok = true;
      if (s.action == Step::Action::kCreate && s.swapped) {
        ok = ::unlinkat(d, s.name.c_str(), 0) == 0;
      } else if (s.backed_up && (s.swapped || !s.backup_is_link)) {
        ok = ::renameat(d, s.backup.c_str(), d, s.name.c_str()) == 0;
      } else if (s.backed_up) {
        ok = ::unlinkat(d, s.backup.c_str(), 0) == 0;
      }
      if (!ok) stuck.push_back(Where(s));
      if (s.temp_written) (void)::unlinkat(d, s.temp.c_str(), 0);
    }
    for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it) {
      std::vector<std::string> parts = SplitRel(*it);
      std::string parent = JoinRel(parts, 0, parts.size() - 1);
      if (auto dir = fs_.OpenDir(parent, false, nullptr)) {
        (void)::unlinkat(dir->get(), parts.back().c_str(), AT_REMOVEDIR);
      }
    }
    std::string what = "apply_patch failed at " + failed.entry->display + ": " + error.ToString();
    if (!stuck.empty()) {
      std::string list;
      for (const auto& p : stuck) list += (list.empty() ? "" : ", ") + p;
      return Error(ErrorCode::kInternal, what + "; the rollback failed too, check: " + list);
    }
    Error out(ErrorCode::kIo, what + "; nothing was changed");
    out.sys_errno = error.sys_errno;
    return out;
  }

  const RootedFs& fs_;
  std::vector<Step> steps_;
  std::vector<std::string> created_dirs_;
  std::map<std::string, std::pair<UniqueFd, struct stat>> dirs_;
  const bool root_ = ::geteuid() == 0;
  TempNames names_;
};

}  // namespace

Result<ApplySummary> ApplyPatch(const Patch& patch, const ApplyOptions& options) {
  if (options.root.empty() || options.root[0] != '/') {
    return Error(ErrorCode::kInvalidArgument, "apply_patch needs an absolute workspace directory");
  }
  SANDRUN_ASSIGN_OR_RETURN(RootedFs fs, RootedFs::Open(options.root, options.workspace_only));
  ApplyOptions resolved = options;
  // The workdir in the root's real spelling, so lexical checks agree with the kernel's.
  std::string workdir = Normalize(options.workdir.empty() ? options.root : options.workdir);
  if (options.workspace_only) {
    std::optional<std::string> rel = RelativeTo(workdir, Normalize(options.root));
    if (!rel) {
      return OutOfWorkspace("the workdir " + options.workdir + " is outside the workspace " +
                            options.root + " (" + options.fence + ")");
    }
    workdir = fs.Display(*rel);
  }
  resolved.workdir = workdir;

  Planner planner(fs, resolved);
  for (const Hunk& h : patch.hunks) SANDRUN_RETURN_IF_ERROR(planner.Apply(h));

  ApplySummary summary;
  summary.moved = planner.moves();
  std::vector<Step> steps;
  for (const std::string& key : planner.order()) {
    const Entry& e = planner.entries().at(key);
    Step step;
    step.entry = &e;
    std::vector<std::string> parts = SplitRel(key);
    step.name = parts.back();
    step.dir_rel = JoinRel(parts, 0, parts.size() - 1);
    if (e.existed && e.present) {
      summary.updated.push_back(e.display);
      if (!e.content.has_value() ||
          (e.original.has_value() && *e.original == *e.content && e.mode.has_value())) {
        continue;  // same bytes, same file: nothing to write
      }
      step.action = Step::Action::kWrite;
    } else if (e.existed) {
      summary.deleted.push_back(e.display);
      step.action = Step::Action::kRemove;
    } else if (e.present) {
      summary.added.push_back(e.display);
      step.action = Step::Action::kCreate;
    } else {
      continue;  // added and deleted again
    }
    steps.push_back(std::move(step));
  }
  Committer committer(fs, std::move(steps));
  SANDRUN_RETURN_IF_ERROR(committer.Run());
  return summary;
}

std::string SummaryText(const ApplySummary& summary) {
  auto is_move_end = [&](const std::string& path, bool from) {
    for (const Move& m : summary.moved) {
      if ((from ? m.from : m.to) == path) return true;
    }
    return false;
  };
  std::string text = "Success. Updated the following files:";
  for (const auto& p : summary.added) {
    if (!is_move_end(p, false)) text += "\nA " + p;
  }
  for (const auto& p : summary.updated) text += "\nM " + p;
  for (const auto& p : summary.deleted) {
    if (!is_move_end(p, true)) text += "\nD " + p;
  }
  for (const Move& m : summary.moved) text += "\nR " + m.from + " -> " + m.to;
  return text;
}

}  // namespace sandrun::patch

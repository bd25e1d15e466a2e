// The files sandrun keeps its own state in ($SANDRUN_HOME/exec-approvals.json, tokens.json):
// read strictly, rewritten atomically under a lock, and never followed through a symlink. One
// writer for all of them, so a second kind of state file cannot get the rules subtly different.
//
// The rules:
// - the file and its directory must not be symlinks; the file must be a regular file that only
//   its owner (the runner or root) can write (CheckTrustedFile);
// - a file whose mode is wider than 0600 or that another user owns is read, with a warning, and
//   rewritten 0600 by the next update;
// - an update re-reads the file under an exclusive flock on `<path>.lock` (created 0600; a
//   symlink there is refused), applies the change, and writes only when the text changed:
//   temp file in the same directory (O_EXCL, 0600), fsync, rename, fsync of the directory;
//   temp files of writers that crashed before their rename are removed;
// - a file that does not parse is never treated as empty: under the lock it is moved aside to
//   `<path>.corrupt-<unix ms>` (content untouched) and the parse error says where it was kept.
//
// Pattern of use (a parser and a serialiser of the file's own format):
//   StateFileFormat<Tokens> format{"tokens file", ParseTokens, SerializeTokens};
//   SANDRUN_ASSIGN_OR_RETURN(LoadedState<Tokens> loaded, LoadStateFile(path, format));
//   SANDRUN_RETURN_IF_ERROR(UpdateStateFile(path, format, [&](Tokens& t) { ...; return Ok(); }));
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/os/file.h"

namespace sandrun::config {

template <typename T>
struct StateFileFormat {
  std::string what;  // "approvals file": how errors and warnings name the file
  // Parses the whole text (warnings for what was normalised); an Error says PATH:LINE:COL.
  std::function<Result<T>(std::string_view text, const std::string& path,
                          std::vector<std::string>* warnings)>
      parse;
  std::function<std::string(const T&)> serialize;
};

template <typename T>
struct LoadedState {
  T file{};
  bool existed = false;
  std::vector<std::string> warnings;
};

// The text layer every state file shares (state_file.cc).
namespace state_file {

struct Disk {
  bool existed = false;
  std::string text;
  bool is_private = true;  // mode within 0600 and owned by us
  std::vector<std::string> warnings;
};

std::string DirectoryOf(const std::string& path);
// The directory of `path` must be a real directory; `missing_ok`: one that does not exist is fine.
Status CheckDirectory(const std::string& path, std::string_view what, bool missing_ok);
// What is on disk (a missing file: existed = false).
Result<Disk> Read(const std::string& path, std::string_view what);
Result<FileLock> Lock(const std::string& path);
// With the lock held: keeps the unparsable file as <path>.corrupt-<ms>; returns the error saying
// so.
Error MoveAside(const std::string& path, Error parse_error);
// With the lock held: removes crashed writers' temp files and writes `text` (0600, durable).
Status Write(const std::string& path, std::string_view text);

}  // namespace state_file

// Reads and parses `path` (a missing file is an empty T). A file that does not parse is moved
// aside under the lock (unless a writer replaced it meanwhile) and the error returned.
template <typename T>
Result<LoadedState<T>> LoadStateFile(const std::string& path, const StateFileFormat<T>& format) {
  SANDRUN_RETURN_IF_ERROR(state_file::CheckDirectory(path, format.what, /*missing_ok=*/true));
  std::optional<FileLock> lock;
  for (int attempt = 0;; ++attempt) {
    SANDRUN_ASSIGN_OR_RETURN(state_file::Disk disk, state_file::Read(path, format.what));
    LoadedState<T> loaded;
    loaded.existed = disk.existed;
    loaded.warnings = std::move(disk.warnings);
    if (!disk.existed) return loaded;
    Result<T> parsed = format.parse(disk.text, path, &loaded.warnings);
    if (parsed) {
      loaded.file = std::move(*parsed);
      return loaded;
    }
    // Decide under the lock: a writer may have replaced the file since it was read.
    if (attempt > 0) return state_file::MoveAside(path, std::move(parsed).error());
    SANDRUN_ASSIGN_OR_RETURN(FileLock acquired, state_file::Lock(path));
    lock.emplace(std::move(acquired));
  }
}

// Read-modify-write under the lock: creates the directory (0700) if missing, re-reads the file
// (a corrupt one is moved aside and its error returned; nothing is written), calls `mutate` (its
// error is returned and nothing is written) and writes the result unless it is byte-for-byte
// what is on disk, or the file is absent and still `T{}`. Returns the file as written.
template <typename T>
Result<T> UpdateStateFile(const std::string& path, const StateFileFormat<T>& format,
                          const std::function<Status(T&)>& mutate) {
  SANDRUN_RETURN_IF_ERROR(state_file::CheckDirectory(path, format.what, /*missing_ok=*/true));
  SANDRUN_RETURN_IF_ERROR(EnsureDirectory(state_file::DirectoryOf(path), 0700));
  SANDRUN_RETURN_IF_ERROR(state_file::CheckDirectory(path, format.what, /*missing_ok=*/false));
  SANDRUN_ASSIGN_OR_RETURN(FileLock lock, state_file::Lock(path));
  SANDRUN_ASSIGN_OR_RETURN(state_file::Disk disk, state_file::Read(path, format.what));
  T file{};
  if (disk.existed) {
    std::vector<std::string> ignored;
    Result<T> parsed = format.parse(disk.text, path, &ignored);
    if (!parsed) return state_file::MoveAside(path, std::move(parsed).error());
    file = std::move(*parsed);
  }
  SANDRUN_RETURN_IF_ERROR(mutate(file));
  std::string text = format.serialize(file);
  if (disk.existed && disk.is_private && text == disk.text) return file;
  if (!disk.existed && file == T{}) return file;  // nothing to create
  SANDRUN_RETURN_IF_ERROR(state_file::Write(path, text));
  return file;
}

}  // namespace sandrun::config

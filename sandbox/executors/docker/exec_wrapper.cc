#include "sandbox/executors/docker/exec_wrapper.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <optional>
#include <sstream>
#include <utility>

#include "sandbox/os/data_dir.h"
#include "sandbox/os/host_path.h"
#include "sandbox/os/trusted_file.h"

namespace sandrun::exec {
namespace {

constexpr char kRecordPrefix[] = "/dev/shm/.sandrun-exec-";  // as in exec_wrapper/main.cc

// Prints the record's lines and removes it, as the exec's user (the record is 0600, its own;
// /dev/shm is sticky). Builtins only: works with busybox ash and dash alike.
// The record is opened read-write (never blocks, even on a FIFO swapped in under its name) and
// read only if what is open is a regular file, at most 64 bytes: a command cannot stall or
// flood the reader through it.
constexpr char kReadRecordScript[] = R"sh(f=$1
[ -f "$f" ] && [ ! -L "$f" ] || exit 0
{ exec 3<>"$f"; } 2>/dev/null || exit 0
[ -f /proc/self/fd/3 ] && dd bs=64 count=1 2>/dev/null <&3
exec 3<&-
rm -f -- "$f"
exit 0)sh";

std::string ExecutableDir() {
  const std::string path = ExecutablePath();
  const size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "" : path.substr(0, slash);
}

// "<tag> <n>" with 1 <= n <= INT_MAX.
std::optional<int64_t> Field(const std::string& line, char tag) {
  if (line.size() < 3 || line[0] != tag || line[1] != ' ' || line.size() > 12) return std::nullopt;
  int64_t v = 0;
  for (size_t i = 2; i < line.size(); ++i) {
    if (line[i] < '0' || line[i] > '9') return std::nullopt;
    v = v * 10 + (line[i] - '0');
  }
  if (v <= 0 || v > INT_MAX) return std::nullopt;
  return v;
}

}  // namespace

ExecWrapper FindBundledBinary(const char* name, const char* what, bool engine_is_local) {
  ExecWrapper w;
  if (!engine_is_local) {
    w.reason = "the engine is not local (a bind source is a path on the engine's host)";
    return w;
  }
  const std::string dir = ExecutableDir();
  if (dir.empty()) {
    w.reason = "cannot find this program's directory";
    return w;
  }
  return CheckBundledBinary(dir + "/" + name, what);
}

ExecWrapper FindExecWrapper(bool engine_is_local) {
  return FindBundledBinary(kExecWrapperBinary, "exec wrapper", engine_is_local);
}

ExecWrapper CheckExecWrapper(const std::string& path) {
  return CheckBundledBinary(path, "exec wrapper");
}

ExecWrapper CheckBundledBinary(const std::string& path, const char* what) {
  ExecWrapper w;
  // The bind source must be the trusted file itself: no link on the way (a link could be
  // pointed elsewhere after the check), and nobody but root or the runner may change it or
  // its directory (so the path keeps naming this file until the engine binds it).
  auto info = InspectHostPath(path);
  if (!info) {
    w.reason = info.error().ToString();
    return w;
  }
  if (!info->IsRegularFile() || (info->mode & S_IXOTH) == 0) {
    w.reason = path + " is not an executable regular file";
    return w;
  }
  if (auto trusted = CheckTrustedFile(path, what); !trusted) {
    w.reason = trusted.error().ToString();
    return w;
  }
  w.host_path = path;
  return w;
}

docker::BindMount WrapperMount(const ExecWrapper& wrapper) {
  return docker::BindMount{wrapper.host_path, kExecWrapperPath, /*read_only=*/true, "rprivate",
                           /*non_recursive=*/true};
}

std::vector<std::string> WrapCommand(bool wrapped, std::vector<std::string> cmd) {
  if (wrapped) cmd.insert(cmd.begin(), kExecWrapperPath);
  return cmd;
}

std::string ExecRecordPath(const std::string& token) { return kRecordPrefix + token; }

namespace {

// The record's lines, removed from the container; nullopt when they could not be read.
std::optional<std::string> TakeRecord(docker::Client& client, const ExecTree& tree) {
  docker::ExecSpec reader;
  reader.cmd = {"/bin/sh", "-c", kReadRecordScript, "sandrun-record", ExecRecordPath(tree.token)};
  reader.user = tree.user;
  std::string text;
  auto read = client.RunExec(tree.container, reader,
                             [&](docker::StreamKind, std::string_view bytes) {
                               if (text.size() < 256) text.append(bytes);
                             },
                             {Deadline::After(std::chrono::seconds(10)), nullptr});
  if (!read || *read != 0) return std::nullopt;
  return text;
}

}  // namespace

void DiscardExecRecord(docker::Client& client, const ExecTree& tree) {
  if (tree.wrapped && !tree.token.empty()) (void)TakeRecord(client, tree);
}

int SignalFromRecord(const std::string& record, int64_t code) {
  if (code <= 128 || code > 128 + 64) return 0;
  std::optional<int64_t> pid, signal;
  std::istringstream lines(record);
  for (std::string line; std::getline(lines, line);) {
    if (auto p = Field(line, 'P')) {
      pid = p;
    } else if (auto s = Field(line, 'S')) {
      signal = s;
    } else {
      return 0;  // not what the wrapper writes: the record is ignored whole
    }
  }
  // No record: the wrapper exited normally (it removes the record first) or never wrote one.
  if (!pid) return 0;
  // "S N": the child died from N. No "S": the wrapper itself was killed (a SIGKILL of the
  // tree), by the signal the engine's code says. A record that disagrees with the engine's
  // code is ignored.
  const int64_t sig = signal.value_or(code - 128);
  return sig == code - 128 ? static_cast<int>(sig) : 0;
}

void EndFromExitCode(docker::Client& client, const ExecTree& tree, int64_t code,
                     ExecOutcome* outcome) {
  outcome->status = ExecOutcome::Status::kExited;
  outcome->exit_code = static_cast<int>(code);
  outcome->signal = 0;
  if (!tree.wrapped || tree.token.empty() || code <= 128 || code > 128 + 64) return;
  std::optional<std::string> text = TakeRecord(client, tree);
  const int sig = text ? SignalFromRecord(*text, code) : 0;
  if (sig == 0) return;
  outcome->status = ExecOutcome::Status::kSignaled;
  outcome->exit_code = -1;
  outcome->signal = sig;
}

}  // namespace sandrun::exec

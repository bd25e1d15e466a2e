#include "runner/policy/command_resolution.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include "runner/policy/env_policy.h"
#include "runner/policy/inline_eval.h"
#include "runner/policy/sandbox_spec.h"
#include "sandbox/base/strings.h"

namespace sandrun::policy {
namespace {

// Wrappers that change who runs a command, its scheduling or its I/O buffering: a segment
// using one is never satisfied automatically (reference §5.3, §10: stdbuf is blocked too).
constexpr std::string_view kBlockedWrappers[] = {
    "sudo",   "doas",    "su",         "pkexec",       "runuser", "chrt",   "ionice",
    "setsid", "taskset", "stdbuf",     "nsenter",      "unshare", "chroot", "setpriv",
    "capsh",  "script",  "caffeinate", "sandbox-exec", "xcrun",   "arch",   "flock",
    "watch",  "exec",    "eval",       "command",      "builtin", "sg",     "newgrp"};

bool IsBlockedWrapper(std::string_view name) {
  for (std::string_view w : kBlockedWrappers) {
    if (name == w) return true;
  }
  return false;
}

bool IsMultiplexer(std::string_view name) { return name == "busybox" || name == "toybox"; }

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// A duration for timeout(1): digits with an optional fraction and one unit suffix.
bool IsDuration(std::string_view s) {
  if (!s.empty() && (s.back() == 's' || s.back() == 'm' || s.back() == 'h' || s.back() == 'd')) {
    s.remove_suffix(1);
  }
  size_t dot = s.find('.');
  if (dot == std::string_view::npos) return AllDigits(s);
  return (dot == 0 || AllDigits(s.substr(0, dot))) && AllDigits(s.substr(dot + 1));
}

// Where the wrapped command starts in argv (after `at`, the wrapper), or an explanation.
struct Unwrap {
  size_t next = 0;
  std::string blocked;
};

Unwrap UnwrapDispatch(std::string_view name, const std::vector<std::string>& argv, size_t at) {
  size_t i = at + 1;
  auto need_command = [&](size_t idx) -> Unwrap {
    if (idx >= argv.size()) return {0, std::string(name) + " without a command"};
    return {idx, ""};
  };
  if (name == "env") {
    // Transparent only without modifiers: `env ls`, `env -- ls`.
    if (i < argv.size() && argv[i] == "--") ++i;
    if (i < argv.size() && (argv[i].starts_with("-") || argv[i].find('=') != std::string::npos)) {
      return {0, "env with options or assignments changes the environment"};
    }
    return need_command(i);
  }
  if (name == "nohup") {
    if (i < argv.size() && argv[i] == "--") ++i;
    if (i < argv.size() && argv[i].starts_with("-")) return {0, "nohup with options"};
    return need_command(i);
  }
  if (name == "nice") {
    if (i < argv.size() && argv[i] == "-n" && i + 1 < argv.size()) {
      i += 2;
    } else if (i < argv.size() &&
               (argv[i].starts_with("-n") || argv[i].starts_with("--adjustment="))) {
      ++i;
    } else if (i < argv.size() && argv[i].size() > 1 && argv[i][0] == '-' &&
               AllDigits(std::string_view(argv[i]).substr(1))) {
      ++i;
    }
    if (i < argv.size() && argv[i] == "--") ++i;
    if (i < argv.size() && argv[i].starts_with("-")) return {0, "nice with unknown options"};
    return need_command(i);
  }
  if (name == "time") {
    while (i < argv.size() && (argv[i] == "-p" || argv[i] == "--portability")) ++i;
    if (i < argv.size() && argv[i] == "--") ++i;
    if (i < argv.size() && argv[i].starts_with("-")) return {0, "time with unknown options"};
    return need_command(i);
  }
  if (name == "timeout") {
    while (i < argv.size() && argv[i].starts_with("-") && argv[i] != "--") {
      const std::string& o = argv[i];
      if (o == "-s" || o == "-k" || o == "--signal" || o == "--kill-after") {
        i += 2;
      } else if (o.starts_with("--signal=") || o.starts_with("--kill-after=") ||
                 (o.size() > 2 && (o.starts_with("-s") || o.starts_with("-k"))) ||
                 o == "--preserve-status" || o == "--foreground" || o == "-v" || o == "--verbose") {
        ++i;
      } else {
        return {0, "timeout with unknown option " + o};
      }
    }
    if (i < argv.size() && argv[i] == "--") ++i;
    if (i >= argv.size() || !IsDuration(argv[i])) return {0, "timeout without a duration"};
    return need_command(i + 1);
  }
  return {0, ""};
}

bool IsDispatchWrapper(std::string_view name) {
  return name == "env" || name == "nohup" || name == "nice" || name == "time" || name == "timeout";
}

}  // namespace

std::string SystemRealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return "";
  return buf;
}

std::string CommandName(std::string_view word) {
  size_t slash = word.find_last_of('/');
  if (slash != std::string_view::npos) word.remove_prefix(slash + 1);
  return Lower(word);
}

MatchTarget ExecutableResolution::Target() const {
  MatchTarget t;
  t.invoked = raw;
  t.via_path = via_path;
  t.resolved_path = real_path.empty() ? resolved_path : real_path;
  if (!resolved()) t.cwd_path = cwd_path;
  return t;
}

namespace {

// A path that NormalizePosixPath would return unchanged (the common case for PATH entries).
bool IsCleanAbsolute(std::string_view p) {
  if (p.empty() || p[0] != '/') return false;
  if (p.size() > 1 && p.back() == '/') return false;
  return p.find("//") == std::string_view::npos && p.find("/./") == std::string_view::npos &&
         p.find("/../") == std::string_view::npos && !p.ends_with("/.") && !p.ends_with("/..");
}

// One lstat per candidate (the system's own probes): a regular file with an execute bit for
// us, or a symlink, followed as access(2) would. Fills the real path cheaply when the file is
// not a link: the directory's real path (remembered for one evaluation by `scan`) plus the name.
bool ProbeCandidate(const std::string& candidate, size_t name_at, std::string* real,
                    PathScan* scan) {
  struct stat st {};
  if (::lstat(candidate.c_str(), &st) != 0) return false;
  if (S_ISLNK(st.st_mode)) {
    if (!StatIsExecutable(candidate)) return false;
    *real = SystemRealPath(candidate);
    return true;
  }
  if (!S_ISREG(st.st_mode)) return false;
  static const uid_t euid = ::geteuid();  // a runner does not change its ids
  static const gid_t egid = ::getegid();
  const mode_t bits = euid == 0           ? (S_IXUSR | S_IXGRP | S_IXOTH)
                      : st.st_uid == euid ? S_IXUSR
                      : st.st_gid == egid ? S_IXGRP
                                          : S_IXOTH;
  if ((st.st_mode & bits) == 0) {
    // Supplementary groups and ACLs: let the kernel decide for the rare in-between case.
    if ((st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) == 0 ||
        ::access(candidate.c_str(), X_OK) != 0) {
      return false;
    }
  }
  const std::string dir = name_at <= 1 ? "/" : candidate.substr(0, name_at - 1);
  const std::string real_dir = scan != nullptr ? scan->RealDirectory(dir) : SystemRealPath(dir);
  if (real_dir.empty()) {
    *real = SystemRealPath(candidate);
  } else {
    *real = (real_dir == "/" ? "" : real_dir) + "/" + candidate.substr(name_at);
  }
  return true;
}

struct AbsentNames {
  uint64_t dev = 0, ino = 0;
  int64_t mtime_ns = 0;
  std::set<std::string> names;
};

std::mutex& AbsentMutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, AbsentNames>& AbsentStore() {
  static std::map<std::string, AbsentNames> store;
  return store;
}
constexpr size_t kMaxAbsentNames = 4096;  // per directory: a bound, not a working-set guess

}  // namespace

const PathScan::View& PathScan::Snapshot(const std::string& dir) {
  auto it = views_.find(dir);
  if (it != views_.end()) return it->second;
  View v;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    v.ok = true;
    v.dev = st.st_dev;
    v.ino = st.st_ino;
    v.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  }
  return views_.emplace(dir, v).first->second;
}

std::string PathScan::RealDirectory(const std::string& dir) {
  auto it = real_dirs_.find(dir);
  if (it != real_dirs_.end()) return it->second;
  return real_dirs_.emplace(dir, SystemRealPath(dir)).first->second;
}

bool PathScan::MayContain(const std::string& dir, const std::string& name) {
  const View& v = Snapshot(dir);
  if (!v.ok) return false;  // not a directory (any more): nothing to find in it
  std::lock_guard<std::mutex> lock(AbsentMutex());
  auto it = AbsentStore().find(dir);
  if (it == AbsentStore().end()) return true;
  const AbsentNames& a = it->second;
  if (a.dev != v.dev || a.ino != v.ino || a.mtime_ns != v.mtime_ns) return true;
  return a.names.count(name) == 0;
}

void PathScan::RecordAbsent(const std::string& dir, const std::string& name) {
  const View& v = Snapshot(dir);
  if (!v.ok) return;
  std::lock_guard<std::mutex> lock(AbsentMutex());
  AbsentNames& a = AbsentStore()[dir];
  if (a.dev != v.dev || a.ino != v.ino || a.mtime_ns != v.mtime_ns) {
    a = AbsentNames{v.dev, v.ino, v.mtime_ns, {}};
  }
  if (a.names.size() < kMaxAbsentNames) a.names.insert(name);
}

ExecutableResolution ResolveExecutable(const std::string& word, const ResolveContext& ctx) {
  ExecutableResolution r;
  r.raw = word;
  if (word.empty()) return r;
  // Injected probes (tests) are used as given; otherwise one lstat per candidate.
  const bool injected = ctx.is_executable || ctx.real_path;
  const IsExecutableFn& is_exec =
      ctx.is_executable ? ctx.is_executable : IsExecutableFn(StatIsExecutable);
  const RealPathFn& real = ctx.real_path ? ctx.real_path : RealPathFn(SystemRealPath);
  auto probe = [&](const std::string& candidate, size_t name_at) {
    if (!injected) return ProbeCandidate(candidate, name_at, &r.real_path, ctx.scan);
    if (!is_exec(candidate)) return false;
    r.real_path = real(candidate);
    return true;
  };
  std::string found;
  if (word.find('/') != std::string::npos || word == "~" || word.starts_with("~/")) {
    std::string path = word;
    if (path == "~" || path.starts_with("~/")) path = ctx.home + path.substr(1);
    if (path.empty() || path[0] != '/') path = ctx.cwd + "/" + path;
    r.cwd_path = NormalizePosixPath(path);
    const size_t slash = r.cwd_path.find_last_of('/');
    if (probe(r.cwd_path, slash + 1)) found = r.cwd_path;
  } else {
    r.via_path = true;
    const std::vector<std::string> split =
        ctx.path_entries.empty() ? SplitPathList(ctx.path) : std::vector<std::string>();
    const std::vector<std::string>& dirs = ctx.path_entries.empty() ? split : ctx.path_entries;
    for (const std::string& dir : dirs) {
      if (dir.empty() || dir[0] != '/') continue;  // never relative PATH entries
      const bool scanned = ctx.scan != nullptr && !injected && IsCleanAbsolute(dir);
      if (scanned && !ctx.scan->MayContain(dir, word)) continue;
      std::string p = dir + "/" + word;
      if (!IsCleanAbsolute(dir)) p = NormalizePosixPath(p);
      errno = 0;  // ENOENT below means the lstat found no entry at all
      if (probe(p, p.size() - word.size())) {
        found = std::move(p);
        break;
      }
      if (scanned && errno == ENOENT) ctx.scan->RecordAbsent(dir, word);
    }
  }
  if (found.empty()) {
    r.real_path.clear();
    return r;
  }
  r.resolved_path = found;
  if (r.real_path.empty()) r.real_path = found;
  return r;
}

SegmentTarget ResolveSegment(const std::vector<std::string>& argv, const ResolveContext& ctx) {
  SegmentTarget t;
  t.argv = argv;
  if (argv.empty()) {
    t.blocked = "empty command";
    return t;
  }
  size_t at = 0;
  for (int depth = 0;; ++depth) {
    ExecutableResolution here = ResolveExecutable(argv[at], ctx);
    t.commands.emplace_back(at, here);
    const std::string name = CommandName(argv[at]);
    if (IsBlockedWrapper(name)) {
      t.blocked = name + " is never allowed automatically";
      break;
    }
    if (!IsDispatchWrapper(name)) break;
    if (depth >= kMaxDispatchWrapperDepth) {
      t.blocked = "more than " + std::to_string(kMaxDispatchWrapperDepth) + " nested wrappers";
      break;
    }
    Unwrap u = UnwrapDispatch(name, argv, at);
    if (!u.blocked.empty()) {
      t.blocked = u.blocked;
      break;
    }
    at = u.next;
  }
  t.command_index = at;
  t.wrappers = t.commands.size() - 1;
  t.effective_argv.assign(argv.begin() + static_cast<std::ptrdiff_t>(at), argv.end());
  t.execution = t.commands.back().second;
  t.policy = t.execution;
  if (!t.blocked.empty()) return t;
  const std::string invoked = CommandName(t.effective_argv[0]);
  if (IsMultiplexer(invoked)) {
    // busybox sh -c ...: the policy target stays busybox, what runs is the applet's shell.
    if (t.effective_argv.size() > 1 && IsShellName(CommandName(t.effective_argv[1]))) {
      t.effective_argv.erase(t.effective_argv.begin());
      t.command_index = at + 1;
      t.multiplexed = true;
    } else {
      t.blocked = invoked + " is a multi-call binary: its allowlist entry does not cover " +
                  (t.effective_argv.size() > 1 ? "the applet \"" + t.effective_argv[1] + "\""
                                               : std::string("its applets"));
    }
    return t;
  }
  // ls -> busybox: an applet under its own name. A shell applet is judged as a shell.
  const std::string real = CommandName(t.execution.real_path);
  if (IsMultiplexer(real) && !IsShellName(invoked)) {
    t.blocked = "\"" + t.effective_argv[0] + "\" is an applet of the multi-call binary " +
                t.execution.real_path + ": its allowlist entry does not cover its applets";
  }
  return t;
}

}  // namespace sandrun::policy

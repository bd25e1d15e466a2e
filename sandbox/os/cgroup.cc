#include "sandbox/os/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#include "sandbox/os/file.h"
#include "sandbox/os/proc_table.h"

namespace sandrun {
namespace {

using std::chrono::milliseconds;

constexpr char kPrefix[] = "sandrun-";
constexpr milliseconds kFreezeWait{200};
constexpr milliseconds kStaleKillWait{1000};

// Run cgroups of this process that exist, for the release at exit, and the directories whose
// removal failed, retried by the next Create.
struct Registry {
  std::mutex mu;
  std::set<RunCgroup*> live;
  std::vector<std::string> retry;
};
Registry& Reg() {
  static auto* registry = new Registry();  // never destroyed: used from atexit
  return *registry;
}

// Under the registry's lock, so that no run cgroup is destroyed meanwhile (a destructor takes
// itself out of the registry first). Lock order: the registry, then a cgroup's own.
void ReleaseAllAtExit() {
  std::lock_guard<std::mutex> lock(Reg().mu);
  for (RunCgroup* cgroup : Reg().live) (void)cgroup->Release();
}

void RetryLater(const std::string& dir) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  Reg().retry.push_back(dir);
}

// "/a\040b" in mountinfo is "/a b".
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    bool octal = s[i] == '\\' && i + 3 < s.size();
    for (size_t k = 1; octal && k <= 3; ++k) octal = s[i + k] >= '0' && s[i + k] <= '7';
    if (octal) {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// The cgroup2 mount point and the hierarchy path mounted there ("/" unless a namespace or a
// bind mount shows a subtree).
Result<std::pair<std::string, std::string>> FindCgroup2Mount() {
  SANDRUN_ASSIGN_OR_RETURN(std::string info, ReadFile("/proc/self/mountinfo", 1u << 20));
  std::istringstream in(info);
  for (std::string line; std::getline(in, line);) {
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream after(line.substr(dash + 3));
    std::string fstype;
    after >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, dev, root, mount_point;
    fields >> id >> parent >> dev >> root >> mount_point;
    return std::make_pair(Unescape(mount_point), Unescape(root));
  }
  return Error(ErrorCode::kNotFound, "no cgroup2 file system is mounted");
}

// This process's path in the cgroup2 hierarchy ("0::/path" in /proc/self/cgroup).
Result<std::string> OwnCgroup2Path() {
  SANDRUN_ASSIGN_OR_RETURN(std::string text, ReadFile("/proc/self/cgroup", 1u << 16));
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return Error(ErrorCode::kNotFound, "this process has no cgroup2 path");
}

Status WriteString(int fd, std::string_view text, const std::string& what) {
  ssize_t n = ::write(fd, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size())) return Error::FromErrno(errno, what);
  return Ok();
}

Status WriteFileText(const std::string& path, std::string_view text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + path);
  return WriteString(fd.get(), text, "write " + path);
}

// The value of `key` in a "key value" file such as cgroup.events; -1 if absent or unreadable.
int ReadKey(int fd, std::string_view key) {
  char buf[512];
  ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  std::string_view text(buf, static_cast<size_t>(n));
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (line.size() > key.size() + 1 && line.substr(0, key.size()) == key &&
        line[key.size()] == ' ') {
      return std::atoi(std::string(line.substr(key.size() + 1)).c_str());
    }
    pos = end + 1;
  }
  return -1;
}

int ReadKeyAt(const std::string& path, std::string_view key) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  return fd.valid() ? ReadKey(fd.get(), key) : -1;
}

// `dir` and every cgroup below it, parents first.
void CollectTree(const std::string& dir, std::vector<std::string>& out) {
  out.push_back(dir);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> subdirs;
  while (dirent* e = ::readdir(d)) {
    if (e->d_type != DT_DIR || std::strcmp(e->d_name, ".") == 0 ||
        std::strcmp(e->d_name, "..") == 0) {
      continue;
    }
    subdirs.push_back(dir + "/" + e->d_name);
  }
  ::closedir(d);
  for (const auto& sub : subdirs) CollectTree(sub, out);
}

std::vector<pid_t> ProcsOf(const std::string& dir) {
  std::vector<pid_t> pids;
  auto text = ReadFile(dir + "/cgroup.procs", 1u << 22);
  if (!text) return pids;
  std::istringstream in(*text);
  for (long pid = 0; in >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

// Freezes `dir` (recursively, by the kernel) and waits briefly until it is frozen. False when
// freezing is unavailable (no cgroup.freeze before Linux 5.2).
bool Freeze(const std::string& dir) {
  if (!WriteFileText(dir + "/cgroup.freeze", "1")) return false;
  Deadline until = Deadline::After(kFreezeWait);
  while (ReadKeyAt(dir + "/cgroup.events", "frozen") == 0 && !until.expired()) ::usleep(1000);
  return true;
}

void Thaw(const std::string& dir) { (void)WriteFileText(dir + "/cgroup.freeze", "0"); }

// Signals every process in `dir` and below, frozen so that the member list stays true while it
// is being signalled.
void SignalEach(const std::string& dir, int sig) {
  bool frozen = Freeze(dir);
  std::vector<std::string> tree;
  CollectTree(dir, tree);
  for (const auto& d : tree) {
    for (pid_t pid : ProcsOf(d)) ::kill(pid, sig);
  }
  if (frozen) Thaw(dir);
}

void KillAll(const std::string& dir, bool has_kill) {
  if (has_kill && WriteFileText(dir + "/cgroup.kill", "1")) return;
  SignalEach(dir, SIGKILL);  // a frozen process dies from SIGKILL too
}

bool WaitUnpopulated(const std::string& dir, const Deadline& deadline) {
  for (;;) {
    int populated = ReadKeyAt(dir + "/cgroup.events", "populated");
    if (populated <= 0) return true;  // empty, or gone
    if (deadline.expired()) return false;
    ::usleep(2000);
  }
}

// rmdir of `dir` and every cgroup below it, deepest first.
Status RemoveTree(const std::string& dir) {
  std::vector<std::string> tree;
  CollectTree(dir, tree);
  for (auto it = tree.rbegin(); it != tree.rend(); ++it) {
    if (::rmdir(it->c_str()) != 0 && errno != ENOENT)
      return Error::FromErrno(errno, "rmdir " + *it);
  }
  return Ok();
}

struct RunName {
  long pid = 0;
  unsigned long long start = 0;
  bool keep = false;
};

// "sandrun-<pid>-<start>-<n>", or "sandrun-keep-<pid>-<start>-<n>" for a run meant to outlive
// its owner.
bool ParseRunName(const char* name, RunName* out) {
  unsigned n = 0;
  int used = 0;
  out->keep = std::strncmp(name, "sandrun-keep-", 13) == 0;
  const char* rest =
      out->keep ? name + 13 : name + (std::strncmp(name, "sandrun-", 8) == 0 ? 8 : 0);
  if (rest == name) return false;
  if (std::sscanf(rest, "%ld-%llu-%u%n", &out->pid, &out->start, &n, &used) != 3) return false;
  return rest[used] == '\0';
}

uint64_t OwnStartTicks() {
  static const uint64_t start = [] {
    auto self = ReadProcStat(::getpid());
    return self ? self->start_ticks : 0;
  }();
  return start;
}

std::string NextRunPath(const std::string& parent, bool keep) {
  static std::atomic<unsigned> counter{0};
  return parent + "/" + kPrefix + (keep ? "keep-" : "") + std::to_string(::getpid()) + "-" +
         std::to_string(OwnStartTicks()) + "-" + std::to_string(++counter);
}

CgroupSupport Probe() {
  CgroupSupport s;
  auto mount = FindCgroup2Mount();
  if (!mount) {
    s.why_not = mount.error().ToString();
    return s;
  }
  auto own = OwnCgroup2Path();
  if (!own) {
    s.why_not = own.error().ToString();
    return s;
  }
  const auto& [mount_point, mount_root] = *mount;
  std::string rel = *own;
  if (mount_root != "/") {
    if (rel.rfind(mount_root, 0) != 0) {
      s.why_not = "this process's cgroup " + rel + " is outside the cgroup2 mount at " +
                  mount_point + " (which shows " + mount_root + ")";
      return s;
    }
    rel = rel.substr(mount_root.size());
  }
  if (rel == "/") rel.clear();
  std::string parent = mount_point + rel;
  struct stat st {};
  if (::stat((parent + "/cgroup.procs").c_str(), &st) != 0) {
    s.why_not =
        "this process's cgroup " + parent + " is not reachable (" + std::strerror(errno) + ")";
    return s;
  }
  // Creating a run cgroup needs the directory; moving a child out of this cgroup into it needs
  // this cgroup's cgroup.procs (their common ancestor's).
  if (::access(parent.c_str(), W_OK) != 0 || ::access((parent + "/cgroup.procs").c_str(), W_OK)) {
    s.why_not = "cannot create cgroups in " + parent + " (" + std::strerror(errno) +
                "): not root and no delegated cgroup subtree";
    return s;
  }
  s.usable = true;
  s.parent = parent;
  return s;
}

struct SupportState {
  std::mutex mu;
  CgroupSupport support = Probe();
};
SupportState& Support() {
  static auto* state = new SupportState();  // never destroyed: used from atexit
  return *state;
}

}  // namespace

CgroupSupport RunCgroupSupport() {
  std::lock_guard<std::mutex> lock(Support().mu);
  return Support().support;
}

void MarkRunCgroupsUnusable(const std::string& why) {
  std::lock_guard<std::mutex> lock(Support().mu);
  Support().support.usable = false;
  Support().support.why_not = why;
}

namespace {

// Moves every process of the run cgroup `dir` (frozen meanwhile, so none forks past the move)
// up to `parent`, untracked from then on, and removes `dir`.
Status ReleaseDir(const std::string& parent, const std::string& dir) {
  bool frozen = Freeze(dir);
  std::vector<std::string> tree;
  CollectTree(dir, tree);
  UniqueFd to(::open((parent + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  for (const auto& d : tree) {
    for (pid_t pid : ProcsOf(d)) {
      if (to.valid()) (void)WriteString(to.get(), std::to_string(pid), "move");
    }
  }
  if (frozen) Thaw(dir);
  return RemoveTree(dir);
}

}  // namespace

void RemoveStaleRunCgroups(const std::string& parent) {
  DIR* d = ::opendir(parent.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale, kept;
  while (dirent* e = ::readdir(d)) {
    RunName name;
    if (e->d_type != DT_DIR || !ParseRunName(e->d_name, &name)) continue;
    auto owner = ReadProcStat(static_cast<pid_t>(name.pid));
    if (owner && owner->start_ticks == name.start) continue;  // its owner runs: not ours to touch
    (name.keep ? kept : stale).push_back(parent + "/" + e->d_name);
  }
  ::closedir(d);
  // Runs their owner was told to leave running (serve --keep-host-processes): released, as
  // the owner would have at a clean exit, never killed.
  for (const auto& dir : kept) (void)ReleaseDir(parent, dir);
  for (const auto& dir : stale) {
    bool has_kill = ::access((dir + "/cgroup.kill").c_str(), F_OK) == 0;
    KillAll(dir, has_kill);
    (void)WaitUnpopulated(dir, Deadline::After(kStaleKillWait));
    (void)RemoveTree(dir);
  }
}

Result<std::unique_ptr<RunCgroup>> RunCgroup::Create(const CgroupSupport& support, bool keep) {
  if (!support.usable) return Error(ErrorCode::kNotFound, "no usable cgroup2: " + support.why_not);
  static std::once_flag once;
  std::call_once(once, [&] {
    RemoveStaleRunCgroups(support.parent);
    std::atexit(ReleaseAllAtExit);
  });
  {
    std::vector<std::string> retry;
    {
      std::lock_guard<std::mutex> lock(Reg().mu);
      retry.swap(Reg().retry);
    }
    for (const auto& dir : retry) {
      if (!RemoveTree(dir)) RetryLater(dir);
    }
  }
  std::unique_ptr<RunCgroup> cgroup(new RunCgroup());
  cgroup->parent_ = support.parent;
  cgroup->path_ = NextRunPath(support.parent, keep);
  if (::mkdir(cgroup->path_.c_str(), 0755) != 0) {
    return Error::FromErrno(errno, "mkdir " + cgroup->path_);
  }
  cgroup->has_kill_ = ::access((cgroup->path_ + "/cgroup.kill").c_str(), F_OK) == 0;
  cgroup->dir_.reset(::open(cgroup->path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  cgroup->procs_.reset(::open((cgroup->path_ + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  cgroup->events_.reset(::open((cgroup->path_ + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
  if (!cgroup->dir_.valid() || !cgroup->procs_.valid() || !cgroup->events_.valid()) {
    Error e = Error::FromErrno(errno, "open " + cgroup->path_ + "{,/cgroup.procs,/cgroup.events}");
    ::rmdir(cgroup->path_.c_str());
    return e;
  }
  std::lock_guard<std::mutex> lock(Reg().mu);
  Reg().live.insert(cgroup.get());
  return cgroup;
}

RunCgroup::~RunCgroup() {
  {
    std::lock_guard<std::mutex> lock(Reg().mu);
    Reg().live.erase(this);
  }
  (void)Remove(Deadline::After(std::chrono::seconds(2)));
}

Status RunCgroup::Signal(int sig) {
  std::lock_guard<std::mutex> lock(mu_);
  if (removed_) return Ok();
  if (sig == SIGKILL) {
    KillAll(path_, has_kill_);
  } else {
    SignalEach(path_, sig);
  }
  return Ok();
}

Result<bool> RunCgroup::Populated() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (removed_) return false;
  int populated = ReadKey(events_.get(), "populated");
  if (populated < 0) return Error::FromErrno(errno, "read " + path_ + "/cgroup.events");
  return populated != 0;
}

Status RunCgroup::Remove(const Deadline& deadline) {
  bool empty = false;
  Status removed = Ok();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (removed_) return Ok();
    KillAll(path_, has_kill_);
    empty = WaitUnpopulated(path_, deadline);
    removed = RemoveTree(path_);
    removed_ = true;  // a failed rmdir is retried by the next Create, not by us
    CloseDescriptors();
  }
  if (removed) return Ok();
  RetryLater(path_);
  if (!empty) return Error(ErrorCode::kTimeout, "processes of " + path_ + " are still dying");
  return removed;
}

Status RunCgroup::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  if (removed_) return Ok();
  Status removed = ReleaseDir(parent_, path_);
  removed_ = true;
  CloseDescriptors();
  return removed;
}

void RunCgroup::CloseDescriptors() {
  dir_.reset();
  procs_.reset();
  events_.reset();
}

}  // namespace sandrun

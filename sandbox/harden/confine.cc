#include "sandbox/harden/confine.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sandbox/base/strings.h"
#include "sandbox/harden/probe_child.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::harden {
namespace {

// Writes `text` to a /proc file in one write(2), as the kernel wants for uid_map and friends.
int WriteProcFile(const char* path, const char* text, size_t size) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = ::write(fd, text, size);
  int err = n == static_cast<ssize_t>(size) ? 0 : (n < 0 ? errno : EIO);
  ::close(fd);
  return err;
}

bool AcceptablePath(const std::string& p) {
  if (p.empty() || p[0] != '/' || p.find('\0') != std::string::npos) return false;
  // ".." would let one entry name a different place than the one the caller checked.
  size_t pos = 0;
  while ((pos = p.find("..", pos)) != std::string::npos) {
    const bool starts = pos == 0 || p[pos - 1] == '/';
    const bool ends = pos + 2 == p.size() || p[pos + 2] == '/';
    if (starts && ends) return false;
    pos += 2;
  }
  return true;
}

// A path that is not there (or not reachable) when the command starts has nothing to protect.
bool Absent(int err) { return err == ENOENT || err == ENOTDIR; }

struct ProbeReport {
  int32_t err = 0;
  char step[60] = {};
};

}  // namespace

Result<ConfinePlan> PrepareConfinement(const ConfineRequest& request) {
  ConfinePlan plan;
  plan.user_namespace = request.user_namespace;
  if (request.user_namespace) {
    const uid_t uid = request.map_uid.value_or(::geteuid());
    const gid_t gid = request.map_gid.value_or(::getegid());
    plan.uid_map = std::to_string(uid) + " " + std::to_string(uid) + " 1\n";
    plan.gid_map = std::to_string(gid) + " " + std::to_string(gid) + " 1\n";
  }
  auto add = [](const std::vector<std::string>& in, std::vector<std::string>* out) -> Status {
    for (const std::string& p : in) {
      if (!AcceptablePath(p)) {
        return Error(ErrorCode::kInvalidArgument,
                     "confinement path \"" + p + "\" is not an absolute path without \"..\"");
      }
      std::string clean = p;
      while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
      if (std::find(out->begin(), out->end(), clean) == out->end()) out->push_back(clean);
    }
    return Ok();
  };
  SANDRUN_RETURN_IF_ERROR(add(request.read_only, &plan.read_only));
  SANDRUN_RETURN_IF_ERROR(add(request.masked, &plan.masked));
  return plan;
}

// Between fork and exec: raw system calls on data prepared in the parent, nothing allocated.
int ApplyConfinement(const ConfinePlan& plan, const char** step) {
  if (plan.user_namespace) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      *step = "confine: unshare user namespace";
      return errno;
    }
    // The runner is not dumpable (so same-uid commands cannot reach it through /proc), which
    // makes this child's /proc/self files root's: dumpable again, in this child's own memory
    // (ChildSteps::own_memory), to write its maps. execve resets it anyway.
    if (::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) {
      *step = "confine: set dumpable";
      return errno;
    }
    // An unprivileged process may map only its own ids, and a gid map only after setgroups is
    // denied (user_namespaces(7)).
    if (int err = WriteProcFile("/proc/self/setgroups", "deny", 4); err != 0) {
      *step = "confine: deny setgroups";
      return err;
    }
    if (int err = WriteProcFile("/proc/self/uid_map", plan.uid_map.data(), plan.uid_map.size());
        err != 0) {
      *step = "confine: write uid_map";
      return err;
    }
    if (int err = WriteProcFile("/proc/self/gid_map", plan.gid_map.data(), plan.gid_map.size());
        err != 0) {
      *step = "confine: write gid_map";
      return err;
    }
  } else if (::unshare(CLONE_NEWNS) != 0) {
    *step = "confine: unshare mount namespace";
    return errno;
  }
  // Nothing mounted below may propagate to the host's namespace (a shared "/" would carry the
  // masks and read-only binds out); host mounts still propagate in.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    *step = "confine: make mounts private";
    return errno;
  }
  for (const std::string& path : plan.read_only) {
    if (::mount(path.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      if (Absent(errno)) continue;
      *step = "confine: bind read-only path";
      return errno;
    }
    struct mount_attr attr {};
    attr.attr_set = MOUNT_ATTR_RDONLY;
    if (::syscall(SYS_mount_setattr, AT_FDCWD, path.c_str(), AT_RECURSIVE, &attr, sizeof(attr)) !=
        0) {
      *step = "confine: make path read-only";
      return errno;
    }
  }
  for (const std::string& path : plan.masked) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (Absent(errno)) continue;
      *step = "confine: stat masked path";
      return errno;
    }
    int rc = S_ISDIR(st.st_mode) ? ::mount("tmpfs", path.c_str(), "tmpfs",
                                           MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                           "size=4k,nr_inodes=8,mode=0555")
                                 : ::mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr);
    if (rc != 0) {
      if (Absent(errno)) continue;
      *step = "confine: mask path";
      return errno;
    }
  }
  return 0;
}

Status ProbeConfinement(bool user_namespace) {
  ConfineRequest request;
  request.user_namespace = user_namespace;
  SANDRUN_ASSIGN_OR_RETURN(ConfinePlan plan, PrepareConfinement(request));
  SANDRUN_ASSIGN_OR_RETURN(ProbeReport report,
                           RunProbeChild<ProbeReport>("the confinement probe", [&](ProbeReport* r) {
                             const char* step = "confine";
                             r->err = ApplyConfinement(plan, &step);
                             if (r->err != 0) CopyStep(r->step, step);
                           }));
  if (report.err != 0) {
    return Error::FromErrno(report.err,
                            std::string(report.step, strnlen(report.step, sizeof(report.step))));
  }
  return Ok();
}

Result<Identity> ResolveIdentity(const std::string& raw) {
  const std::string spec = Trim(raw);
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "tools.exec.hostUser \"" + raw + "\": " + why);
  };
  if (spec.empty()) return bad("empty");
  auto parse_id = [](std::string_view s, uint32_t* out) {
    if (s.empty() || s.size() > 10) return false;
    uint64_t v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    if (v >= 0xFFFFFFFFu) return false;  // (uid_t)-1 means "unchanged" to the kernel
    *out = static_cast<uint32_t>(v);
    return true;
  };
  Identity id;
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  const size_t colon = spec.find(':');
  uint32_t uid = 0;
  if (parse_id(std::string_view(spec).substr(0, colon), &uid)) {
    id.uid = uid;
    id.gid = uid;
    if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
      id.gid = found->pw_gid;
      id.name = found->pw_name;
      id.home = found->pw_dir;
    }
    if (colon != std::string::npos) {
      uint32_t gid = 0;
      if (!parse_id(std::string_view(spec).substr(colon + 1), &gid)) {
        return bad("expected NAME, UID or UID:GID");
      }
      id.gid = gid;
    }
  } else {
    if (colon != std::string::npos) return bad("expected NAME, UID or UID:GID");
    if (::getpwnam_r(spec.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
      return bad("no such user in the passwd database");
    }
    id.uid = found->pw_uid;
    id.gid = found->pw_gid;
    id.name = found->pw_name;
    id.home = found->pw_dir;
  }
  if (id.uid == 0 || id.gid == 0) {
    return bad(
        "resolves to uid or gid 0; host commands of a root runner never run as root unless the "
        "host profile keeps the runner's identity (profiles/host/privileged.json)");
  }
  return id;
}

// Raw system calls: glibc's set*id wrappers signal every thread of the process, and this child
// shares the (multi-threaded) parent's memory.
int ApplyIdentity(const Identity& identity, const char** step) {
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) {
    *step = "identity: drop supplementary groups";
    return errno;
  }
  if (::syscall(SYS_setresgid, identity.gid, identity.gid, identity.gid) != 0) {
    *step = "identity: setresgid";
    return errno;
  }
  if (::syscall(SYS_setresuid, identity.uid, identity.uid, identity.uid) != 0) {
    *step = "identity: setresuid";
    return errno;
  }
  return 0;
}

}  // namespace sandrun::harden

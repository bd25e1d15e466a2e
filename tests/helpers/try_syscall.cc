// try_syscall NAME: performs one system call (or one small piece of ordinary work) with harmless
// arguments and exits with its errno, or 0 when it succeeded. Run under a host profile, it shows
// what the filter and the capability drop let through (bubblewrap's try-syscall idea).
//
// Exit codes: 0 success; 1..199 the errno; 200 usage; 201 a setup step of the helper failed
// (not the call under test), so a helper problem never looks like EPERM (1).
//
// Names: mount unshare ptrace kexec_load bpf init_module clone3 chroot keyctl personality
//        getpid files pipe fork exec status
//   ptrace      attaches to a child of its own (another process), then kills it
//   files       create, write, read back and remove a file in $TMPDIR or /tmp
//   pipe        write and read through a pipe
//   fork        fork a child and reap it
//   exec        run /bin/true (or $TRY_SYSCALL_TRUE) in a forked child
//   status      print the Cap*/NoNewPrivs/Seccomp lines of /proc/self/status, exit 0
#include <fcntl.h>
#include <linux/bpf.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kUsage = 200;
constexpr int kSetup = 201;

int Result(long rc) { return rc == 0 || rc > 0 ? 0 : (errno > 0 && errno < 200 ? errno : kSetup); }

int TryPtrace() {
  pid_t child = ::fork();
  if (child < 0) return kSetup;
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  long rc = ::ptrace(PTRACE_ATTACH, child, nullptr, nullptr);
  int err = rc == 0 ? 0 : errno;
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  return err;
}

int TryFiles() {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/try_syscall." +
                     std::to_string(::getpid());
  int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  const char text[] = "hello";
  char back[sizeof(text)] = {};
  bool ok = ::write(fd, text, sizeof(text)) == static_cast<ssize_t>(sizeof(text)) &&
            ::pread(fd, back, sizeof(back), 0) == static_cast<ssize_t>(sizeof(back)) &&
            std::memcmp(text, back, sizeof(text)) == 0;
  int err = ok ? 0 : (errno != 0 ? errno : kSetup);
  ::close(fd);
  if (::unlink(path.c_str()) != 0 && err == 0) err = errno;
  return err;
}

int TryPipe() {
  int fds[2];
  if (::pipe(fds) != 0) return errno;
  char c = 0;
  bool ok = ::write(fds[1], "x", 1) == 1 && ::read(fds[0], &c, 1) == 1 && c == 'x';
  ::close(fds[0]);
  ::close(fds[1]);
  return ok ? 0 : kSetup;
}

int TryFork(bool exec) {
  pid_t child = ::fork();
  if (child < 0) return errno;
  if (child == 0) {
    if (exec) {
      const char* path = std::getenv("TRY_SYSCALL_TRUE");
      if (path == nullptr) path = "/bin/true";
      ::execl(path, path, static_cast<char*>(nullptr));
      ::_exit(errno > 0 && errno < 200 ? errno : kSetup);
    }
    ::_exit(0);
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child) return kSetup;
  if (!WIFEXITED(status)) return kSetup;
  return WEXITSTATUS(status);
}

int PrintStatus() {
  FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return kSetup;
  char line[256];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "Cap", 3) == 0 || std::strncmp(line, "NoNewPrivs", 10) == 0 ||
        std::strncmp(line, "Seccomp", 7) == 0) {
      std::fputs(line, stdout);
    }
  }
  std::fclose(f);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: try_syscall NAME\n");
    return kUsage;
  }
  const std::string name = argv[1];
  errno = 0;
  if (name == "mount") {
    // A bind mount of /proc onto a path that does not exist: ENOENT if it were allowed.
    return Result(::mount("/proc", "/nonexistent-try-syscall", nullptr, MS_BIND, nullptr));
  }
  if (name == "unshare") return Result(::unshare(CLONE_NEWUSER));  // only this process, dropped
  if (name == "ptrace") return TryPtrace();
  if (name == "kexec_load") {
    // Invalid flags: EINVAL if the kernel got as far as looking at them.
    return Result(::syscall(SYS_kexec_load, 0UL, 0UL, nullptr, 0xdead0000UL));
  }
  if (name == "bpf") {
    // An invalid command: EINVAL if the call is allowed at all.
    union bpf_attr attr;
    std::memset(&attr, 0, sizeof(attr));
    return Result(::syscall(SYS_bpf, 0x7fff, &attr, sizeof(attr)));
  }
  if (name == "init_module") {
    // An empty image: ENOEXEC (or EFAULT) if module loading were allowed.
    return Result(::syscall(SYS_init_module, nullptr, 0UL, ""));
  }
  if (name == "clone3") return Result(::syscall(SYS_clone3, nullptr, 0UL));
  if (name == "chroot") return Result(::chroot("/"));
  if (name == "keyctl") return Result(::syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
  if (name == "personality") return Result(::personality(ADDR_NO_RANDOMIZE));  // ASLR off
  if (name == "getpid") return Result(::getpid() > 0 ? 0 : -1);
  if (name == "files") return TryFiles();
  if (name == "pipe") return TryPipe();
  if (name == "fork") return TryFork(false);
  if (name == "exec") return TryFork(true);
  if (name == "status") return PrintStatus();
  std::fprintf(stderr, "try_syscall: unknown name %s\n", name.c_str());
  return kUsage;
}

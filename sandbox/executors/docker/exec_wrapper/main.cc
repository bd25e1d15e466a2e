// sandrun-exec: the process of every sandbox exec (bind-mounted read-only into the container at
// kExecWrapperPath, exec_wrapper.h). It runs `argv[1..]` (`/bin/sh -lc -- CMD`) as its child,
// waits for it and exits with the child's exit code, so the exec looks as it did without it.
// What it adds: the Engine API reports only an exit code (128+N when the exec's process died
// from signal N, the same number `exit 139` gives), so when the child dies from a signal the
// wrapper writes that signal into the exec's record before it exits 128+N. The record also
// carries the wrapper's own pid in the container, so the tree killer needs no host /proc.
//
// The record: /dev/shm/.sandrun-exec-<token> (kTreeTokenEnv's value, 32 hex digits, random per
// exec and known only to the runner before the exec starts). /dev/shm is the world-writable
// sticky tmpfs every container has, local or remote engine alike; it is created O_EXCL |
// O_NOFOLLOW, mode 0600, so nothing planted there beforehand is followed or reused. Lines:
//   "P <pid>\n"     at start (the wrapper's pid in the container)
//   "S <signal>\n"  appended when the child died from a signal, just before exit(128+N)
// A normal exit removes the record first, so the runner, which reads the record only when the
// exit code is 129..192, finds none: `exit 139` stays exit code 139. The command runs as the
// same user and can rewrite or remove its own record: that changes only how its own end is
// described (signal N or exit code 128+N), which it could already choose by killing itself.
//
// Signals: the child gets the terminal's signals (^C, ^\, ^Z) through its process group, which
// is the wrapper's; the wrapper ignores those so that it outlives the child and reports it.
// SIGHUP (a terminal hang-up reaches only the session leader, the wrapper) and SIGTERM (meant
// for the command) are forwarded to the child. The child starts with the dispositions and mask
// the wrapper was given: handlers are installed after the fork, in the parent only.
//
// Only libc, statically linked (the image may have no libc the build host knows), no C++
// runtime: no exceptions, no allocation, no iostreams.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

constexpr char kTokenEnv[] = "SANDRUN_EXEC_TOKEN";  // kTreeTokenEnv (sandbox/os/proc_table.h)
constexpr char kRecordPrefix[] = "/dev/shm/.sandrun-exec-";
constexpr size_t kMaxToken = 64;

volatile sig_atomic_t g_child = 0;

void Forward(int sig) {
  const pid_t child = static_cast<pid_t>(g_child);
  if (child > 0) (void)kill(child, sig);
}

bool CleanToken(const char* t) {
  const size_t n = strlen(t);
  if (n == 0 || n > kMaxToken) return false;
  for (size_t i = 0; i < n; ++i) {
    const char c = t[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

// "<prefix><n>\n" into buf; returns its length.
size_t Line(char* buf, size_t size, char tag, long n) {
  const int len = snprintf(buf, size, "%c %ld\n", tag, n);
  return len > 0 && static_cast<size_t>(len) < size ? static_cast<size_t>(len) : 0;
}

void WriteAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    const ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    len -= static_cast<size_t>(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] != '/') {
    static const char usage[] = "usage: sandrun-exec /ABSOLUTE/PROGRAM [ARG...]\n";
    WriteAll(2, usage, sizeof usage - 1);
    return 125;
  }
  // The record, when the exec carries a well-formed token (the fallback is plain exit codes).
  char path[sizeof kRecordPrefix + kMaxToken] = {0};
  int record = -1;
  const char* token = getenv(kTokenEnv);
  if (token != nullptr && CleanToken(token)) {
    (void)snprintf(path, sizeof path, "%s%s", kRecordPrefix, token);
    record = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (record >= 0) {
      char line[32];
      WriteAll(record, line, Line(line, sizeof line, 'P', static_cast<long>(getpid())));
    }
  }

  // Block the forwarded signals across the fork, so none arrives before g_child is set; the
  // child restores the mask it was given before it execs.
  sigset_t forwarded, original;
  sigemptyset(&forwarded);
  sigaddset(&forwarded, SIGHUP);
  sigaddset(&forwarded, SIGTERM);
  sigprocmask(SIG_BLOCK, &forwarded, &original);
  // An ignored SIGCHLD (inherited) would reap the child unseen: the wrapper must wait for it.
  // The child gets the disposition it was given back.
  struct sigaction chld_default {
  }, chld_given{};
  chld_default.sa_handler = SIG_DFL;
  sigemptyset(&chld_default.sa_mask);
  sigaction(SIGCHLD, &chld_default, &chld_given);
  const pid_t child = fork();
  if (child < 0) {
    static const char failed[] = "sandrun-exec: fork failed\n";
    WriteAll(2, failed, sizeof failed - 1);
    if (record >= 0) (void)unlink(path);
    return 126;
  }
  if (child == 0) {
    sigaction(SIGCHLD, &chld_given, nullptr);
    sigprocmask(SIG_SETMASK, &original, nullptr);
    execv(argv[1], argv + 1);
    _exit(errno == ENOENT ? 127 : 126);
  }
  g_child = child;
  struct sigaction forward {};
  forward.sa_handler = Forward;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  sigaction(SIGHUP, &forward, nullptr);
  sigaction(SIGTERM, &forward, nullptr);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  static const int kIgnored[] = {SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE};
  for (int sig : kIgnored) sigaction(sig, &ignore, nullptr);
  sigprocmask(SIG_SETMASK, &original, nullptr);

  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return 126;
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (record >= 0) {
      char line[32];
      WriteAll(record, line, Line(line, sizeof line, 'S', sig));
    }
    return 128 + sig;  // what the engine reported for the plain shell
  }
  if (record >= 0) (void)unlink(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 126;
}

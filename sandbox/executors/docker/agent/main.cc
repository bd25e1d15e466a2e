// sandrun-agent: the sandbox's exec agent (the fast path, protocol.h). Bind-mounted read-only
// into every container at kAgentBinaryPath and run as the container's command (under the
// engine's init) as uid 0 with only CAP_SETUID and CAP_SETGID (the container's CapAdd; every
// other capability dropped, no-new-privileges, the container's seccomp filter). Usage:
//   sandrun-agent serve <dir>
// It becomes kAgentUid/kAgentGid at once, keeping CAP_SETUID/CAP_SETGID only, not dumpable,
// and serves the runner on <dir>/sock (server.h), authenticated by <dir>/secret (mode 0400, its
// own). Each command runs under a keeper (process.h) in its own session, as the command's uid
// and gid with every capability dropped before exec. A command cannot signal or ptrace the
// agent or a keeper (another uid, no CAP_KILL, not dumpable) or read the secret (the directory
// is the agent's, mode 0700). Statically linked: the image may have no libc the build host
// knows.
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "sandbox/executors/docker/agent/process.h"
#include "sandbox/executors/docker/agent/protocol.h"
#include "sandbox/executors/docker/agent/server.h"

namespace sandrun::agent {
namespace {

void Die(const char* what) {
  fprintf(stderr, "sandrun-agent: %s: %s\n", what, strerror(errno));
  _exit(1);
}

// Become the agent's own uid, keeping CAP_SETUID and CAP_SETGID (and nothing else).
void DropToAgentIdentity() {
  const uint32_t keep = (1u << CAP_SETUID) | (1u << CAP_SETGID);
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) Die("keepcaps");
  if (setgroups(0, nullptr) != 0) Die("setgroups");
  if (setresgid(kAgentGid, kAgentGid, kAgentGid) != 0) Die("setresgid");
  if (setresuid(kAgentUid, kAgentUid, kAgentUid) != 0) Die("setresuid");
  if (!SetCaps(keep)) Die("capset");
  if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) != 0) Die("keepcaps off");
  // Not dumpable: no ptrace, no /proc/<pid>/{mem,environ,fd} even for a process of this uid.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) Die("dumpable");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) Die("no_new_privs");
}

std::string ReadSecret(const std::string& dir) {
  const std::string path = dir + "/" + kSecretName;
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) Die("cannot open the secret");
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != kAgentUid ||
      (st.st_mode & 077) != 0) {
    errno = EPERM;
    Die("the secret is not the agent's own, mode 0400");
  }
  char buf[128];
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  std::string s(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (s.size() != kSecretHexLength) {
    errno = EINVAL;
    Die("the secret has the wrong length");
  }
  return s;
}

int Main(int argc, char** argv) {
  if (argc != 3 || strcmp(argv[1], "serve") != 0 || argv[2][0] != '/') {
    fprintf(stderr, "usage: sandrun-agent serve <directory>\n");
    return 2;
  }
  const std::string dir = argv[2];
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  DropToAgentIdentity();
  umask(077);
  // One agent per directory: a second one (two runners restarting it at once) leaves.
  const std::string lock = dir + "/" + kLockName;
  const int lock_fd = open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock_fd < 0) Die("cannot open the lock");
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) return 0;
  std::string secret = ReadSecret(dir);

  if (!InstallSigchldPipe()) Die("sigchld pipe");

  const std::string sock = dir + "/" + kSocketName;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (sock.size() >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    Die("socket path");
  }
  memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) Die("socket");
  (void)unlink(sock.c_str());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) Die("bind");
  if (listen(fd, 512) != 0) Die("listen");
  // Detach from the engine's exec stream: nothing more is written to it.
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    dup2(null_fd, 0), dup2(null_fd, 1), dup2(null_fd, 2);
  }
  Agent(fd, std::move(secret)).Serve();
}

}  // namespace
}  // namespace sandrun::agent

int main(int argc, char** argv) { return sandrun::agent::Main(argc, argv); }

// sandrun-agent: the sandbox's exec agent (the fast path, protocol.h). Bind-mounted read-only
// into every container at kAgentBinaryPath and started once per container by one Engine API
// exec as uid 0 with only CAP_SETUID and CAP_SETGID (the container's CapAdd; every other
// capability dropped, no-new-privileges, the container's seccomp filter). Usage:
//   sandrun-agent serve <dir>
// It then becomes kAgentUid/kAgentGid, keeping CAP_SETUID/CAP_SETGID only, and serves the
// runner on <dir>/sock, authenticated by <dir>/secret (mode 0400, its own). Each command is
// its child in its own session, as the command's uid and gid with every capability dropped
// before exec. A command cannot signal or ptrace the agent (another uid, no CAP_KILL, not
// dumpable) or read the secret (the directory is the agent's, mode 0700).
//
// Each command has a keeper: a fork of the agent (its uid, not dumpable: out of the command's
// reach) that is the subreaper of the command's tree, so every process the command starts stays
// its descendant however it detaches (setsid, double fork) until it ends; the tree kill takes
// the keeper's descendants (stopping them first, so none can fork away meanwhile).
//
// One thread, one poll loop: the listening socket, the connections, the commands' output and
// status fds, a self-pipe for SIGCHLD. Statically linked (the image may have no libc the build
// host knows).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sandbox/executors/docker/agent/protocol.h"

extern char** environ;

namespace sandrun::agent {
namespace {

int g_sigchld_pipe[2] = {-1, -1};

void OnSigchld(int) {
  const int saved = errno;
  const char b = 0;
  (void)!write(g_sigchld_pipe[1], &b, 1);
  errno = saved;
}

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void Die(const char* what) {
  fprintf(stderr, "sandrun-agent: %s: %s\n", what, strerror(errno));
  _exit(1);
}

bool SetCaps(uint32_t mask) {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  __user_cap_data_struct data[2]{};
  data[0].effective = mask;
  data[0].permitted = mask;
  return syscall(SYS_capset, &header, data) == 0;
}

bool CapsAreZero() {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  for (const auto& d : data) {
    if (d.effective != 0 || d.permitted != 0 || d.inheritable != 0) return false;
  }
  return true;
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

void SetNonBlocking(int fd) { (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// HOME of `uid` from the image's /etc/passwd, "/" when it has none (as the engine's exec does).
std::string HomeOf(uint32_t uid) {
  FILE* f = fopen("/etc/passwd", "re");
  if (f == nullptr) return "/";
  char line[1024];
  std::string home = "/";
  while (fgets(line, sizeof line, f) != nullptr) {
    char* fields[7] = {};
    int n = 0;
    char* p = line;
    fields[n++] = p;
    for (; *p != '\0' && *p != '\n' && n < 7; ++p) {
      if (*p == ':') {
        *p = '\0';
        fields[n++] = p + 1;
      }
    }
    *p = '\0';
    if (n >= 6 && strtoul(fields[2], nullptr, 10) == uid && fields[2][0] != '\0') {
      home = fields[5][0] != '\0' ? fields[5] : "/";
      break;
    }
  }
  fclose(f);
  return home;
}

struct Chunk {
  uint8_t stream;
  uint64_t offset;
  std::string data;
};

struct Conn;

struct Command {
  std::string id;
  pid_t pid = 0;
  uint32_t uid = 0;
  int out_fd = -1;  // stdout, or the PTY's master
  int err_fd = -1;
  int in_fd = -1;  // stdin pipe's write end (the PTY's master is out_fd)
  bool pty = false;
  bool kill_on_disconnect = false;
  std::deque<Chunk> chunks;  // bytes from `acked` to `end`
  uint64_t acked = 0;
  uint64_t end = 0;
  uint64_t sent = 0;  // to the attached connection
  bool reaped = false;
  int status = 0;
  pid_t keeper = 0;    // the subreaper of its tree (RunKeeper); 0 once it has exited
  int status_fd = -1;  // the keeper's reports: the wait status of `pid` (after its pid)
  // When a KILL was sent: its output is then closed soon after its end, whoever holds it.
  int64_t killed_at_ms = 0;
  std::string pending_in;  // STDIN bytes not yet written to the command
  bool stdin_eof = false;  // STDIN_EOF came: close (or ^D on a PTY) once pending_in is written
  bool timed_out = false;
  int64_t deadline_ms = 0;  // 0: none
  int64_t kill_at_ms = 0;   // after a timeout's TERM: KILL then
  int64_t grace_ms = 0;
  bool exit_sent = false;
  int64_t forget_at_ms = 0;  // once finished and unattached
  Conn* conn = nullptr;

  bool finished() const { return reaped && out_fd < 0 && err_fd < 0; }
};

struct Conn {
  int fd = -1;
  bool authed = false;
  std::string in;
  std::string out;
  Command* cmd = nullptr;
  bool closing = false;
};

struct ProcStat {
  pid_t pid, ppid, pgrp, session;
};

std::vector<ProcStat> ReadProcs() {
  std::vector<ProcStat> procs;
  DIR* d = opendir("/proc");
  if (d == nullptr) return procs;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    const char* rp = strrchr(buf, ')');  // the name may hold spaces and parentheses
    if (rp == nullptr) continue;
    char state;
    ProcStat s{};
    s.pid = atoi(e->d_name);
    if (sscanf(rp + 1, " %c %d %d %d", &state, &s.ppid, &s.pgrp, &s.session) != 4) continue;
    procs.push_back(s);
  }
  closedir(d);
  return procs;
}

class Agent {
 public:
  Agent(int listen_fd, std::string secret) : listen_fd_(listen_fd), secret_(std::move(secret)) {
    for (char** e = environ; *e != nullptr; ++e) {
      if (strncmp(*e, "HOME=", 5) != 0) base_env_.push_back(*e);
    }
  }
  [[noreturn]] void Serve();

 private:
  void Accept();
  void ReadConn(Conn& c);
  void WriteConn(Conn& c);
  void Handle(Conn& c, Op op, const std::string& payload);
  void Start(Conn& c, FrameReader& r);
  void Attach(Conn& c, FrameReader& r);
  void Fail(Conn& c, const std::string& message);
  void CloseConn(Conn& c);
  void ReadOutput(Command& cmd, int* fd, uint8_t stream);
  void FlushStdin(Command& cmd);
  void Pump(Command& cmd);
  void Reap();
  void ReadStatus(Command& cmd);
  void KillTree(Command& cmd, int sig);
  void Tick(int64_t now);
  void Detach(Command& cmd);
  int64_t NextWakeMs(int64_t now) const;

  int listen_fd_;
  std::string secret_;
  std::vector<std::string> base_env_;  // the container's environment, without HOME
  std::vector<std::unique_ptr<Conn>> conns_;
  std::map<std::string, std::unique_ptr<Command>> commands_;
};

void Agent::Fail(Conn& c, const std::string& message) {
  c.out += FrameWriter(Op::kError).Str(message.substr(0, 4096)).Finish();
  c.closing = true;
}

void Agent::Detach(Command& cmd) {
  cmd.conn = nullptr;
  if (cmd.kill_on_disconnect && !cmd.finished()) KillTree(cmd, SIGKILL);
  cmd.forget_at_ms = NowMs() + kForgetAfterMs;
}

void Agent::CloseConn(Conn& c) {
  if (c.cmd != nullptr && c.cmd->conn == &c) Detach(*c.cmd);
  c.cmd = nullptr;
  if (c.fd >= 0) close(c.fd);
  c.fd = -1;
}

void Agent::Accept() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    if (conns_.size() >= 4096) {
      close(fd);
      continue;
    }
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    conns_.push_back(std::move(c));
  }
}

// The length prefix of the frame at the front of `in` (4 bytes or more).
uint32_t FrameLength(const std::string& in) {
  uint32_t len = 0;
  for (size_t i = 0; i < 4; ++i)
    len |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return len;
}

void Agent::ReadConn(Conn& c) {
  char buf[65536];
  bool eof = false;
  for (;;) {
    const ssize_t n = read(c.fd, buf, sizeof buf);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      // Before HELLO, no frame longer than a HELLO is taken in.
      if (!c.authed && c.in.size() >= 4 && FrameLength(c.in) > 300) {
        c.closing = true;
        c.out.clear();
        return;
      }
      if (c.in.size() > 2 * static_cast<size_t>(kMaxFrame)) break;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    eof = true;  // EOF or error: what came before it is still handled (a KILL, then close)
    break;
  }
  Op op;
  std::string payload;
  bool bad = false;
  while (!c.closing && TakeFrame(c.in, &op, &payload, &bad)) Handle(c, op, payload);
  if (bad || eof) c.closing = true;
  if (eof) c.out.clear();
}

void Agent::WriteConn(Conn& c) {
  while (!c.out.empty()) {
    const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    c.out.clear();
    c.closing = true;
    return;
  }
}

void Agent::Handle(Conn& c, Op op, const std::string& payload) {
  FrameReader r(payload);
  if (!c.authed) {
    if (op != Op::kHello) return Fail(c, "hello first");
    std::string_view secret = r.Str(256);
    if (!r.done() || !SecretsEqual(secret, secret_)) {
      c.closing = true;  // no answer to a wrong secret
      c.out.clear();
      return;
    }
    c.authed = true;
    c.out += FrameWriter(Op::kReady).U32(kVersion).U32(static_cast<uint32_t>(getpid())).Finish();
    return;
  }
  if (c.cmd == nullptr) {
    if (op == Op::kStart) return Start(c, r);
    if (op == Op::kAttach) return Attach(c, r);
    if (op == Op::kKill) {
      std::string id(r.Str(64));
      const uint32_t sig = r.U32();
      if (!r.done() || sig == 0 || sig >= 65) return Fail(c, "bad kill");
      auto it = commands_.find(id);
      if (it != commands_.end() && !it->second->finished())
        KillTree(*it->second, static_cast<int>(sig));
      c.closing = true;
      return;
    }
    return Fail(c, "start or attach first");
  }
  Command& cmd = *c.cmd;
  switch (op) {
    case Op::kStdin:
      // Kept until the command reads it (never a blocking write: one command that does not read
      // its input must not stall the others); the connection is not read while much is pending.
      if (!cmd.stdin_eof) cmd.pending_in.append(r.Rest());
      FlushStdin(cmd);
      return;
    case Op::kStdinEof:
      cmd.stdin_eof = true;
      FlushStdin(cmd);
      return;
    case Op::kResize: {
      winsize ws{};
      ws.ws_row = r.U16();
      ws.ws_col = r.U16();
      if (r.done() && cmd.pty && cmd.out_fd >= 0) (void)ioctl(cmd.out_fd, TIOCSWINSZ, &ws);
      return;
    }
    case Op::kSignal: {
      const uint32_t sig = r.U32();
      if (!r.done() || sig == 0 || sig >= 65) return Fail(c, "bad signal");
      if (!cmd.finished()) KillTree(cmd, static_cast<int>(sig));
      return;
    }
    case Op::kAck: {
      const uint64_t offset = r.U64();
      const uint8_t done = r.U8();
      if (!r.done() || offset > cmd.end) return Fail(c, "bad ack");
      if (offset > cmd.acked) cmd.acked = offset;
      while (!cmd.chunks.empty() &&
             cmd.chunks.front().offset + cmd.chunks.front().data.size() <= cmd.acked) {
        cmd.chunks.pop_front();
      }
      if (done != 0 && cmd.exit_sent && cmd.acked == cmd.end) {
        c.cmd = nullptr;
        cmd.conn = nullptr;
        commands_.erase(cmd.id);
      }
      return;
    }
    default:
      return Fail(c, "unexpected message");
  }
}

void Agent::FlushStdin(Command& cmd) {
  const int fd = cmd.pty ? cmd.out_fd : cmd.in_fd;  // a PTY's input is its master
  if (fd < 0) {
    cmd.pending_in.clear();
    return;
  }
  while (!cmd.pending_in.empty()) {
    const ssize_t n = write(fd, cmd.pending_in.data(), cmd.pending_in.size());
    if (n > 0) {
      cmd.pending_in.erase(0, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      return;  // polled for POLLOUT
    } else {
      cmd.pending_in.clear();  // the command closed its input
      break;
    }
  }
  if (cmd.stdin_eof) {
    if (cmd.pty) {
      const char eot = 4;
      if (cmd.out_fd >= 0) (void)!write(cmd.out_fd, &eot, 1);
      cmd.stdin_eof = false;  // once
    } else if (cmd.in_fd >= 0) {
      close(cmd.in_fd);
      cmd.in_fd = -1;
    }
  }
}

void Agent::Attach(Conn& c, FrameReader& r) {
  std::string id(r.Str(64));
  const uint64_t from = r.U64();
  if (!r.done()) return Fail(c, "bad attach");
  auto it = commands_.find(id);
  if (it == commands_.end()) return Fail(c, "no such command");
  Command& cmd = *it->second;
  const uint64_t start = from == kFromAcked ? cmd.acked : from;
  if (start < cmd.acked || start > cmd.end) return Fail(c, "output before that was acknowledged");
  if (cmd.conn != nullptr) {
    // The newer client wins (the old one is a runner that died without closing).
    cmd.conn->cmd = nullptr;
    cmd.conn->closing = true;
  }
  cmd.conn = &c;
  cmd.sent = start;
  cmd.exit_sent = false;
  c.cmd = &cmd;
  c.out += FrameWriter(Op::kStarted).U32(static_cast<uint32_t>(cmd.pid)).U64(start).Finish();
  Pump(cmd);
}

// Children: everything is prepared before fork; the child only makes system calls.
struct ChildPlan {
  std::vector<char*> argv;
  std::vector<char*> envp;
  const char* cwd;
  uint32_t uid, gid;
  bool pty;
  int in_fd, out_fd, err_fd;  // the child's ends
};

[[noreturn]] void ChildFail(const char* step) {
  const int e = errno;
  char buf[160];
  const int n = snprintf(buf, sizeof buf, "sandrun-agent: %s: %s\n", step, strerror(e));
  if (n > 0) (void)!write(2, buf, static_cast<size_t>(n));
  _exit(126);
}

[[noreturn]] void RunChild(const ChildPlan& p) {
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  // Handlers are reset by execve; what the agent ignores would stay ignored.
  for (int s : {SIGPIPE, SIGHUP, SIGCHLD}) signal(s, SIG_DFL);
  if (setsid() < 0) _exit(126);
  if (dup2(p.in_fd, 0) < 0 || dup2(p.out_fd, 1) < 0 || dup2(p.err_fd, 2) < 0) _exit(126);
  if (p.pty && ioctl(0, TIOCSCTTY, 0) != 0) ChildFail("controlling terminal");
  if (setgroups(0, nullptr) != 0) ChildFail("setgroups");
  if (setresgid(p.gid, p.gid, p.gid) != 0) ChildFail("setresgid");
  if (setresuid(p.uid, p.uid, p.uid) != 0) ChildFail("setresuid");
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  if (getresuid(&ru, &eu, &su) != 0 || getresgid(&rg, &eg, &sg) != 0 || ru != p.uid ||
      eu != p.uid || su != p.uid || rg != p.gid || eg != p.gid || sg != p.gid || ru == 0 ||
      ru == kAgentUid || rg == 0 || rg == kAgentGid) {
    errno = EPERM;
    ChildFail("switching to the command's identity");
  }
  // No uid was 0 before, so the kernel kept the capabilities: drop them all (the bounding set
  // cannot be cut without CAP_SETPCAP, which the agent never has; with nothing permitted and
  // no-new-privileges, no exec can raise one again).
  if (!SetCaps(0) || !CapsAreZero()) ChildFail("dropping capabilities");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ChildFail("no_new_privs");
  if (p.cwd[0] != '\0' && chdir(p.cwd) != 0) ChildFail(p.cwd);
  execve(p.argv[0], p.argv.data(), p.envp.data());
  const int e = errno;
  char buf[160];
  const int n = snprintf(buf, sizeof buf, "sandrun-agent: %s: %s\n", p.argv[0], strerror(e));
  if (n > 0) (void)!write(2, buf, static_cast<size_t>(n));
  _exit(e == ENOENT ? 127 : 126);
}

// vfork: the child only makes system calls on prepared data until execve (RunChild), so it
// can share the keeper's memory until then instead of copying its page tables.
__attribute__((noinline)) pid_t Spawn(const ChildPlan& plan) {
  const pid_t pid = vfork();
  if (pid == 0) RunChild(plan);
  return pid;
}

// close_range(first, last); where the kernel or filter lacks it, each fd that is open.
void CloseRange(int first, int last) {
  if (syscall(SYS_close_range, static_cast<unsigned>(first), static_cast<unsigned>(last), 0) == 0) {
    return;
  }
  if (DIR* d = opendir("/proc/self/fd")) {
    std::vector<int> fds;
    while (dirent* e = readdir(d)) {
      const int fd = atoi(e->d_name);
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd >= first && fd <= last &&
          fd != dirfd(d)) {
        fds.push_back(fd);
      }
    }
    closedir(d);
    for (int fd : fds) close(fd);
  }
}

void WriteAll(int fd, const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    const ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    len -= static_cast<size_t>(n);
  }
}

// The keeper (a fork of the agent): keeps only the command's ends and `status_fd`, becomes the
// subreaper of the command's tree, starts the command, writes its pid and then its wait status
// to `status_fd`, reaps every process of the tree and exits once none is left.
[[noreturn]] void RunKeeper(const ChildPlan& plan, int status_fd) {
  signal(SIGCHLD, SIG_DFL);
  // Everything else of the agent's is closed (another command's input, a runner's connection:
  // held open here, they would never reach EOF), with close_range between the fds kept.
  int keep[] = {2, status_fd, plan.in_fd, plan.out_fd, plan.err_fd};
  std::sort(std::begin(keep), std::end(keep));
  int from = 3;
  for (int fd : keep) {
    if (fd >= from) {
      if (fd > from) CloseRange(from, fd - 1);
      from = fd + 1;
    }
  }
  CloseRange(from, INT32_MAX);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) _exit(1);
  const pid_t child = Spawn(plan);
  close(plan.in_fd);
  if (plan.out_fd != plan.in_fd) close(plan.out_fd);
  if (plan.err_fd != plan.in_fd) close(plan.err_fd);
  const int32_t pid = child;
  WriteAll(status_fd, &pid, sizeof pid);
  if (child < 0) _exit(1);
  for (;;) {
    int status = 0;
    const pid_t p = waitpid(-1, &status, 0);
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) break;  // ECHILD: nothing of the tree is left
    if (p == child) {
      const int32_t st = status;
      WriteAll(status_fd, &st, sizeof st);
    }
  }
  _exit(0);
}

void Agent::Start(Conn& c, FrameReader& r) {
  auto cmd = std::make_unique<Command>();
  cmd->id = std::string(r.Str(64));
  const uint32_t uid = r.U32();
  const uint32_t gid = r.U32();
  const uint8_t flags = r.U8();
  winsize ws{};
  ws.ws_row = r.U16();
  ws.ws_col = r.U16();
  const uint64_t timeout_ms = r.U64();
  const uint64_t grace_ms = r.U64();
  std::string cwd(r.Str(4096));
  std::vector<std::string> argv, env;
  const uint32_t argc = r.U32();
  for (uint32_t i = 0; r.ok() && i < argc && i < 4096; ++i) argv.emplace_back(r.Str());
  const uint32_t envc = r.U32();
  for (uint32_t i = 0; r.ok() && i < envc && i < 4096; ++i) env.emplace_back(r.Str());
  if (!r.done() || argc == 0 || argc > 4096 || envc > 4096) return Fail(c, "bad start");
  if (!ValidCommandId(cmd->id)) return Fail(c, "bad command id");
  if (commands_.count(cmd->id) != 0) return Fail(c, "command id in use");
  if (uid == 0 || gid == 0 || uid == kAgentUid || gid == kAgentGid || uid == UINT32_MAX ||
      gid == UINT32_MAX) {
    return Fail(c, "refused: commands never run as root or as the agent");
  }
  if (argv[0].empty() || argv[0][0] != '/') return Fail(c, "argv[0] must be an absolute path");
  for (const auto& s : argv) {
    if (s.find('\0') != std::string::npos) return Fail(c, "NUL in argv");
  }
  for (const auto& s : env) {
    if (s.find('\0') != std::string::npos || s.find('=') == std::string::npos) {
      return Fail(c, "bad env entry");
    }
  }
  cmd->uid = uid;
  cmd->pty = (flags & kFlagPty) != 0;
  cmd->kill_on_disconnect = (flags & kFlagKillOnDisconnect) != 0;

  // The environment: the container's, HOME for the uid, then the request's.
  std::vector<std::string> envs = base_env_;
  envs.push_back("HOME=" + HomeOf(uid));
  for (const auto& e : env) {
    const std::string key = e.substr(0, e.find('=') + 1);
    for (auto it = envs.begin(); it != envs.end();) {
      it = it->compare(0, key.size(), key) == 0 ? envs.erase(it) : it + 1;
    }
    envs.push_back(e);
  }

  int child_in = -1, child_out = -1, child_err = -1;
  if (cmd->pty) {
    // The terminal is opened as the command's uid, so its slave is the command's, as with the
    // engine's exec (the agent keeps its capabilities across this nonzero-to-nonzero switch).
    if (setegid(gid) != 0 || seteuid(uid) != 0)
      return Fail(c, "cannot switch to open the terminal");
    const int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    int slave = -1;
    if (master >= 0 && unlockpt(master) == 0) {
      char name[128];
      if (ptsname_r(master, name, sizeof name) == 0)
        slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    }
    (void)seteuid(kAgentUid);
    (void)setegid(kAgentGid);
    if (master < 0 || slave < 0) {
      if (master >= 0) close(master);
      return Fail(c, std::string("cannot open a terminal: ") + strerror(errno));
    }
    if (ws.ws_row != 0 && ws.ws_col != 0) (void)ioctl(master, TIOCSWINSZ, &ws);
    cmd->out_fd = master;
    child_in = child_out = child_err = slave;
  } else {
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0) return Fail(c, "pipe");
    if (pipe2(out, O_CLOEXEC) != 0) {
      close(in[0]), close(in[1]);
      return Fail(c, "pipe");
    }
    if (pipe2(err, O_CLOEXEC) != 0) {
      close(in[0]), close(in[1]), close(out[0]), close(out[1]);
      return Fail(c, "pipe");
    }
    child_in = in[0];
    child_out = out[1];
    child_err = err[1];
    cmd->in_fd = in[1];
    cmd->out_fd = out[0];
    cmd->err_fd = err[0];
    if ((flags & kFlagStdin) == 0) {
      close(cmd->in_fd);
      cmd->in_fd = -1;
    } else {
      SetNonBlocking(cmd->in_fd);
    }
  }
  ChildPlan plan;
  for (auto& s : argv) plan.argv.push_back(s.data());
  plan.argv.push_back(nullptr);
  for (auto& s : envs) plan.envp.push_back(s.data());
  plan.envp.push_back(nullptr);
  plan.cwd = cwd.c_str();
  plan.uid = uid;
  plan.gid = gid;
  plan.pty = cmd->pty;
  plan.in_fd = child_in;
  plan.out_fd = child_out;
  plan.err_fd = child_err;
  int status[2];
  if (pipe2(status, O_CLOEXEC) != 0) {
    status[0] = status[1] = -1;
  }
  const pid_t keeper = status[0] >= 0 ? fork() : -1;
  if (keeper == 0) RunKeeper(plan, status[1]);
  int fork_errno = errno;
  if (status[1] >= 0) close(status[1]);
  close(child_in);
  if (child_out != child_in) close(child_out);
  if (child_err != child_in) close(child_err);
  int32_t pid = -1;
  if (keeper > 0) {
    // Written right after the keeper's vfork returns: a short blocking read.
    size_t got = 0;
    while (got < sizeof pid) {
      const ssize_t n = read(status[0], reinterpret_cast<char*>(&pid) + got, sizeof pid - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != sizeof pid) pid = -1;
    if (pid < 0) fork_errno = EAGAIN;
  }
  if (pid < 0) {
    if (status[0] >= 0) close(status[0]);
    if (cmd->in_fd >= 0) close(cmd->in_fd);
    if (cmd->out_fd >= 0) close(cmd->out_fd);
    if (cmd->err_fd >= 0) close(cmd->err_fd);
    errno = fork_errno;
    return Fail(c, std::string("cannot start the command: ") + strerror(fork_errno));
  }
  SetNonBlocking(cmd->out_fd);
  if (cmd->err_fd >= 0) SetNonBlocking(cmd->err_fd);
  SetNonBlocking(status[0]);
  cmd->status_fd = status[0];
  cmd->keeper = keeper;
  cmd->pid = pid;
  constexpr uint64_t kMaxTimeoutMs = uint64_t{400} * 24 * 3600 * 1000;  // beyond: none
  if (timeout_ms > 0 && timeout_ms < kMaxTimeoutMs) {
    cmd->deadline_ms = NowMs() + static_cast<int64_t>(timeout_ms);
  }
  cmd->grace_ms = static_cast<int64_t>(grace_ms > 600000 ? 600000 : grace_ms);
  cmd->conn = &c;
  c.cmd = cmd.get();
  c.out += FrameWriter(Op::kStarted).U32(static_cast<uint32_t>(pid)).U64(0).Finish();
  commands_[cmd->id] = std::move(cmd);
}

void Agent::ReadOutput(Command& cmd, int* fd, uint8_t stream) {
  char buf[kMaxChunk];
  const ssize_t n = read(*fd, buf, sizeof buf);
  if (n > 0) {
    if (!cmd.chunks.empty() && cmd.chunks.back().stream == stream &&
        cmd.chunks.back().data.size() + static_cast<size_t>(n) <= kMaxChunk) {
      cmd.chunks.back().data.append(buf, static_cast<size_t>(n));
    } else {
      cmd.chunks.push_back(Chunk{stream, cmd.end, std::string(buf, static_cast<size_t>(n))});
    }
    cmd.end += static_cast<uint64_t>(n);
    return;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  // EOF; EIO on a PTY master once the last slave holder is gone.
  close(*fd);
  if (fd == &cmd.out_fd && cmd.pty) cmd.in_fd = -1;
  *fd = -1;
}

// Sends what the attached connection has not seen, while its buffer is small, then EXIT.
void Agent::Pump(Command& cmd) {
  Conn* c = cmd.conn;
  if (c == nullptr || c->closing) return;
  for (const Chunk& ch : cmd.chunks) {
    if (c->out.size() >= 4 * kMaxChunk) return;
    const uint64_t ch_end = ch.offset + ch.data.size();
    if (ch_end <= cmd.sent) continue;
    const size_t skip = static_cast<size_t>(cmd.sent > ch.offset ? cmd.sent - ch.offset : 0);
    c->out += FrameWriter(Op::kOutput)
                  .U8(ch.stream)
                  .U64(ch.offset + skip)
                  .Rest(std::string_view(ch.data).substr(skip))
                  .Finish();
    cmd.sent = ch_end;
  }
  if (cmd.finished() && !cmd.exit_sent && cmd.sent == cmd.end) {
    int code = -1, sig = 0;
    if (WIFEXITED(cmd.status)) code = WEXITSTATUS(cmd.status);
    if (WIFSIGNALED(cmd.status)) sig = WTERMSIG(cmd.status);
    c->out +=
        FrameWriter(Op::kExit).U64(cmd.end).I32(code).I32(sig).U8(cmd.timed_out ? 1 : 0).Finish();
    cmd.exit_sent = true;
  }
}

// The agent's children are the keepers: reaped here (a command's own end comes through its
// keeper's status pipe, ReadStatus).
void Agent::Reap() {
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (auto& [id, cmd] : commands_) {
      if (cmd->keeper == pid) cmd->keeper = 0;
    }
  }
}

// The wait status of the command's first process, from its keeper; EOF without one (a keeper
// that died) ends the command without a status.
void Agent::ReadStatus(Command& cmd) {
  int32_t st = 0;
  const ssize_t n = read(cmd.status_fd, &st, sizeof st);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n == static_cast<ssize_t>(sizeof st) && !cmd.reaped) {
    cmd.reaped = true;
    cmd.status = st;
    if (cmd.conn == nullptr) cmd.forget_at_ms = NowMs() + kForgetAfterMs;
    return;
  }
  close(cmd.status_fd);
  cmd.status_fd = -1;
  if (!cmd.reaped) {
    cmd.reaped = true;
    cmd.status = -1;  // neither exited nor signalled: EXIT says code -1, signal 0
  }
}

// Every process of the command's tree: the descendants of its keeper (which are all of them:
// the keeper is their subreaper and lives until they are gone), and its process group.
std::set<pid_t> TreeOf(pid_t keeper, const std::vector<ProcStat>& procs) {
  std::set<pid_t> tree;
  if (keeper <= 0) return tree;
  std::set<pid_t> parents = {keeper};
  bool grew = true;
  while (grew) {
    grew = false;
    for (const ProcStat& p : procs) {
      if (parents.count(p.ppid) != 0 && parents.insert(p.pid).second) {
        tree.insert(p.pid);
        grew = true;
      }
    }
  }
  return tree;
}

// Signals the command's tree, as the command's uid (effective only: the agent's real and saved
// uid stay its own, so no command can signal it meanwhile), since the agent has no CAP_KILL.
// A KILL first stops every process of the tree until a pass finds no new one (a stopped
// process cannot fork), so nothing escapes by forking faster than the kill.
void Agent::KillTree(Command& cmd, int sig) {
  if (seteuid(cmd.uid) != 0) return;
  if (sig == SIGKILL && cmd.killed_at_ms == 0) cmd.killed_at_ms = NowMs();
  if (!cmd.reaped) (void)kill(-cmd.pid, sig == SIGKILL ? SIGSTOP : sig);
  std::set<pid_t> seen;
  for (int pass = 0; pass < 64; ++pass) {
    bool fresh = false;
    for (pid_t p : TreeOf(cmd.keeper, ReadProcs())) {
      if (!seen.insert(p).second) continue;
      fresh = true;
      (void)kill(p, sig == SIGKILL ? SIGSTOP : sig);
    }
    if (!fresh || sig != SIGKILL) break;
  }
  if (sig == SIGKILL) {
    if (!cmd.reaped) (void)kill(-cmd.pid, SIGKILL);
    for (pid_t p : seen) (void)kill(p, SIGKILL);
  }
  (void)seteuid(kAgentUid);
}

void Agent::Tick(int64_t now) {
  for (auto it = commands_.begin(); it != commands_.end();) {
    Command& cmd = *it->second;
    // Until it has ended and its output closed: a tree whose first process exited while
    // another holds its output open still times out (and is killed).
    if (!cmd.finished() && cmd.deadline_ms > 0 && now >= cmd.deadline_ms && !cmd.timed_out) {
      cmd.timed_out = true;
      KillTree(cmd, SIGTERM);
      cmd.kill_at_ms = now + cmd.grace_ms;
    }
    if (cmd.timed_out && cmd.kill_at_ms > 0 && now >= cmd.kill_at_ms) {
      KillTree(cmd, SIGKILL);
      cmd.kill_at_ms = 0;
    }
    // Killed and ended: whatever still holds its output (out of the tree's reach) does not keep
    // the command from ending.
    if (cmd.reaped && cmd.killed_at_ms > 0 && now - cmd.killed_at_ms >= 1000) {
      for (int* fd : {&cmd.out_fd, &cmd.err_fd}) {
        if (*fd >= 0) close(*fd);
        *fd = -1;
      }
    }
    if (cmd.conn == nullptr && cmd.finished() && cmd.forget_at_ms > 0 && now >= cmd.forget_at_ms) {
      if (cmd.in_fd >= 0 && !cmd.pty) close(cmd.in_fd);
      if (cmd.status_fd >= 0) close(cmd.status_fd);
      it = commands_.erase(it);
      continue;
    }
    ++it;
  }
}

int64_t Agent::NextWakeMs(int64_t now) const {
  int64_t next = now + 60000;
  for (const auto& [id, cmd] : commands_) {
    if (!cmd->finished() && cmd->deadline_ms > 0 && !cmd->timed_out) {
      next = std::min(next, cmd->deadline_ms);
    }
    if (cmd->kill_at_ms > 0) next = std::min(next, cmd->kill_at_ms);
    if (cmd->forget_at_ms > 0) next = std::min(next, cmd->forget_at_ms);
    if (cmd->reaped && cmd->killed_at_ms > 0 && (cmd->out_fd >= 0 || cmd->err_fd >= 0)) {
      next = std::min(next, cmd->killed_at_ms + 1000);
    }
  }
  return next - now < 0 ? 0 : next - now;
}

void Agent::Serve() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({listen_fd_, POLLIN, 0});
    fds.push_back({g_sigchld_pipe[0], POLLIN, 0});
    const size_t conn_base = fds.size();
    for (auto& c : conns_) {
      const bool full = c->cmd != nullptr && c->cmd->pending_in.size() >= kMaxUnacked;
      fds.push_back(
          {c->fd, static_cast<short>((full ? 0 : POLLIN) | (c->out.empty() ? 0 : POLLOUT)), 0});
    }
    std::vector<std::pair<Command*, int*>> outs;
    for (auto& [id, cmd] : commands_) {
      const bool room = cmd->end - cmd->acked < kMaxUnacked;
      for (int* fd : {&cmd->out_fd, &cmd->err_fd}) {
        if (*fd >= 0 && room) {
          fds.push_back({*fd, POLLIN, 0});
          outs.emplace_back(cmd.get(), fd);
        }
      }
    }
    const size_t status_base = fds.size();
    std::vector<Command*> statuses;
    for (auto& [id, cmd] : commands_) {
      if (cmd->status_fd >= 0) {
        fds.push_back({cmd->status_fd, POLLIN, 0});
        statuses.push_back(cmd.get());
      }
    }
    const size_t in_base = fds.size();
    std::vector<Command*> ins;
    for (auto& [id, cmd] : commands_) {
      const int fd = cmd->pty ? cmd->out_fd : cmd->in_fd;
      if (fd >= 0 && !cmd->pending_in.empty()) {
        fds.push_back({fd, POLLOUT, 0});
        ins.push_back(cmd.get());
      }
    }
    const int64_t now = NowMs();
    const int rc = poll(fds.data(), fds.size(), static_cast<int>(NextWakeMs(now)));
    if (rc < 0 && errno != EINTR) Die("poll");
    if (rc > 0) {
      if (fds[1].revents != 0) {
        char drain[64];
        while (read(g_sigchld_pipe[0], drain, sizeof drain) > 0) {
        }
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        const pollfd& p = fds[conn_base + conns_.size() + i];
        if (p.revents == 0) continue;
        Command& cmd = *outs[i].first;
        int* fd = outs[i].second;
        ReadOutput(cmd, fd, cmd.pty ? kPty : (fd == &cmd.out_fd ? kStdout : kStderr));
      }
      for (size_t i = 0; i < ins.size(); ++i) {
        if (fds[in_base + i].revents != 0) FlushStdin(*ins[i]);
      }
      for (size_t i = 0; i < statuses.size(); ++i) {
        if (fds[status_base + i].revents != 0) ReadStatus(*statuses[i]);
      }
      for (size_t i = 0; i < conns_.size(); ++i) {
        const pollfd& p = fds[conn_base + i];
        Conn& c = *conns_[i];
        if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) ReadConn(c);
        if (!c.out.empty()) WriteConn(c);
      }
      if (fds[0].revents != 0) Accept();
    }
    Reap();
    Tick(NowMs());
    for (auto& [id, cmd] : commands_) Pump(*cmd);
    for (auto& c : conns_) {
      if (!c->out.empty() && !c->closing) WriteConn(*c);
    }
    for (auto it = conns_.begin(); it != conns_.end();) {
      Conn& c = **it;
      if (c.closing) {
        if (!c.out.empty()) WriteConn(c);  // the last ERROR, best effort
        CloseConn(c);
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
  }
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

  if (pipe2(g_sigchld_pipe, O_CLOEXEC | O_NONBLOCK) != 0) Die("pipe");
  struct sigaction sa {};
  sa.sa_handler = OnSigchld;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, nullptr);

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

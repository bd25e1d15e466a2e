#include "sandbox/executors/docker/agent/server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <set>

#include "sandbox/executors/docker/agent/process.h"

extern char** environ;

namespace sandrun::agent {
namespace {

constexpr int64_t kKillAgainMs = 200;

int g_sigchld_pipe[2] = {-1, -1};

void OnSigchld(int) {
  const int saved = errno;
  const char b = 0;
  (void)!write(g_sigchld_pipe[1], &b, 1);
  errno = saved;
}

void SetNonBlocking(int fd) { (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// The length prefix of the frame at the front of `in` (4 bytes or more).
uint32_t FrameLength(const std::string& in) {
  uint32_t len = 0;
  for (size_t i = 0; i < 4; ++i)
    len |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return len;
}

}  // namespace

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

bool InstallSigchldPipe() {
  if (pipe2(g_sigchld_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  struct sigaction sa {};
  sa.sa_handler = OnSigchld;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  return sigaction(SIGCHLD, &sa, nullptr) == 0;
}

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
        // A killed tree whose keeper still waits for a last process stays until it is gone.
        if (cmd.killed_at_ms > 0 && cmd.keeper > 0) {
          cmd.forget_at_ms = NowMs();
        } else {
          commands_.erase(cmd.id);
        }
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
  if (it == commands_.end() || it->second->pid <= 0) return Fail(c, "no such command");
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
  if (keeper < 0) {
    if (status[0] >= 0) close(status[0]);  // the command's own fds go with it
    errno = fork_errno;
    return Fail(c, std::string("cannot start the command: ") + strerror(fork_errno));
  }
  SetNonBlocking(cmd->out_fd);
  if (cmd->err_fd >= 0) SetNonBlocking(cmd->err_fd);
  SetNonBlocking(status[0]);
  cmd->status_fd = status[0];
  cmd->keeper = keeper;
  // STARTED goes once the keeper has said the command's pid (ReadStatus), never waited for
  // here: the child can be stopped by the sandbox's user between its switch and its exec, and
  // the keeper's vfork with it; it is then killed at the start deadline.
  cmd->pid = 0;
  cmd->start_deadline_ms = NowMs() + 3000;
  constexpr uint64_t kMaxTimeoutMs = uint64_t{400} * 24 * 3600 * 1000;  // beyond: none
  if (timeout_ms > 0 && timeout_ms < kMaxTimeoutMs) {
    cmd->deadline_ms = NowMs() + static_cast<int64_t>(timeout_ms);
  }
  cmd->grace_ms = static_cast<int64_t>(grace_ms > 600000 ? 600000 : grace_ms);
  cmd->conn = &c;
  c.cmd = cmd.get();
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
  if (c == nullptr || c->closing || cmd.pid <= 0) return;  // nothing before STARTED
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
  int32_t v = 0;
  const ssize_t n = read(cmd.status_fd, &v, sizeof v);  // 4-byte writes to a pipe are atomic
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n == static_cast<ssize_t>(sizeof v) && cmd.pid == 0) {
    if (v <= 0) return Abandon(cmd, "cannot start the command");
    cmd.pid = v;
    cmd.start_deadline_ms = 0;
    if (cmd.conn != nullptr) {
      cmd.conn->out += FrameWriter(Op::kStarted).U32(static_cast<uint32_t>(v)).U64(0).Finish();
    }
    return;
  }
  if (n == static_cast<ssize_t>(sizeof v) && !cmd.reaped) {
    cmd.reaped = true;
    cmd.status = v;
    if (cmd.conn == nullptr) cmd.forget_at_ms = NowMs() + kForgetAfterMs;
    return;
  }
  close(cmd.status_fd);
  cmd.status_fd = -1;
  if (cmd.pid == 0) return Abandon(cmd, "cannot start the command");
  if (!cmd.reaped) {
    cmd.reaped = true;
    cmd.status = -1;  // neither exited nor signalled: EXIT says code -1, signal 0
  }
}

// A command that never started (its keeper failed, or its child was stopped before its exec):
// the client gets an ERROR, whatever of its tree exists is killed, and it is forgotten once
// its keeper is gone.
void Agent::Abandon(Command& cmd, const std::string& why) {
  if (cmd.conn != nullptr) {
    Fail(*cmd.conn, why);
    cmd.conn->cmd = nullptr;
    cmd.conn = nullptr;
  }
  KillTree(cmd, SIGKILL);
  cmd.pid = -1;
  cmd.reaped = true;
  for (int* fd : {&cmd.out_fd, &cmd.err_fd}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  cmd.forget_at_ms = NowMs();
}

Command::~Command() {
  for (int fd : {out_fd, err_fd, in_fd, status_fd}) {
    if (fd >= 0 && !(pty && fd == in_fd)) close(fd);
  }
}

// Signals the command's tree, as the command's uid (effective only: the agent's real and saved
// uid stay its own, so no command can signal it meanwhile), since the agent has no CAP_KILL.
// A KILL first stops every process of the tree until a pass finds no new one (a stopped
// process cannot fork), so nothing escapes by forking faster than the kill.
void Agent::KillTree(Command& cmd, int sig) {
  if (seteuid(cmd.uid) != 0) return;
  if (sig == SIGKILL && cmd.killed_at_ms == 0) cmd.killed_at_ms = NowMs();
  if (sig == SIGKILL) cmd.last_kill_ms = NowMs();
  if (!cmd.reaped && cmd.pid > 0) (void)kill(-cmd.pid, sig == SIGKILL ? SIGSTOP : sig);
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
    if (!cmd.reaped && cmd.pid > 0) (void)kill(-cmd.pid, SIGKILL);
    for (pid_t p : seen) (void)kill(p, SIGKILL);
  }
  (void)seteuid(kAgentUid);
}

void Agent::Tick(int64_t now) {
  for (auto it = commands_.begin(); it != commands_.end();) {
    Command& cmd = *it->second;
    if (cmd.pid == 0 && cmd.start_deadline_ms > 0 && now >= cmd.start_deadline_ms) {
      Abandon(cmd, "the command did not start (stopped before it ran?)");
    }
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
    // Whatever of a killed tree is still there (forked after the last pass read the table) is
    // killed again: the keeper lives until the tree is empty, so nothing is out of reach.
    if (cmd.killed_at_ms > 0 && cmd.keeper > 0 && now - cmd.last_kill_ms >= kKillAgainMs) {
      KillTree(cmd, SIGKILL);
    }
    if (cmd.reaped && cmd.killed_at_ms > 0 && now - cmd.killed_at_ms >= 1000) {
      for (int* fd : {&cmd.out_fd, &cmd.err_fd}) {
        if (*fd >= 0) close(*fd);
        *fd = -1;
      }
    }
    if (cmd.conn == nullptr && cmd.finished() && cmd.forget_at_ms > 0 && now >= cmd.forget_at_ms &&
        !(cmd.killed_at_ms > 0 && cmd.keeper > 0)) {
      it = commands_.erase(it);  // its fds close with it
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
    if (cmd->pid == 0 && cmd->start_deadline_ms > 0) next = std::min(next, cmd->start_deadline_ms);
    if (cmd->killed_at_ms > 0 && cmd->keeper > 0) {
      next = std::min(next, cmd->last_kill_ms + kKillAgainMs);
    }
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
    if (rc < 0 && errno != EINTR) {
      perror("sandrun-agent: poll");
      _exit(1);
    }
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

}  // namespace sandrun::agent

// The sandbox agent's server (agent/main.cc starts it): one thread, one poll loop over the
// listening socket, the runners' connections, the commands' output and status fds and a
// self-pipe for SIGCHLD; the protocol of protocol.h, one command per connection.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/executors/docker/agent/protocol.h"

namespace sandrun::agent {

int64_t NowMs();
// The SIGCHLD self-pipe Serve polls, and its handler.
bool InstallSigchldPipe();

struct Chunk {
  uint8_t stream;
  uint64_t offset;
  std::string data;
};

struct Conn;

struct Command {
  Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;
  ~Command();  // closes every fd it still holds

  std::string id;
  pid_t pid = 0;                  // 0 while starting (its keeper has not said yet)
  int64_t start_deadline_ms = 0;  // while starting: a child stopped before exec is killed then
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
  int64_t last_kill_ms = 0;  // a killed tree is killed again until its keeper is gone
  std::string pending_in;    // STDIN bytes not yet written to the command
  bool stdin_eof = false;    // STDIN_EOF came: close (or ^D on a PTY) once pending_in is written
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
  void Abandon(Command& cmd, const std::string& why);
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

}  // namespace sandrun::agent

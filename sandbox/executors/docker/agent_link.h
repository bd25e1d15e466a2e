// The runner's side of the sandbox agent (agent/protocol.h): a connection to the agent of one
// container, authenticated with its secret, carrying one command (START or ATTACH), and the
// host-side setup that gives a container its agent: the binary, the per-container directory
// (socket, secret), the mounts, and the readiness check.
//
// Pattern of use:
//   SANDRUN_ASSIGN_OR_RETURN(AgentLink link, AgentLink::Connect(dir, deadline));
//   SANDRUN_ASSIGN_OR_RETURN(uint32_t pid, link.Start(start));
//   while (auto event = link.Next(options)) { ... OUTPUT / EXIT ...; link.Ack(offset, done); }
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/base/deadline.h"
#include "sandbox/base/result.h"
#include "sandbox/docker/models.h"
#include "sandbox/executors/docker/agent/protocol.h"
#include "sandbox/executors/docker/exec_wrapper.h"
#include "sandbox/executors/plan.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::exec {

// Container label: the host directory of the container's agent (set at creation; absent: the
// container has no agent). Part of nothing hashed: each creation gets a fresh directory.
inline constexpr char kAgentDirLabel[] = "sandrun.agentDir";
// The host binary's name, next to the sandrun binary.
inline constexpr char kAgentBinary[] = "sandrun-agent";

// What a command is started with (START).
struct AgentStart {
  std::string id;  // 32 hex digits
  uint32_t uid = 0;
  uint32_t gid = 0;
  bool pty = false;
  bool stdin_open = false;
  bool kill_on_disconnect = false;
  uint16_t rows = 0;
  uint16_t cols = 0;
  uint64_t timeout_ms = 0;
  uint64_t kill_grace_ms = 0;
  std::string cwd;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // K=V
};

struct AgentEvent {
  enum class Kind { kOutput, kExit };
  Kind kind = Kind::kOutput;
  uint8_t stream = agent::kStdout;  // kOutput
  uint64_t offset = 0;              // kOutput: of data's first byte; kExit: the end offset
  std::string data;
  int32_t exit_code = -1;  // kExit
  int32_t signal = 0;
  bool timed_out = false;
};

class AgentLink {
 public:
  // Connects to `<dir>/sock` and authenticates with `<dir>/secret` (both on the host). An Error
  // when there is no agent answering (kIo) or it refused the secret.
  static Result<AgentLink> Connect(const std::string& dir, Deadline deadline);

  // START / ATTACH: the command's pid in the container and the offset its output resumes at,
  // or the agent's refusal.
  struct Started {
    uint32_t pid = 0;
    uint64_t offset = 0;
  };
  Result<Started> Start(const AgentStart& start, Deadline deadline);
  Result<Started> Attach(const std::string& id, uint64_t from, Deadline deadline);

  // The next OUTPUT or EXIT. kTimeout at the options' deadline, kCancelled when cancelled
  // (checked every 50 ms), kIo when the agent closed the connection.
  Result<AgentEvent> Next(const CallOptions& options);

  // Thread-safe against Next() on another thread.
  Status Stdin(std::string_view data);
  Status StdinEof();
  Status Resize(unsigned rows, unsigned cols);
  Status Signal(int signal);
  // Cumulative: skipped (Ok) when another thread is writing (its input), the next one covers it.
  Status Ack(uint64_t offset, bool done);
  // Signals command `id` over a connection of its own (KILL), so a kill gets through while the
  // command's connection is busy writing input it does not read.
  static Status Kill(const std::string& dir, const std::string& id, int signal);
  // Wakes a Next() blocked on another thread and makes every later call fail.
  void Shutdown();

  AgentLink(AgentLink&&) noexcept;
  AgentLink& operator=(AgentLink&&) noexcept;
  ~AgentLink();

 private:
  explicit AgentLink(UniqueFd fd);
  Status Write(const std::string& frame);
  Status WriteLocked(const std::string& frame);  // write_mu_ held
  Result<std::pair<agent::Op, std::string>> ReadFrame(const CallOptions& options);

  UniqueFd fd_;
  std::string in_;
  std::unique_ptr<std::mutex> write_mu_;
};

// Why a container for `spec` gets no agent ("" when it can have one): the agent needs the
// binary (`binary`, found like the exec wrapper), a runner that is root on the engine's host
// (it hands the directory to the agent's uid), and a numeric, non-root sandbox user that is not
// the agent's (sandbox.docker.user "uid:gid").
std::string AgentUnusableReason(const SandboxSpec& spec, const ExecWrapper& binary);
// The agent binary next to this program (the exec wrapper's trust checks), when the engine is
// local.
ExecWrapper FindAgentBinary(bool engine_is_local);

// A fresh directory for a new container's agent, `<state_dir>/agents/<random>`, the agent's
// (kAgentUid, mode 0700), holding its secret (mode 0400).
Result<std::string> PrepareAgentDir(const std::string& state_dir);
// Removes an agent directory (best effort); only directories under `<state_dir>/agents/`. A
// pooled container's workspace slot, named like its agent directory, goes with it.
void RemoveAgentDir(const std::string& state_dir, const std::string& dir);
// The agent directory a container's labels name, if it is one of `state_dir`'s ("" if none).
std::string AgentDirOf(const std::string& state_dir,
                       const std::map<std::string, std::string>& labels);
// Removes the agent directories of `state_dir` whose container is gone (`live`: the agent
// directories of the containers that still exist), and the workspace slots left without one.
void SweepAgentDirs(const std::string& state_dir, const std::vector<std::string>& live);

// The read-only binary at kAgentBinaryPath and the directory at kAgentDirPath.
std::vector<docker::BindMount> AgentMounts(const ExecWrapper& binary, const std::string& dir);
// The container's command when it runs the agent.
std::vector<std::string> AgentCommand();

// "uid:gid", both numeric: the ids; nullopt otherwise.
std::optional<std::pair<uint32_t, uint32_t>> ParseNumericUser(const std::string& user);

// Waits (until `deadline`) for the agent in `dir` to answer a HELLO.
Status WaitAgentReady(const std::string& dir, Deadline deadline);

}  // namespace sandrun::exec

#include "sandbox/executors/docker/agent_link.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <ctime>
#include <thread>
#include <utility>

#include "sandbox/base/strings.h"
#include "sandbox/executors/docker/host_mounts.h"
#include "sandbox/os/host_path.h"
#include "sandbox/os/mounts.h"
#include "sandbox/os/random.h"

namespace sandrun::exec {
namespace {

using agent::FrameReader;
using agent::FrameWriter;
using agent::Op;

constexpr char kAgentsDir[] = "agents";

Error Unavailable(const std::string& what) {
  return Error(ErrorCode::kIo, "sandbox agent: " + what);
}

// The agent's directory, opened without following a link and checked to be the agent's own
// (a directory of kAgentUid, mode 0700): the path keeps naming it for the /proc/self/fd path.
Result<UniqueFd> OpenAgentDir(const std::string& dir) {
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd fd, OpenNoSymlinks(dir));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno(errno, "cannot stat " + dir);
  if (!S_ISDIR(st.st_mode) || st.st_uid != agent::kAgentUid || (st.st_mode & 07777) != 0700) {
    return Unavailable(dir + " is not the agent's directory (uid " +
                       std::to_string(agent::kAgentUid) + ", mode 0700)");
  }
  return fd;
}

}  // namespace

std::optional<std::pair<uint32_t, uint32_t>> ParseNumericUser(const std::string& user) {
  const UserIds ids = ParseUser(user);
  if (!ids.uid || !ids.gid || *ids.uid > INT32_MAX || *ids.gid > INT32_MAX) return std::nullopt;
  return std::make_pair(*ids.uid, *ids.gid);
}

AgentLink::AgentLink(UniqueFd fd) : fd_(std::move(fd)), write_mu_(std::make_unique<std::mutex>()) {}
AgentLink::AgentLink(AgentLink&&) noexcept = default;
AgentLink& AgentLink::operator=(AgentLink&&) noexcept = default;
AgentLink::~AgentLink() = default;

namespace {

// The runner's own copy of a directory's secret: `<dir>.key`, next to it in the root-only
// agents directory (the copy inside is the agent's, and a compromised agent could swap it).
std::string KeyPath(const std::string& dir) { return dir + ".key"; }

Result<std::string> ReadKey(const std::string& dir) {
  const std::string path = KeyPath(dir);
  UniqueFd file(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (file.get() < 0) return Unavailable("no key " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0 || st.st_size > 128) {
    return Unavailable(path + " is not the runner's own key file");
  }
  char buf[128];
  const ssize_t n = ::read(file.get(), buf, sizeof buf);
  std::string secret(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.size() != agent::kSecretHexLength) return Unavailable("bad key in " + path);
  return secret;
}

}  // namespace

Result<AgentLink> AgentLink::Connect(const std::string& dir, Deadline deadline) {
  SANDRUN_ASSIGN_OR_RETURN(std::string secret, ReadKey(dir));
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd dir_fd, OpenAgentDir(dir));
  // The socket itself, not what a name planted in its place points to: a socket of the agent's
  // uid, connected to through its own descriptor.
  UniqueFd sock(::openat(dir_fd.get(), agent::kSocketName, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (sock.get() < 0) {
    return Unavailable(std::string("no socket in ") + dir + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(sock.get(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != agent::kAgentUid) {
    return Unavailable(dir + "/" + agent::kSocketName + " is not the agent's socket");
  }
  const std::string path = ProcFdPath(sock.get());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return Unavailable("socket path too long");
  std::copy(path.begin(), path.end(), addr.sun_path);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Error::FromErrno(errno, "sandbox agent: socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Error(ErrorCode::kIo, std::string("sandbox agent: cannot connect to ") + dir + "/" +
                                     agent::kSocketName + ": " + std::strerror(errno));
  }
  // Nothing is sent (the secret least of all) to a peer that is not the agent's uid.
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 ||
      peer.uid != agent::kAgentUid) {
    return Unavailable("the peer on " + dir + "/" + agent::kSocketName + " is not the agent");
  }
  AgentLink link(std::move(fd));
  SANDRUN_RETURN_IF_ERROR(link.Write(FrameWriter(Op::kHello).Str(secret).Finish()));
  SANDRUN_ASSIGN_OR_RETURN(auto frame, link.ReadFrame({deadline, nullptr}));
  if (frame.first != Op::kReady) return Unavailable("unexpected answer to hello");
  FrameReader r(frame.second);
  const uint32_t version = r.U32();
  (void)r.U32();
  if (!r.done() || version != agent::kVersion) {
    return Unavailable("agent speaks protocol version " + std::to_string(version) + ", not " +
                       std::to_string(agent::kVersion));
  }
  return link;
}

Status AgentLink::Write(const std::string& frame) {
  std::lock_guard<std::mutex> lock(*write_mu_);
  return WriteLocked(frame);
}

Status AgentLink::WriteLocked(const std::string& frame) {
  if (frame.empty()) return Error(ErrorCode::kInvalidArgument, "sandbox agent: message too large");
  size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n = ::send(fd_.get(), frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error(ErrorCode::kIo, "sandbox agent: connection lost");
    done += static_cast<size_t>(n);
  }
  return Ok();
}

Result<std::pair<Op, std::string>> AgentLink::ReadFrame(const CallOptions& options) {
  for (;;) {
    Op op;
    std::string payload;
    bool bad = false;
    if (agent::TakeFrame(in_, &op, &payload, &bad)) return std::make_pair(op, std::move(payload));
    if (bad) return Unavailable("malformed message from the agent");
    if (options.cancelled()) return Error(ErrorCode::kCancelled, "cancelled");
    int wait_ms = 50;
    if (!options.deadline.is_never()) {
      const int64_t left = options.deadline.remaining_ms();
      if (left <= 0) return Error(ErrorCode::kTimeout, "sandbox agent: timed out");
      wait_ms = static_cast<int>(std::min<int64_t>(left, options.cancel ? 50 : 1000));
    } else if (options.cancel == nullptr) {
      wait_ms = 1000;
    }
    pollfd p{fd_.get(), POLLIN, 0};
    const int rc = ::poll(&p, 1, wait_ms);
    if (rc < 0 && errno != EINTR) return Error::FromErrno(errno, "sandbox agent: poll");
    if (rc <= 0) continue;
    char buf[65536];
    const ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Unavailable("the agent closed the connection");
    in_.append(buf, static_cast<size_t>(n));
  }
}

namespace {

// STARTED (the pid) or ERROR (the agent's message).
Result<AgentLink::Started> StartedFrom(Result<std::pair<Op, std::string>> frame) {
  if (!frame) return std::move(frame).error();
  FrameReader r(frame->second);
  if (frame->first == Op::kError) {
    return Error(ErrorCode::kInternal, "sandbox agent refused: " + std::string(r.Str(4096)));
  }
  AgentLink::Started started;
  started.pid = r.U32();
  started.offset = r.U64();
  if (frame->first != Op::kStarted || !r.done()) return Unavailable("unexpected answer");
  return started;
}

}  // namespace

Result<AgentLink::Started> AgentLink::Start(const AgentStart& s, Deadline deadline) {
  FrameWriter w(Op::kStart);
  uint8_t flags = 0;
  if (s.pty) flags |= agent::kFlagPty;
  if (s.stdin_open) flags |= agent::kFlagStdin;
  if (s.kill_on_disconnect) flags |= agent::kFlagKillOnDisconnect;
  w.Str(s.id).U32(s.uid).U32(s.gid).U8(flags).U16(s.rows).U16(s.cols).U64(s.timeout_ms);
  w.U64(s.kill_grace_ms).Str(s.cwd).U32(static_cast<uint32_t>(s.argv.size()));
  for (const auto& a : s.argv) w.Str(a);
  w.U32(static_cast<uint32_t>(s.env.size()));
  for (const auto& e : s.env) w.Str(e);
  SANDRUN_RETURN_IF_ERROR(Write(w.Finish()));
  return StartedFrom(ReadFrame({deadline, nullptr}));
}

Result<AgentLink::Started> AgentLink::Attach(const std::string& id, uint64_t from,
                                             Deadline deadline) {
  SANDRUN_RETURN_IF_ERROR(Write(FrameWriter(Op::kAttach).Str(id).U64(from).Finish()));
  return StartedFrom(ReadFrame({deadline, nullptr}));
}

Result<AgentEvent> AgentLink::Next(const CallOptions& options) {
  SANDRUN_ASSIGN_OR_RETURN(auto frame, ReadFrame(options));
  FrameReader r(frame.second);
  AgentEvent e;
  if (frame.first == Op::kOutput) {
    e.kind = AgentEvent::Kind::kOutput;
    e.stream = r.U8();
    e.offset = r.U64();
    e.data = std::string(r.Rest());
    if (!r.ok()) return Unavailable("malformed output");
    return e;
  }
  if (frame.first == Op::kExit) {
    e.kind = AgentEvent::Kind::kExit;
    e.offset = r.U64();
    e.exit_code = r.I32();
    e.signal = r.I32();
    e.timed_out = r.U8() != 0;
    if (!r.done()) return Unavailable("malformed exit");
    return e;
  }
  if (frame.first == Op::kError) return Unavailable(std::string(r.Str(4096)));
  return Unavailable("unexpected message");
}

Status AgentLink::Stdin(std::string_view data) {
  while (!data.empty()) {
    const size_t n = std::min<size_t>(data.size(), agent::kMaxFrame - 16);
    SANDRUN_RETURN_IF_ERROR(Write(FrameWriter(Op::kStdin).Rest(data.substr(0, n)).Finish()));
    data.remove_prefix(n);
  }
  return Ok();
}
Status AgentLink::StdinEof() { return Write(FrameWriter(Op::kStdinEof).Finish()); }
Status AgentLink::Resize(unsigned rows, unsigned cols) {
  return Write(FrameWriter(Op::kResize)
                   .U16(static_cast<uint16_t>(std::min(rows, 65535u)))
                   .U16(static_cast<uint16_t>(std::min(cols, 65535u)))
                   .Finish());
}
Status AgentLink::Signal(int signal) {
  return Write(FrameWriter(Op::kSignal).U32(static_cast<uint32_t>(signal)).Finish());
}
Status AgentLink::Ack(uint64_t offset, bool done) {
  std::unique_lock<std::mutex> lock(*write_mu_, std::try_to_lock);
  if (!lock.owns_lock() && !done) return Ok();
  if (!lock.owns_lock()) lock.lock();
  return WriteLocked(FrameWriter(Op::kAck).U64(offset).U8(done ? 1 : 0).Finish());
}

Status AgentLink::Kill(const std::string& dir, const std::string& id, int signal) {
  SANDRUN_ASSIGN_OR_RETURN(AgentLink link, Connect(dir, Deadline::After(std::chrono::seconds(5))));
  return link.Write(FrameWriter(Op::kKill).Str(id).U32(static_cast<uint32_t>(signal)).Finish());
}
void AgentLink::Shutdown() {
  if (fd_.get() >= 0) ::shutdown(fd_.get(), SHUT_RDWR);
}

std::string AgentUnusableReason(const SandboxSpec& spec, const ExecWrapper& binary) {
  if (!spec.exec_agent) return "sandbox.docker.execAgent is false";
  if (!binary.usable()) return "no agent binary (" + binary.reason + ")";
  if (::geteuid() != 0) return "the runner is not root (it gives the agent's directory to its uid)";
  auto ids = ParseNumericUser(spec.user);
  if (!ids) return "the sandbox user \"" + spec.user + "\" is not a numeric uid:gid";
  if (ids->first == 0 || ids->second == 0) return "the sandbox user is root";
  if (ids->first == agent::kAgentUid || ids->second == agent::kAgentGid) {
    return "the sandbox user is the agent's uid " + std::to_string(agent::kAgentUid);
  }
  return "";
}

ExecWrapper FindAgentBinary(bool engine_is_local) {
  return FindBundledBinary(kAgentBinary, "sandbox agent", engine_is_local);
}

Result<std::string> PrepareAgentDir(const std::string& state_dir) {
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd parent, MakeDirsNoSymlinks(state_dir + "/" + kAgentsDir, 0700));
  SANDRUN_ASSIGN_OR_RETURN(std::string name, RandomHex(8));
  SANDRUN_ASSIGN_OR_RETURN(std::string secret, RandomHex(agent::kSecretHexLength / 2));
  SANDRUN_ASSIGN_OR_RETURN(UniqueFd made, MakeDirAt(parent.get(), name, 0700));
  const std::string path = state_dir + "/" + kAgentsDir + "/" + name;
  // MakeDirAt gives a path-only descriptor; ownership and mode need a real one.
  UniqueFd dir(::openat(made.get(), ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.get() < 0) return Error::FromErrno(errno, "cannot open " + path);
  UniqueFd file(::openat(dir.get(), agent::kSecretName,
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400));
  if (file.get() < 0) return Error::FromErrno(errno, "cannot create the agent secret in " + path);
  const std::string text = secret + "\n";
  UniqueFd key(::openat(parent.get(), (name + ".key").c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (key.get() < 0 ||
      ::write(key.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    Error e = Error::FromErrno(errno, "cannot write the agent key of " + path);
    RemoveAgentDir(state_dir, path);
    return e;
  }
  if (::write(file.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fchown(file.get(), agent::kAgentUid, agent::kAgentGid) != 0 ||
      ::fchmod(file.get(), 0400) != 0 ||
      ::fchown(dir.get(), agent::kAgentUid, agent::kAgentGid) != 0 ||
      ::fchmod(dir.get(), 0700) != 0) {
    Error e = Error::FromErrno(errno, "cannot give " + path + " to the agent");
    RemoveAgentDir(state_dir, path);
    return e;
  }
  return path;
}

void RemoveAgentDir(const std::string& state_dir, const std::string& dir) {
  const std::string prefix = state_dir + "/" + kAgentsDir + "/";
  if (dir.size() <= prefix.size() || dir.compare(0, prefix.size(), prefix) != 0) return;
  const std::string name = dir.substr(prefix.size());
  if (name.find('/') != std::string::npos || name == "." || name == ".." || name.size() > 64) {
    return;
  }
  auto parent = OpenNoSymlinks(state_dir + "/" + kAgentsDir);
  if (!parent) return;
  RemoveTreeNoFollow(parent->get(), name);
  (void)::unlinkat(parent->get(), (name + ".key").c_str(), 0);
  RemoveWorkspaceSlot(state_dir, name);  // a pooled container's (host_mounts.h)
}

std::string AgentDirOf(const std::string& state_dir,
                       const std::map<std::string, std::string>& labels) {
  auto it = labels.find(kAgentDirLabel);
  if (it == labels.end()) return "";
  const std::string prefix = state_dir + "/" + kAgentsDir + "/";
  const std::string& dir = it->second;
  if (dir.size() != prefix.size() + 16 || dir.compare(0, prefix.size(), prefix) != 0) return "";
  return dir;
}

void SweepAgentDirs(const std::string& state_dir, const std::vector<std::string>& live) {
  const std::string root = state_dir + "/" + kAgentsDir;
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return;
  std::vector<std::string> gone;
  while (dirent* e = ::readdir(d)) {
    const std::string path = root + "/" + e->d_name;
    if (e->d_name[0] == '.') continue;
    const std::string entry = e->d_name;
    if (entry.size() > 4 && entry.compare(entry.size() - 4, 4, ".key") == 0) {
      // A key whose directory is gone (a creation that stopped half way) goes with it below.
      if (::faccessat(::dirfd(d), entry.substr(0, entry.size() - 4).c_str(), F_OK,
                      AT_SYMLINK_NOFOLLOW) == 0) {
        continue;
      }
    }
    if (std::find(live.begin(), live.end(), path) != live.end()) continue;
    // A directory made in the last minutes may be a container being created right now.
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        ::time(nullptr) - st.st_mtime < 600) {
      continue;
    }
    gone.push_back(entry.size() > 4 && entry.compare(entry.size() - 4, 4, ".key") == 0
                       ? path.substr(0, path.size() - 4)
                       : path);
  }
  ::closedir(d);
  for (const auto& path : gone) RemoveAgentDir(state_dir, path);
  // Workspace slots whose agent directory is gone (a slot is made after its directory).
  std::vector<std::string> names;
  if (DIR* left = ::opendir(root.c_str())) {
    while (dirent* e = ::readdir(left)) names.emplace_back(e->d_name);
    ::closedir(left);
  }
  SweepWorkspaceSlots(state_dir, names);
}

std::vector<docker::BindMount> AgentMounts(const ExecWrapper& binary, const std::string& dir) {
  return {
      docker::BindMount{binary.host_path, agent::kAgentBinaryPath, /*read_only=*/true, "rprivate",
                        /*non_recursive=*/true},
      docker::BindMount{dir, agent::kAgentDirPath, /*read_only=*/false, "rprivate",
                        /*non_recursive=*/true},
  };
}

std::vector<std::string> AgentCommand() {
  return {agent::kAgentBinaryPath, "serve", agent::kAgentDirPath};
}

Status WaitAgentReady(const std::string& dir, Deadline deadline) {
  for (;;) {
    auto link = AgentLink::Connect(dir, deadline);
    if (link) return Ok();
    if (deadline.expired()) return std::move(link).error();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace sandrun::exec

// The sandbox agent's wire protocol (version 1), shared by the agent (agent/main.cc, static, in
// the container) and the runner (agent_link.h). Header-only, no dependency but the C++ library.
//
// Transport: a unix stream socket, `<agent dir>/sock`, in a per-container host directory that
// is bind-mounted into the container at kAgentDirPath. The directory belongs to the agent's own
// uid (kAgentUid) with mode 0700, so the sandbox's commands (another uid, no capabilities)
// cannot reach the socket; the runner, root on the host, can.
//
// Framing: every message is
//     u32 length (little-endian, of what follows: 1 + payload, at most kMaxFrame)
//     u8  op
//     payload (fields below, in order; u16/u32/u64 little-endian, i32 two's complement;
//              str = u32 length + bytes; "rest" = every remaining byte)
// A peer that sends a malformed frame, an unknown op or an op out of turn is disconnected.
//
// Conversation (one command per connection):
//   client  HELLO  str secret                    the 64-hex-digit secret of <agent dir>/secret
//   agent   READY  u32 version, u32 agent pid    (a wrong secret: the connection is closed)
//   then either
//   client  START  str id (32 hex digits, chosen by the client, unique in the container),
//                  u32 uid, u32 gid (the command's identity: never 0, never the agent's),
//                  u8 flags (kFlagPty | kFlagStdin | kFlagKillOnDisconnect),
//                  u16 rows, u16 cols (PTY size), u64 timeout_ms (0: none),
//                  u64 kill_grace_ms, str cwd, u32 argc, argc x str, u32 envc, envc x str
//                  ("K=V", over the container's environment; HOME is the uid's, from the
//                  image's /etc/passwd, "/" when it has none)
//   or
//   client  ATTACH str id, u64 from (output offset to resume at; kFromAcked: where the last
//                  client acknowledged)
//   or (a side channel: the command's own connection may be busy with its input)
//   client  KILL   str id, u32 signal    (as SIGNAL, for the command `id`; the connection then
//                                         closes)
//   agent   STARTED u32 pid (the command's pid in the container), u64 offset (where its output
//                  resumes: 0 after START)  | ERROR str message
//   then, in any order until the client closes:
//   agent   OUTPUT u8 stream (kStdout | kStderr | kPty), u64 offset, rest bytes
//           offsets count every byte of the command's output, both streams, from 0: they are
//           the sequence numbers a re-attached client resumes from
//   agent   EXIT   u64 end offset, i32 exit code (-1: none), i32 signal (0: none),
//                  u8 timed_out   (sent once every byte before end offset was sent)
//   client  STDIN  rest bytes        | STDIN_EOF
//   client  RESIZE u16 rows, u16 cols
//   client  SIGNAL u32 signal        (to the command's whole tree: its process group, its
//                                     session and every descendant, orphans included)
//   client  ACK    u64 offset, u8 done   (the client has kept every byte before offset; with
//                                     done=1 after EXIT: the agent forgets the command)
//
// Flow control: the agent keeps every byte after the acknowledged offset (up to kMaxUnacked,
// then it stops reading the command's output, which then blocks on a full pipe): output
// printed while no runner is attached (a restart) is kept for the next ATTACH, never dropped.
// Each command runs in its own session (setsid), as a child of the agent, with the dropped
// identity; the agent enforces its timeout (TERM to the tree, KILL after the grace) whether or
// not a client is attached. A command whose connection drops with kFlagKillOnDisconnect (a
// foreground run) is killed; without it (a background session) it keeps running. A finished
// command no client attached to for kForgetAfterMs is forgotten.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sandrun::agent {

inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kMaxFrame = 1u << 20;
inline constexpr size_t kMaxChunk = 64 * 1024;     // OUTPUT bytes per frame, at most
inline constexpr uint64_t kMaxUnacked = 1u << 20;  // output kept unacknowledged per command
inline constexpr int64_t kForgetAfterMs = 10 * 60 * 1000;
inline constexpr uint64_t kFromAcked = UINT64_MAX;

// The agent's identity in every container: not root, not 65534 (nobody, the default sandbox
// user), not a common first user id. A sandbox whose commands would run as this uid gets no
// agent (the Engine API exec path instead).
inline constexpr uint32_t kAgentUid = 65531;
inline constexpr uint32_t kAgentGid = 65531;

// In the container: the agent binary (read-only) and its directory (socket, secret, lock).
inline constexpr char kAgentBinaryPath[] = "/.sandrun/agent";
inline constexpr char kAgentDirPath[] = "/.sandrun/agent.d";
inline constexpr char kSocketName[] = "sock";
inline constexpr char kSecretName[] = "secret";
inline constexpr char kLockName[] = "lock";
inline constexpr size_t kSecretHexLength = 64;

enum class Op : uint8_t {
  kHello = 1,
  kStart = 2,
  kAttach = 3,
  kStdin = 4,
  kStdinEof = 5,
  kResize = 6,
  kSignal = 7,
  kAck = 8,
  kKill = 9,
  kReady = 0x81,
  kStarted = 0x82,
  kOutput = 0x83,
  kExit = 0x84,
  kError = 0x8f,
};

enum : uint8_t { kFlagPty = 1, kFlagStdin = 2, kFlagKillOnDisconnect = 4 };
enum : uint8_t { kStdout = 1, kStderr = 2, kPty = 3 };

// Appends fields to a frame; Finish() writes the length prefix.
class FrameWriter {
 public:
  explicit FrameWriter(Op op) : buf_(4, '\0') { U8(static_cast<uint8_t>(op)); }
  FrameWriter& U8(uint8_t v) {
    buf_.push_back(static_cast<char>(v));
    return *this;
  }
  FrameWriter& U16(uint16_t v) { return Le(v, 2); }
  FrameWriter& U32(uint32_t v) { return Le(v, 4); }
  FrameWriter& U64(uint64_t v) { return Le(v, 8); }
  FrameWriter& I32(int32_t v) { return Le(static_cast<uint32_t>(v), 4); }
  FrameWriter& Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    buf_.append(s);
    return *this;
  }
  FrameWriter& Rest(std::string_view s) {
    buf_.append(s);
    return *this;
  }
  // The whole frame; empty when it would exceed kMaxFrame (callers bound their fields).
  std::string Finish() {
    const size_t len = buf_.size() - 4;
    if (len > kMaxFrame) return std::string();
    for (int i = 0; i < 4; ++i)
      buf_[static_cast<size_t>(i)] = static_cast<char>((len >> (8 * i)) & 0xff);
    return std::move(buf_);
  }

 private:
  FrameWriter& Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  std::string buf_;
};

// Reads fields of one frame's payload; every read is bounds-checked and sets !ok() once short.
class FrameReader {
 public:
  explicit FrameReader(std::string_view payload) : p_(payload) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && pos_ == p_.size(); }
  uint8_t U8() { return static_cast<uint8_t>(Le(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Le(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Le(4)); }
  uint64_t U64() { return Le(8); }
  int32_t I32() { return static_cast<int32_t>(static_cast<uint32_t>(Le(4))); }
  std::string_view Str(size_t max = kMaxFrame) {
    const uint32_t n = U32();
    if (!ok_ || n > max || n > p_.size() - pos_) {
      ok_ = false;
      return {};
    }
    std::string_view s = p_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string_view Rest() {
    std::string_view s = ok_ ? p_.substr(pos_) : std::string_view();
    pos_ = p_.size();
    return s;
  }

 private:
  uint64_t Le(size_t n) {
    if (!ok_ || p_.size() - pos_ < n) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      v |= static_cast<uint64_t>(static_cast<unsigned char>(p_[pos_ + i])) << (8 * i);
    }
    pos_ += n;
    return v;
  }
  std::string_view p_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Splits complete frames off the front of `buf`: returns true with `op` and `payload` (a copy)
// when one is complete; sets `bad` for a frame longer than kMaxFrame or empty.
inline bool TakeFrame(std::string& buf, Op* op, std::string* payload, bool* bad) {
  *bad = false;
  if (buf.size() < 4) return false;
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) {
    len |= static_cast<uint32_t>(static_cast<unsigned char>(buf[static_cast<size_t>(i)]))
           << (8 * i);
  }
  if (len == 0 || len > kMaxFrame) {
    *bad = true;
    return false;
  }
  if (buf.size() < 4 + static_cast<size_t>(len)) return false;
  *op = static_cast<Op>(static_cast<unsigned char>(buf[4]));
  payload->assign(buf, 5, len - 1);
  buf.erase(0, 4 + static_cast<size_t>(len));
  return true;
}

// A command id: 32 lowercase hex digits.
inline bool ValidCommandId(std::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Compares two secrets in time independent of where they differ.
inline bool SecretsEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

}  // namespace sandrun::agent

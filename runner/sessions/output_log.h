// A session's output storage: the whole log (in memory until persisted, then appended to a file
// as it arrives) with a sparse line index for paging, and the capped drain buffers poll uses.
// Not thread-safe: the owning Session locks.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/base/result.h"
#include "sandbox/os/unique_fd.h"

namespace sandrun::sessions {

// OpenClaw's `log` slice: lines of the output (CRLF -> LF, a trailing empty line dropped).
// Neither offset nor limit: everything. Limit only: the last `limit` lines. Offset only: from
// `offset` to the end. Both: `limit` lines from `offset`. Negative values count as 0.
struct LogSlice {
  std::string text;          // the lines joined with "\n", sanitised
  int64_t total_lines = 0;   // lines in the whole log
  uint64_t total_chars = 0;  // bytes in the whole log
  int64_t first_line = 0;    // index of the first line in `text`
  int64_t line_count = 0;    // lines in `text`
  bool cut = false;          // `text` stopped at the byte cap before the requested end
  uint64_t dropped = 0;      // bytes never kept (beyond the log's cap)
};

// Three phases: buffering (a run still inside its yield window: nothing touches the disk; at most
// `buffer_bytes` are kept, the first and the last halves, the middle replaced by a marker line),
// then a file once persisted (appended as output arrives, up to `max_bytes`), or memory if the
// file could not be created (bounded by `buffer_bytes`).
class OutputLog {
 public:
  explicit OutputLog(uint64_t max_bytes = uint64_t{1} << 30, size_t buffer_bytes = 1u << 20);

  void Append(std::string_view bytes);
  // Moves the log to `path` (created 0600, appended from now on). Idempotent. On failure the log
  // stays in memory.
  Status Persist(const std::string& path);
  // Adopts an existing log file (a recovered session), indexing its lines. Read on demand.
  Status OpenExisting(const std::string& path);
  // An adopted log that goes on growing (a re-adopted process prints more): appends go to its
  // file again. Nothing to do for a log that is not a file or is open.
  Status ReopenForAppend();
  bool persisted() const { return mode_ == Mode::kFile; }
  // No more output: the file is reopened read-only for each read (finished sessions hold no fd).
  void Close() { fd_.reset(); }

  uint64_t size() const;     // bytes kept
  uint64_t dropped() const;  // bytes not kept (cap, I/O errors, the buffering gap)
  bool capped() const { return dropped() > 0; }
  // The tenant's log quota (maxLogBytes): a running session's log keeps what it has (the head)
  // and drops what comes next (the session's in-memory tail still has the latest output).
  void CapAtCurrentSize() { max_bytes_ = std::min(max_bytes_, size_); }
  // The tenant's log quota: a finished session's log is emptied (the file truncated); the bytes
  // count as dropped, so a `log` says truncated.
  void Drop();
  int64_t total_lines() const;

  // A line slice; `text` holds at most `max_text_bytes` (whole lines, at least one).
  LogSlice Slice(std::optional<int64_t> offset, std::optional<int64_t> limit,
                 size_t max_text_bytes) const;
  // The last `n` bytes kept (raw).
  std::string ReadTail(size_t n) const;

 private:
  enum class Mode { kBuffering, kMemory, kFile };
  static constexpr int64_t kIndexEvery = 1024;  // a byte offset for every 1024th line start
  void Index(std::string_view bytes, uint64_t at);
  // Reads [from, to) of the log.
  std::string ReadRange(uint64_t from, uint64_t to) const;
  // What buffering kept: head, the gap marker, tail.
  std::string Buffered() const;
  // Leaves buffering for memory mode with `content` (capped at max_bytes_), indexed.
  void Adopt(std::string content);
  // A memory-mode copy of a buffering log, for reading it.
  OutputLog Snapshot() const;

  uint64_t max_bytes_;
  size_t buffer_bytes_;
  Mode mode_ = Mode::kBuffering;
  std::string head_;    // buffering: the first buffer_bytes/2
  std::string ring_;    // buffering: the latest output after the head (at most buffer_bytes)
  uint64_t gap_ = 0;    // buffering: bytes dropped between head_ and ring_
  std::string path_;    // kFile
  UniqueFd fd_;         // kFile, open for appending while output may still come
  std::string memory_;  // kMemory
  uint64_t size_ = 0;
  uint64_t dropped_ = 0;
  uint64_t newlines_ = 0;
  std::vector<uint64_t> index_;  // index_[k] = byte offset where line k*kIndexEvery starts
  char last_byte_ = '\n';
};

// A poll drain buffer: chunks of at most 8 KiB, the oldest dropped once over `cap` bytes.
class PendingBuffer {
 public:
  explicit PendingBuffer(size_t cap) : cap_(cap) {}
  void Append(std::string_view bytes);
  // Everything pending, sanitised. Unless `final`, an incomplete UTF-8 sequence at the end stays
  // for the next call.
  std::string Take(bool final);
  size_t size() const { return size_; }

 private:
  size_t cap_;
  std::deque<std::string> chunks_;
  size_t size_ = 0;
};

}  // namespace sandrun::sessions

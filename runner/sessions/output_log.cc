#include "runner/sessions/output_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sandbox/base/strings.h"
#include "sandbox/executors/output.h"

namespace sandrun::sessions {
namespace {

constexpr size_t kReadBlock = 64 * 1024;
constexpr size_t kPendingChunk = 8 * 1024;  // OpenClaw's CHUNK_LIMIT

// Length of the UTF-8 sequence a lead byte starts (1 for ASCII and invalid bytes).
size_t SequenceLength(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0xF0 && u <= 0xF4) return 4;
  if (u >= 0xE0) return u <= 0xEF ? 3 : 1;
  if (u >= 0xC2) return 2;
  return 1;
}

}  // namespace

OutputLog::OutputLog(uint64_t max_bytes, size_t buffer_bytes)
    : max_bytes_(max_bytes), buffer_bytes_(std::max<size_t>(buffer_bytes, 2)) {
  index_.push_back(0);
}

void OutputLog::Append(std::string_view bytes) {
  if (bytes.empty()) return;
  if (mode_ == Mode::kBuffering) {
    size_t half = buffer_bytes_ / 2;
    size_t take = std::min(bytes.size(), half > head_.size() ? half - head_.size() : 0);
    head_.append(bytes.substr(0, take));
    ring_.append(bytes.substr(take));
    if (ring_.size() > 2 * half) {
      // Keep the latest `half` bytes, starting at a line if one starts soon after the cut.
      size_t cut = ring_.size() - half;
      size_t nl = ring_.find('\n', cut);
      if (nl != std::string::npos && nl + 1 < ring_.size() && nl - cut < half / 2) cut = nl + 1;
      gap_ += cut;
      ring_.erase(0, cut);
    }
    return;
  }
  uint64_t limit =
      mode_ == Mode::kMemory ? std::min<uint64_t>(max_bytes_, buffer_bytes_) : max_bytes_;
  uint64_t room = limit > size_ ? limit - size_ : 0;
  if (bytes.size() > room) {
    dropped_ += bytes.size() - room;
    bytes = bytes.substr(0, static_cast<size_t>(room));
  }
  if (bytes.empty()) return;
  if (mode_ == Mode::kFile) {
    std::string_view left = bytes;  // closed (fd_ invalid): all of it is dropped
    while (fd_.valid() && !left.empty()) {
      ssize_t n = ::write(fd_.get(), left.data(), left.size());
      if (n > 0) {
        left.remove_prefix(static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        break;  // disk full or gone: what was not written is dropped, never fatal
      }
    }
    dropped_ += left.size();
    bytes = bytes.substr(0, bytes.size() - left.size());
  } else {
    memory_.append(bytes);
  }
  Index(bytes, size_);
  size_ += bytes.size();
}

void OutputLog::Index(std::string_view bytes, uint64_t at) {
  if (bytes.empty()) return;
  const char* base = bytes.data();
  const char* p = base;
  const char* end = base + bytes.size();
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (nl == nullptr) break;
    p = static_cast<const char*>(nl) + 1;
    ++newlines_;
    if (newlines_ % static_cast<uint64_t>(kIndexEvery) == 0) {
      index_.push_back(at + static_cast<uint64_t>(p - base));
    }
  }
  last_byte_ = bytes.back();
}

std::string OutputLog::Buffered() const {
  if (gap_ == 0) return head_ + ring_;
  std::string marker = "[... " + std::to_string(gap_) + " bytes of output not kept: a run keeps " +
                       std::to_string(buffer_bytes_) + " bytes until it is backgrounded ...]\n";
  if (!head_.empty() && head_.back() != '\n') marker.insert(marker.begin(), '\n');
  return head_ + marker + ring_;
}

void OutputLog::Adopt(std::string content) {
  dropped_ += gap_;
  head_.clear();
  ring_.clear();
  gap_ = 0;
  mode_ = Mode::kMemory;
  memory_.clear();
  size_ = 0;
  Append(content);
}

OutputLog OutputLog::Snapshot() const {
  OutputLog copy(max_bytes_, std::max<size_t>(buffer_bytes_ * 2 + 256, buffer_bytes_));
  copy.gap_ = gap_;
  copy.Adopt(Buffered());
  copy.dropped_ += dropped_;
  return copy;
}

Status OutputLog::Persist(const std::string& path) {
  if (mode_ == Mode::kFile) return Ok();
  std::string content = mode_ == Mode::kBuffering ? Buffered() : memory_;
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  Status status = Ok();
  if (!fd.valid()) status = Error::FromErrno(errno, "creating " + path);
  std::string_view left = content;
  while (status && !left.empty()) {
    ssize_t n = ::write(fd.get(), left.data(), left.size());
    if (n > 0) {
      left.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      status = Error::FromErrno(n < 0 ? errno : ENOSPC, "writing " + path);
    }
  }
  if (!status) {
    if (mode_ == Mode::kBuffering) Adopt(std::move(content));
    return status;
  }
  if (mode_ == Mode::kBuffering) {
    dropped_ += gap_;
    head_.clear();
    ring_.clear();
    gap_ = 0;
    Index(content, 0);
    size_ = content.size();
  }
  memory_.clear();
  memory_.shrink_to_fit();
  mode_ = Mode::kFile;
  fd_ = std::move(fd);
  path_ = path;
  return Ok();
}

Status OutputLog::OpenExisting(const std::string& path) {
  mode_ = Mode::kFile;
  path_ = path;
  head_.clear();
  ring_.clear();
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Ok();  // nothing was printed before the log existed
    return Error::FromErrno(errno, "opening " + path);
  }
  std::string block(kReadBlock, '\0');
  uint64_t at = 0;
  for (;;) {
    ssize_t n = ::pread(fd.get(), block.data(), block.size(), static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, "reading " + path);
    if (n == 0) break;
    Index(std::string_view(block.data(), static_cast<size_t>(n)), at);
    at += static_cast<uint64_t>(n);
  }
  size_ = at;
  return Ok();
}

Status OutputLog::ReopenForAppend() {
  if (mode_ != Mode::kFile || fd_.valid() || path_.empty()) return Ok();
  UniqueFd fd(::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::FromErrno(errno, "reopening " + path_);
  fd_ = std::move(fd);
  return Ok();
}

uint64_t OutputLog::size() const {
  return mode_ == Mode::kBuffering ? head_.size() + ring_.size() : size_;
}

void OutputLog::Drop() {
  if (mode_ == Mode::kFile) {
    fd_.reset();  // no more output is kept
    UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW));
    (void)fd;  // a file that cannot be opened is gone already; the index is reset either way
  }
  dropped_ += size_ + gap_;
  head_.clear();
  ring_.clear();
  gap_ = 0;
  memory_.clear();
  size_ = 0;
  newlines_ = 0;
  index_.assign(1, 0);
  last_byte_ = '\n';
  max_bytes_ = 0;  // nothing more is kept
}

uint64_t OutputLog::dropped() const { return dropped_ + gap_; }

int64_t OutputLog::total_lines() const {
  if (mode_ == Mode::kBuffering) return Snapshot().total_lines();
  return static_cast<int64_t>(newlines_) + (size_ > 0 && last_byte_ != '\n' ? 1 : 0);
}

std::string OutputLog::ReadRange(uint64_t from, uint64_t to) const {
  to = std::min(to, size_);
  if (from >= to) return "";
  if (mode_ != Mode::kFile) {
    if (to > memory_.size()) to = memory_.size();
    return from >= to ? ""
                      : memory_.substr(static_cast<size_t>(from), static_cast<size_t>(to - from));
  }
  UniqueFd reopened;
  int fd = fd_.get();
  if (!fd_.valid()) {
    reopened.reset(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (!reopened.valid()) return "";
    fd = reopened.get();
  }
  std::string out(static_cast<size_t>(to - from), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(from + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

std::string OutputLog::ReadTail(size_t n) const {
  if (mode_ == Mode::kBuffering) return Snapshot().ReadTail(n);
  uint64_t from = size_ > n ? size_ - n : 0;
  return ReadRange(from, size_);
}

LogSlice OutputLog::Slice(std::optional<int64_t> offset, std::optional<int64_t> limit,
                          size_t max_text_bytes) const {
  if (mode_ == Mode::kBuffering) return Snapshot().Slice(offset, limit, max_text_bytes);
  LogSlice slice;
  slice.total_lines = total_lines();
  slice.total_chars = size_;
  slice.dropped = dropped();
  int64_t total = slice.total_lines;
  int64_t start = offset ? std::max<int64_t>(*offset, 0) : 0;
  if (limit && !offset) start = std::max<int64_t>(total - std::max<int64_t>(*limit, 0), 0);
  int64_t end = limit ? start + std::max<int64_t>(*limit, 0) : total;
  end = std::min(end, total);
  slice.first_line = start;
  if (start >= end) return slice;

  // Find where line `start` begins: the nearest indexed line, then count newlines.
  size_t k = static_cast<size_t>(start / kIndexEvery);
  uint64_t pos = index_[std::min(k, index_.size() - 1)];
  int64_t line = static_cast<int64_t>(std::min(k, index_.size() - 1)) * kIndexEvery;
  std::string raw;  // the selected lines, "\n"-joined, CRLF -> LF
  std::string current;
  bool stop = false;
  while (!stop && pos < size_) {
    std::string block = ReadRange(pos, pos + kReadBlock);
    if (block.empty()) break;
    size_t i = 0;
    while (i < block.size()) {
      size_t nl = block.find('\n', i);
      size_t piece_end = nl == std::string::npos ? block.size() : nl;
      if (line >= start) current.append(block, i, piece_end - i);
      if (nl == std::string::npos) {
        i = block.size();
        break;
      }
      i = nl + 1;
      if (line >= start) {
        if (!current.empty() && current.back() == '\r') current.pop_back();
        if (slice.line_count > 0 && raw.size() + 1 + current.size() > max_text_bytes) {
          slice.cut = true;
          stop = true;
          break;
        }
        if (slice.line_count > 0) raw.push_back('\n');
        raw += current;
        current.clear();
        ++slice.line_count;
      }
      ++line;
      if (line >= end) {
        stop = true;
        break;
      }
    }
    pos += block.size();
  }
  if (!stop && line >= start && line < end && !current.empty()) {
    // The last line has no newline yet.
    if (slice.line_count > 0 && raw.size() + 1 + current.size() > max_text_bytes) {
      slice.cut = true;
    } else {
      if (slice.line_count > 0) raw.push_back('\n');
      raw += current;
      ++slice.line_count;
    }
  }
  slice.text = exec::SanitizeOutput(raw);
  return slice;
}

void PendingBuffer::Append(std::string_view bytes) {
  while (!bytes.empty()) {
    size_t n = std::min(bytes.size(), kPendingChunk);
    chunks_.emplace_back(bytes.substr(0, n));
    size_ += n;
    bytes.remove_prefix(n);
  }
  size_t cap = std::max<size_t>(cap_, 1);
  while (size_ > cap && !chunks_.empty()) {
    std::string& front = chunks_.front();
    if (size_ - front.size() >= cap) {
      size_ -= front.size();
      chunks_.pop_front();
      continue;
    }
    size_t cut = size_ - cap;
    while (cut < front.size() && IsUtf8Continuation(front[cut])) ++cut;  // keep UTF-8 whole
    front.erase(0, cut);
    size_ -= cut;
    if (front.empty()) chunks_.pop_front();
  }
}

std::string PendingBuffer::Take(bool final) {
  std::string all;
  all.reserve(size_);
  for (auto& c : chunks_) all += c;
  chunks_.clear();
  size_ = 0;
  if (!final) {
    // Hold back a UTF-8 sequence whose last bytes have not arrived yet.
    size_t lead = all.size();
    for (size_t back = 1; back <= 3 && back <= all.size(); ++back) {
      if (!IsUtf8Continuation(all[all.size() - back])) {
        lead = all.size() - back;
        break;
      }
    }
    if (lead < all.size() && SequenceLength(all[lead]) > all.size() - lead) {
      chunks_.push_back(all.substr(lead));
      size_ = chunks_.back().size();
      all.resize(lead);
    }
  }
  return exec::SanitizeOutput(all);
}

}  // namespace sandrun::sessions

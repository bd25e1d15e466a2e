// Demultiplexes Docker's attach/exec stream (TTY off): frames of an 8-byte header
// [type, 0, 0, 0, size (big-endian uint32)] followed by `size` payload bytes; type 0 stdin
// (written on stdout), 1 stdout, 2 stderr.
//
// Payloads are forwarded as they arrive, in pieces if a frame is split across reads, so memory
// stays bounded by the caller's read size whatever the frame size. Only the header is buffered.
//
// Pattern of use:
//   FrameDemuxer demux([&](StreamKind k, std::string_view bytes) { ... });
//   while (read chunk) SANDRUN_RETURN_IF_ERROR(demux.Feed(chunk));
//   SANDRUN_RETURN_IF_ERROR(demux.Finish());  // a truncated frame at EOF is an error
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>

#include "sandbox/base/result.h"

namespace sandrun::docker {

enum class StreamKind : uint8_t { kStdin = 0, kStdout = 1, kStderr = 2 };

class FrameDemuxer {
 public:
  using Sink = std::function<void(StreamKind, std::string_view)>;
  explicit FrameDemuxer(Sink sink) : sink_(std::move(sink)) {}

  // Consumes bytes; calls the sink for every payload piece. An unknown stream type or a
  // non-zero padding byte is a protocol error; after an error the demuxer stays failed.
  Status Feed(std::string_view bytes);

  // Call at end of stream: an incomplete header or payload is a protocol error.
  Status Finish() const;

  uint64_t frames() const { return frames_; }

 private:
  Sink sink_;
  std::array<uint8_t, 8> header_{};
  size_t header_len_ = 0;
  uint32_t payload_left_ = 0;
  StreamKind kind_ = StreamKind::kStdout;
  uint64_t frames_ = 0;
  bool failed_ = false;
};

}  // namespace sandrun::docker

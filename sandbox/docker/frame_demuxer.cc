#include "sandbox/docker/frame_demuxer.h"

#include <algorithm>
#include <string>

namespace sandrun::docker {

Status FrameDemuxer::Feed(std::string_view bytes) {
  if (failed_) return Error(ErrorCode::kProtocol, "stream demuxer already failed");
  while (!bytes.empty()) {
    if (payload_left_ > 0) {
      size_t n = std::min<size_t>(payload_left_, bytes.size());
      sink_(kind_, bytes.substr(0, n));
      payload_left_ -= static_cast<uint32_t>(n);
      bytes.remove_prefix(n);
      continue;
    }
    size_t n = std::min(header_.size() - header_len_, bytes.size());
    std::copy_n(bytes.data(), n, header_.data() + header_len_);
    header_len_ += n;
    bytes.remove_prefix(n);
    if (header_len_ < header_.size()) break;
    header_len_ = 0;
    if (header_[0] > 2 || header_[1] != 0 || header_[2] != 0 || header_[3] != 0) {
      failed_ = true;
      return Error(ErrorCode::kProtocol, "bad stream frame header (type byte " +
                                             std::to_string(header_[0]) +
                                             "): is the exec running with a TTY?");
    }
    kind_ = static_cast<StreamKind>(header_[0]);
    payload_left_ = (uint32_t{header_[4]} << 24) | (uint32_t{header_[5]} << 16) |
                    (uint32_t{header_[6]} << 8) | uint32_t{header_[7]};
    ++frames_;
  }
  return Ok();
}

Status FrameDemuxer::Finish() const {
  if (failed_) return Error(ErrorCode::kProtocol, "stream demuxer failed");
  if (header_len_ != 0 || payload_left_ != 0) {
    return Error(ErrorCode::kProtocol, "stream ended inside a frame");
  }
  return Ok();
}

}  // namespace sandrun::docker

// libFuzzer target for the exec stream demuxer: any byte sequence, fed in arbitrary splits, must
// give an error or the same payloads as feeding it whole, never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sandbox/docker/frame_demuxer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t split = data[0] % size;  // first byte chooses where to split the rest
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string whole, pieces;
  using sandrun::docker::FrameDemuxer;
  using sandrun::docker::StreamKind;
  FrameDemuxer a([&](StreamKind k, std::string_view b) {
    whole.push_back(static_cast<char>(k));
    whole.append(b);
  });
  FrameDemuxer b([&](StreamKind k, std::string_view bytes) {
    if (pieces.empty() || true) pieces.push_back(static_cast<char>(k));
    pieces.append(bytes);
  });
  bool ok_a = static_cast<bool>(a.Feed(input));
  split = std::min(split, input.size());
  bool ok_b = static_cast<bool>(b.Feed(input.substr(0, split))) &&
              static_cast<bool>(b.Feed(input.substr(split)));
  if (ok_a != ok_b) std::abort();
  // Payload bytes (ignoring how they were cut into pieces) must match.
  auto strip = [](const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c > 2 || c < 0) out.push_back(c);
    }
    return out;
  };
  if (ok_a && strip(whole) != strip(pieces)) std::abort();
  return 0;
}

#include "sandbox/executors/output.h"

namespace sandrun::exec {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  }
  // Reject overlong forms, surrogates and code points past U+10FFFF.
  if (len == 2 && c < 0xC2) return 0;
  if (len == 3) {
    unsigned cp = ((c & 0x0Fu) << 12) | ((b(i + 1) & 0x3Fu) << 6) | (b(i + 2) & 0x3Fu);
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  }
  if (len == 4) {
    unsigned cp = ((c & 0x07u) << 18) | ((b(i + 1) & 0x3Fu) << 12) | ((b(i + 2) & 0x3Fu) << 6) |
                  (b(i + 3) & 0x3Fu);
    if (cp < 0x10000 || cp > 0x10FFFF) return 0;
  }
  return len;
}

}  // namespace

std::string SanitizeOutput(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    size_t len = Utf8SequenceLength(bytes, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    if (len == 1) {
      char c = bytes[i];
      bool control = (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') ||
                     c == 0x7F;
      if (!control) out.push_back(c);
    } else {
      out.append(bytes.substr(i, len));
    }
    i += len;
  }
  return out;
}

OutputCollector::OutputCollector(size_t max_chars, LiveSink live)
    : max_bytes_(max_chars == 0 ? 1 : max_chars), live_(std::move(live)) {}

void OutputCollector::Append(Stream stream, std::string_view bytes) {
  if (bytes.empty()) return;
  if (live_) live_(stream, bytes);
  total_ += bytes.size();
  if (bytes.size() >= max_bytes_) {
    tail_.assign(bytes.substr(bytes.size() - max_bytes_));
    return;
  }
  tail_.append(bytes);
  // Trim in batches so appending stays amortised O(n) while memory stays bounded.
  if (tail_.size() > 2 * max_bytes_) tail_.erase(0, tail_.size() - max_bytes_);
}

std::string OutputCollector::Text() const {
  std::string_view kept(tail_);
  if (kept.size() > max_bytes_) kept.remove_prefix(kept.size() - max_bytes_);
  uint64_t cut = total_ - kept.size();
  // Do not start in the middle of a UTF-8 sequence.
  while (cut > 0 && !kept.empty() && (static_cast<unsigned char>(kept.front()) & 0xC0) == 0x80) {
    kept.remove_prefix(1);
    ++cut;
  }
  std::string text = SanitizeOutput(kept);
  if (cut == 0) return text;
  return "[... " + std::to_string(cut) + " chars truncated ...]\n" + text;
}

}  // namespace sandrun::exec

#include "sandbox/executors/output.h"

#include "sandbox/base/strings.h"
#include "sandbox/executors/process.h"

namespace sandrun::exec {
namespace {

struct Decoded {
  size_t length;  // bytes consumed: the sequence, or the maximal ill-formed subpart
  char32_t code_point;
  bool valid;
};

// Decodes the UTF-8 sequence at s[i] (Unicode table 3-7: no overlong forms, no surrogates,
// nothing past U+10FFFF). An ill-formed sequence consumes its maximal subpart, the longest prefix
// that could have begun a valid sequence (at least one byte), so that each maps to one U+FFFD as
// in TextDecoder and Node's Buffer.toString.
Decoded DecodeUtf8(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return {1, c, true};
  size_t trail;
  char32_t cp;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the first trailing byte
  if (c >= 0xC2 && c <= 0xDF) {
    trail = 1;
    cp = c & 0x1Fu;
  } else if (c >= 0xE0 && c <= 0xEF) {
    trail = 2;
    cp = c & 0x0Fu;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    trail = 3;
    cp = c & 0x07u;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return {1, 0, false};  // a stray trailing byte, C0, C1, F5..FF
  }
  for (size_t k = 1; k <= trail; ++k) {
    if (i + k >= s.size()) return {k, 0, false};
    auto t = static_cast<unsigned char>(s[i + k]);
    if (t < lo || t > hi) return {k, 0, false};
    lo = 0x80;
    hi = 0xBF;
    cp = (cp << 6) | (t & 0x3Fu);
  }
  return {trail + 1, cp, true};
}

// Unicode general category Cf (Format), Unicode 15: what \p{Format} matches in OpenClaw.
bool IsFormatCharacter(char32_t cp) {
  static constexpr char32_t kRanges[][2] = {
      {0xAD, 0xAD},       {0x600, 0x605},     {0x61C, 0x61C},     {0x6DD, 0x6DD},
      {0x70F, 0x70F},     {0x890, 0x891},     {0x8E2, 0x8E2},     {0x180E, 0x180E},
      {0x200B, 0x200F},   {0x202A, 0x202E},   {0x2060, 0x2064},   {0x2066, 0x206F},
      {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD}, {0x110CD, 0x110CD},
      {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
      {0xE0020, 0xE007F},
  };
  if (cp < 0xAD) return false;
  for (const auto& range : kRanges) {
    if (cp < range[0]) return false;
    if (cp <= range[1]) return true;
  }
  return false;
}

}  // namespace

std::string SanitizeOutput(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    Decoded d = DecodeUtf8(bytes, i);
    if (!d.valid) {
      out += "\xEF\xBF\xBD";  // U+FFFD
    } else if (d.length == 1) {
      char32_t c = d.code_point;
      bool control = (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F;
      if (!control) out.push_back(bytes[i]);
    } else if (!IsFormatCharacter(d.code_point)) {
      out.append(bytes.substr(i, d.length));
    }
    i += d.length;
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
  // Do not start in the middle of a UTF-8 sequence (at most three trailing bytes; more are
  // garbage that SanitizeOutput replaces).
  for (int skipped = 0; cut > 0 && skipped < 3 && !kept.empty() && IsUtf8Continuation(kept.front());
       ++skipped) {
    kept.remove_prefix(1);
    ++cut;
  }
  std::string text = SanitizeOutput(kept);
  if (cut == 0) return text;
  return "[... " + std::to_string(cut) + " chars truncated ...]\n" + text;
}

const char* ProcessKindName(ProcessKind kind) {
  return kind == ProcessKind::kHost ? "host" : "container";
}

}  // namespace sandrun::exec

#include "runner/sessions/terminal.h"

#include <utility>

namespace sandrun::sessions {
namespace {

constexpr std::string_view kDsr = "\x1b[6n";
constexpr std::string_view kDsrPrivate = "\x1b[?6n";
constexpr std::string_view kSmkx = "\x1b[?1h";
constexpr std::string_view kRmkx = "\x1b[?1l";
constexpr std::string_view kWatched[] = {kDsr, kDsrPrivate, kSmkx, kRmkx};

}  // namespace

TerminalScanner::Scanned TerminalScanner::Scan(std::string_view chunk) {
  Scanned out;
  std::string joined;
  std::string_view data = chunk;
  if (!carry_.empty()) {
    joined = std::move(carry_) + std::string(chunk);
    carry_.clear();
    data = joined;
  }
  out.output.reserve(data.size());
  size_t i = 0;
  while (i < data.size()) {
    size_t esc = data.find('\x1b', i);
    if (esc == std::string_view::npos) {
      out.output.append(data.substr(i));
      break;
    }
    out.output.append(data.substr(i, esc - i));
    std::string_view rest = data.substr(esc);
    bool matched = false;
    bool partial = false;
    for (std::string_view seq : kWatched) {
      if (rest.substr(0, seq.size()) == seq) {
        if (seq == kDsr || seq == kDsrPrivate) {
          ++out.dsr_requests;
        } else {
          out.mode = seq == kSmkx ? CursorKeyMode::kApplication : CursorKeyMode::kNormal;
          out.output.append(seq);
        }
        i = esc + seq.size();
        matched = true;
        break;
      }
      if (rest.size() < seq.size() && seq.substr(0, rest.size()) == rest) partial = true;
    }
    if (matched) continue;
    if (partial) {  // only at the very end: decide with the next chunk
      carry_ = std::string(rest);
      break;
    }
    out.output.push_back('\x1b');
    i = esc + 1;
  }
  return out;
}

std::string TerminalScanner::Flush() { return std::exchange(carry_, std::string()); }

}  // namespace sandrun::sessions

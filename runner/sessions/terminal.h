// Watches a PTY session's output as it streams by: strips cursor position requests (DSR,
// ESC[6n / ESC[?6n; the session answers each with ESC[1;1R) and tracks the cursor key mode set
// by smkx (ESC[?1h) / rmkx (ESC[?1l). Sequences split across chunks are held back until the
// next chunk decides them (at most 4 bytes).
//
// Pattern of use:
//   TerminalScanner scan;
//   auto r = scan.Scan(chunk);   // r.output to the log, r.dsr_requests answers, r.mode if set
//   ... at the end: log(scan.Flush());
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runner/sessions/keys.h"

namespace sandrun::sessions {

inline constexpr std::string_view kDsrReply = "\x1b[1;1R";

class TerminalScanner {
 public:
  struct Scanned {
    std::string output;                 // the chunk without DSR requests
    int dsr_requests = 0;               // how many to answer
    std::optional<CursorKeyMode> mode;  // the last smkx/rmkx in the chunk, if any
  };
  Scanned Scan(std::string_view chunk);
  // Bytes held back at the end of the stream.
  std::string Flush();

 private:
  std::string carry_;
};

}  // namespace sandrun::sessions

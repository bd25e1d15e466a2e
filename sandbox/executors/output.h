// How a command ended and what it printed, plus the collector that keeps a bounded tail of the
// merged output while streaming every byte to a live sink.
//
// Pattern of use:
//   OutputCollector out(plan.max_output_chars, live_sink);
//   ... out.Append(StreamKind::kStdout, bytes) as output arrives ...
//   outcome.aggregated = out.Text();  // sanitised UTF-8, with a truncation marker if cut
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sandrun::exec {

enum class Stream { kStdout, kStderr };
using LiveSink = std::function<void(Stream, std::string_view)>;

struct ExecOutcome {
  enum class Status {
    kExited,    // exit_code is valid
    kSignaled,  // signal is valid
    kTimedOut,  // the plan's timeout fired; the process tree was killed
    kAborted,   // ended without an exit status we could capture
  };
  Status status = Status::kAborted;
  int exit_code = -1;
  int signal = 0;
  int64_t duration_ms = 0;
  std::string aggregated;    // merged stdout+stderr, tail-capped, sanitised
  uint64_t total_bytes = 0;  // everything the command printed
  bool truncated = false;
  std::string cwd;
  std::string where;                  // "container <name>" or "host"
  std::vector<std::string> warnings;  // learned while running (e.g. a recreated container)
};

// Keeps the last `max_chars` characters of the merged output (a ring of bytes, trimmed to a
// UTF-8 boundary when read) and forwards every byte to `live`.
class OutputCollector {
 public:
  OutputCollector(size_t max_chars, LiveSink live = nullptr);
  void Append(Stream stream, std::string_view bytes);
  uint64_t total_bytes() const { return total_; }
  // tail_ may hold up to twice max_bytes_ between trims; what Text() keeps is max_bytes_.
  bool truncated() const { return total_ > max_bytes_; }
  // The kept tail, invalid UTF-8 replaced by U+FFFD, control characters other than \t \n \r
  // removed (OpenClaw's sanitizeBinaryOutput); with a "[... N chars truncated ...]" first line
  // when output was cut.
  std::string Text() const;

 private:
  size_t max_bytes_;
  LiveSink live_;
  std::string tail_;  // bounded: at most max_bytes_ + one chunk before trimming
  uint64_t total_ = 0;
};

// Replaces invalid UTF-8 with U+FFFD (one per maximal ill-formed subsequence, as TextDecoder)
// and drops C0 controls except \t \n \r, DEL, and Unicode format characters (category Cf:
// bidi overrides, zero-width characters, BOM), as OpenClaw's sanitizeBinaryOutput.
std::string SanitizeOutput(std::string_view bytes);

}  // namespace sandrun::exec

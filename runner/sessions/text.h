// Text helpers for the process tool's output, as OpenClaw formats it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runner/sessions/state.h"
#include "sandbox/base/strings.h"

namespace sandrun::sessions {

// `s` if it has at most `max` characters (code points), else the first and last
// floor((max-3)/2) characters joined by "...".
std::string TruncateMiddle(std::string_view s, size_t max);

// OpenClaw's deriveSessionName: the first word and the first later word not starting with "-"
// (else the second word), quotes stripped, the target middle-truncated to 48; "" for no words.
std::string DeriveSessionName(std::string_view command);

// 850 -> "850ms", 42000 -> "42s", 125000 -> "2m05s", 7500000 -> "2h05m", negative -> "n/a".
std::string FormatDurationCompact(int64_t ms);

// The notifyOnExit summary of output: whitespace runs collapsed to one space, trimmed; longer
// than 180 characters -> the first 179 and "…".
std::string CompactNotifyOutput(std::string_view text);

// The last `n` characters (code points) of UTF-8 `s`.
std::string LastChars(std::string_view s, size_t n);

// Number of code points in UTF-8 `s`.
size_t CountChars(std::string_view s);

// `s` left-justified in `width` characters.
std::string PadRight(std::string_view s, size_t width);

// "SIGKILL" for 9 ("signal N" if unknown).
std::string SignalName(int sig);

// Why a session ended badly, as the foreground exec result says it (OpenClaw's texts):
// "Command timed out after N seconds" (N = timeout_ms rounded up to seconds) for kTimedOut,
// "Command aborted by signal SIGSEGV" for kFailed with a signal; "" otherwise.
std::string EndReason(Phase phase, const std::string& exit_signal, int64_t timeout_ms);

// Whitespace (" \t\r\n\v\f") trimmed from the end / both ends.
std::string TrimEnd(std::string_view s);

}  // namespace sandrun::sessions

// The process tool's key encoder (OpenClaw's pty-keys): key names, modifiers, ^X, hex bytes and
// bracketed paste to the bytes a terminal would send. Pure functions, no I/O.
//
// Pattern of use:
//   EncodedKeys k = EncodeKeySequence({.keys = {"C-c", "up", "Enter"}}, CursorKeyMode::kNormal);
//   proc->WriteStdin(k.data);  // k.warnings go into the result text
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandrun::sessions {

// DECCKM as the program last set it: smkx (ESC[?1h) = application, rmkx (ESC[?1l) = normal.
// A PTY session starts kUnknown until its first output; a pipe session is kNormal.
enum class CursorKeyMode { kUnknown, kNormal, kApplication };

struct KeyRequest {
  std::vector<std::string> keys;       // tokens: "Enter", "C-c", "M-x", "^D", "S-Tab", "kp5", ...
  std::vector<std::string> hex;        // bytes: "1b", "0x03", "A" (1-2 hex digits, optional 0x)
  std::optional<std::string> literal;  // sent as is, first
};

struct EncodedKeys {
  std::string data;                   // literal, then hex bytes, then key tokens
  std::vector<std::string> warnings;  // "Invalid hex byte: <raw>", "Unknown key \"k\" for ..."
};

// Encodes a request. kUnknown encodes as kNormal (callers refuse first, see below).
EncodedKeys EncodeKeySequence(const KeyRequest& request, CursorKeyMode mode);

// One key token (trimmed; "" encodes to nothing). Appends warnings to `warnings`.
std::string EncodeKeyToken(std::string_view token, CursorKeyMode mode,
                           std::vector<std::string>& warnings);

// Whether `keys` holds an unmodified up/down/left/right/home/end, whose bytes depend on the
// cursor key mode (the process tool refuses those while the mode is kUnknown).
bool HasCursorModeSensitiveKeys(const std::vector<std::string>& keys);

// `text` wrapped in ESC[200~ ... ESC[201~ when bracketed.
std::string EncodePaste(std::string_view text, bool bracketed);

// A byte from a hex token (^(0x)?[0-9a-f]{1,2}$, case-insensitive, trimmed), or nullopt.
std::optional<unsigned char> ParseHexByte(std::string_view raw);

}  // namespace sandrun::sessions

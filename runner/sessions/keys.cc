#include "runner/sessions/keys.h"

#include <cctype>
#include <utility>

#include "sandbox/base/strings.h"

namespace sandrun::sessions {
namespace {

constexpr std::string_view kEsc = "\x1b";

struct NamedKey {
  std::string_view name;
  std::string_view bytes;
};

// OpenClaw's namedKeyMap (pty-keys.ts), lowercase names.
constexpr NamedKey kNamedKeys[] = {
    {"enter", "\r"},       {"return", "\r"},        {"tab", "\t"},         {"escape", "\x1b"},
    {"esc", "\x1b"},       {"space", " "},          {"bspace", "\x7f"},    {"backspace", "\x7f"},
    {"up", "\x1b[A"},      {"down", "\x1b[B"},      {"right", "\x1b[C"},   {"left", "\x1b[D"},
    {"home", "\x1b[1~"},   {"end", "\x1b[4~"},      {"pageup", "\x1b[5~"}, {"pgup", "\x1b[5~"},
    {"ppage", "\x1b[5~"},  {"pagedown", "\x1b[6~"}, {"pgdn", "\x1b[6~"},   {"npage", "\x1b[6~"},
    {"insert", "\x1b[2~"}, {"ic", "\x1b[2~"},       {"delete", "\x1b[3~"}, {"del", "\x1b[3~"},
    {"dc", "\x1b[3~"},     {"btab", "\x1b[Z"},      {"f1", "\x1bOP"},      {"f2", "\x1bOQ"},
    {"f3", "\x1bOR"},      {"f4", "\x1bOS"},        {"f5", "\x1b[15~"},    {"f6", "\x1b[17~"},
    {"f7", "\x1b[18~"},    {"f8", "\x1b[19~"},      {"f9", "\x1b[20~"},    {"f10", "\x1b[21~"},
    {"f11", "\x1b[23~"},   {"f12", "\x1b[24~"},     {"kp/", "\x1bOo"},     {"kp*", "\x1bOj"},
    {"kp-", "\x1bOm"},     {"kp+", "\x1bOk"},       {"kp7", "\x1bOw"},     {"kp8", "\x1bOx"},
    {"kp9", "\x1bOy"},     {"kp4", "\x1bOt"},       {"kp5", "\x1bOu"},     {"kp6", "\x1bOv"},
    {"kp1", "\x1bOq"},     {"kp2", "\x1bOr"},       {"kp3", "\x1bOs"},     {"kp0", "\x1bOp"},
    {"kp.", "\x1bOn"},     {"kpenter", "\x1bOM"},
};

// Keys that take xterm modifier parameters (ESC[1;<m>A, ESC[<n>;<m>~).
constexpr std::string_view kModifiableKeys[] = {
    "up",       "down", "left",  "right",  "home", "end",    "pageup", "pgup", "ppage",
    "pagedown", "pgdn", "npage", "insert", "ic",   "delete", "del",    "dc"};

// Application cursor mode (DECCKM set): SS3 forms of the unmodified cursor keys.
constexpr NamedKey kApplicationKeys[] = {{"up", "\x1bOA"},    {"down", "\x1bOB"},
                                         {"right", "\x1bOC"}, {"left", "\x1bOD"},
                                         {"home", "\x1bOH"},  {"end", "\x1bOF"}};

struct Modifiers {
  bool ctrl = false;
  bool alt = false;
  bool shift = false;
  bool any() const { return ctrl || alt || shift; }
};

std::string_view TrimView(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n\v\f");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n\v\f");
  return s.substr(b, e - b + 1);
}

template <size_t N>
const NamedKey* FindKey(std::string_view lower, const NamedKey (&table)[N]) {
  for (const NamedKey& k : table) {
    if (k.name == lower) return &k;
  }
  return nullptr;
}

bool IsModifiable(std::string_view lower) {
  for (auto k : kModifiableKeys) {
    if (k == lower) return true;
  }
  return false;
}

// ctrl(char): "?" -> DEL; an uppercased code in 64..95 -> code & 0x1f; else nothing.
std::optional<char> CtrlChar(char c) {
  if (c == '?') return '\x7f';
  int code = std::toupper(static_cast<unsigned char>(c));
  if (code >= 64 && code <= 95) return static_cast<char>(code & 0x1f);
  return std::nullopt;
}

// Leading "C-", "M-", "S-" (any case), stacked, while more than the prefix remains.
std::pair<Modifiers, std::string_view> ParseModifiers(std::string_view token, bool* saw) {
  Modifiers mods;
  *saw = false;
  while (token.size() > 2 && token[1] == '-') {
    char m = static_cast<char>(std::tolower(static_cast<unsigned char>(token[0])));
    if (m == 'c') {
      mods.ctrl = true;
    } else if (m == 'm') {
      mods.alt = true;
    } else if (m == 's') {
      mods.shift = true;
    } else {
      break;
    }
    *saw = true;
    token.remove_prefix(2);
  }
  return {mods, token};
}

int XtermModifier(const Modifiers& mods) {
  return 1 + (mods.shift ? 1 : 0) + (mods.alt ? 2 : 0) + (mods.ctrl ? 4 : 0);
}

// ESC[<n><final> -> ESC[<n>;<m><final>; ESC[<A-D,H,F> -> ESC[1;<m><letter>.
std::optional<std::string> ApplyXtermModifier(std::string_view seq, int modifier) {
  if (seq.size() < 3 || seq.substr(0, 2) != "\x1b[") return std::nullopt;
  std::string_view body = seq.substr(2);
  char final_char = body.back();
  std::string_view digits = body.substr(0, body.size() - 1);
  bool all_digits = !digits.empty();
  for (char c : digits) all_digits = all_digits && c >= '0' && c <= '9';
  std::string m = std::to_string(modifier);
  if (all_digits && (final_char == '~' || (final_char >= 'A' && final_char <= 'Z'))) {
    return std::string(kEsc) + "[" + std::string(digits) + ";" + m + final_char;
  }
  if (digits.empty() && std::string_view("ABCDHF").find(final_char) != std::string_view::npos) {
    return std::string(kEsc) + "[1;" + m + final_char;
  }
  return std::nullopt;
}

std::string ApplyCharModifiers(char c, const Modifiers& mods) {
  std::string value(1, c);
  if (mods.shift && c >= 'a' && c <= 'z') value[0] = static_cast<char>(c - 'a' + 'A');
  if (mods.ctrl) {
    if (auto ctrl = CtrlChar(value[0])) value[0] = *ctrl;
  }
  if (mods.alt) value = std::string(kEsc) + value;
  return value;
}

}  // namespace

std::string EncodeKeyToken(std::string_view raw, CursorKeyMode mode,
                           std::vector<std::string>& warnings) {
  std::string_view token = TrimView(raw);
  if (token.empty()) return "";
  if (token.size() == 2 && token[0] == '^') {
    if (auto ctrl = CtrlChar(token[1])) return std::string(1, *ctrl);
  }
  bool saw_modifiers = false;
  auto [mods, base] = ParseModifiers(token, &saw_modifiers);
  std::string lower = Lower(base);
  if (lower == "tab" && mods.shift) return "\x1b[Z";
  if (mode == CursorKeyMode::kApplication && !mods.any()) {
    if (const NamedKey* k = FindKey(lower, kApplicationKeys)) {
      return std::string(k->bytes);
    }
  }
  if (const NamedKey* k = FindKey(lower, kNamedKeys)) {
    if (IsModifiable(lower) && mods.any()) {
      int modifier = XtermModifier(mods);
      if (modifier > 1) {
        if (auto modified = ApplyXtermModifier(k->bytes, modifier)) return *modified;
      }
    }
    if (mods.alt) return std::string(kEsc) + std::string(k->bytes);
    return std::string(k->bytes);
  }
  if (base.size() == 1) return ApplyCharModifiers(base[0], mods);
  if (saw_modifiers) {
    warnings.push_back("Unknown key \"" + std::string(base) + "\" for modifiers; sending literal.");
  }
  return std::string(base);
}

std::optional<unsigned char> ParseHexByte(std::string_view raw) {
  std::string s = Lower(TrimView(raw));
  std::string_view digits = s;
  if (digits.substr(0, 2) == "0x") digits.remove_prefix(2);
  if (digits.empty() || digits.size() > 2) return std::nullopt;
  unsigned value = 0;
  for (char c : digits) {
    unsigned d = 0;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<unsigned>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
    value = value * 16 + d;
  }
  return static_cast<unsigned char>(value);
}

EncodedKeys EncodeKeySequence(const KeyRequest& request, CursorKeyMode mode) {
  EncodedKeys out;
  if (request.literal) out.data += *request.literal;
  for (const auto& raw : request.hex) {
    auto byte = ParseHexByte(raw);
    if (!byte) {
      out.warnings.push_back("Invalid hex byte: " + raw);
      continue;
    }
    out.data.push_back(static_cast<char>(*byte));
  }
  for (const auto& token : request.keys) out.data += EncodeKeyToken(token, mode, out.warnings);
  return out;
}

bool HasCursorModeSensitiveKeys(const std::vector<std::string>& keys) {
  for (const auto& raw : keys) {
    std::string_view token = TrimView(raw);
    bool saw = false;
    auto [mods, base] = ParseModifiers(token, &saw);
    if (mods.any()) continue;
    std::string lower = Lower(base);
    if (FindKey(lower, kApplicationKeys) != nullptr) return true;
  }
  return false;
}

std::string EncodePaste(std::string_view text, bool bracketed) {
  if (!bracketed) return std::string(text);
  return "\x1b[200~" + std::string(text) + "\x1b[201~";
}

}  // namespace sandrun::sessions

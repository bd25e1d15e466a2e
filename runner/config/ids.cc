#include "runner/config/ids.h"

namespace sandrun::config {
namespace {

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool AgentRest(char c) { return IsAlnum(c) || c == '.' || c == '_' || c == '-'; }
bool SessionRest(char c) { return AgentRest(c) || c == ':' || c == '@'; }
bool TenantRest(char c) { return IsLowerAlnum(c) || c == '-'; }

// The value as shown in a refusal: printable ASCII kept, anything else escaped, long ones cut.
std::string Shown(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char ch : s.substr(0, 80)) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out.push_back(ch);
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (s.size() > 80) out += "...";
  return out;
}

std::optional<std::string> Check(std::string_view value, const char* what, const char* rule,
                                 size_t max, bool (*first)(char), bool (*rest)(char)) {
  bool ok = !value.empty() && value.size() <= max && first(value[0]);
  for (size_t i = 1; ok && i < value.size(); ++i) ok = rest(value[i]);
  if (ok) return std::nullopt;
  return std::string("Invalid ") + what + " \"" + Shown(value) + "\": it must match " + rule +
         " (refused, never rewritten).";
}

}  // namespace

std::optional<std::string> AgentIdError(std::string_view id) {
  return Check(id, "agent id", "[A-Za-z0-9][A-Za-z0-9._-]{0,63}", 64, IsAlnum, AgentRest);
}

std::optional<std::string> SessionKeyError(std::string_view key) {
  return Check(key, "session key", "[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}", 128, IsAlnum, SessionRest);
}

std::optional<std::string> NodeIdError(std::string_view id) {
  return Check(id, "node id", "[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}", 128, IsAlnum, SessionRest);
}

std::optional<std::string> TenantIdError(std::string_view id) {
  return Check(id, "tenant id", "[a-z0-9][a-z0-9-]{0,31}", 32, IsLowerAlnum, TenantRest);
}

std::optional<std::string> CallerIdsError(std::string_view agent, std::string_view session) {
  if (auto bad = AgentIdError(agent)) return bad;
  return SessionKeyError(session);
}

}  // namespace sandrun::config

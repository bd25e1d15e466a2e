#include "runner/config/approvals_file.h"

#include <fcntl.h>
#include <rapidjson/prettywriter.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>
#include <system_error>

#include "runner/config/json_lines.h"
#include "sandbox/base/clock.h"
#include "sandbox/base/json.h"
#include "sandbox/base/sha256.h"
#include "sandbox/base/strings.h"
#include "sandbox/os/file.h"
#include "sandbox/os/trusted_file.h"

namespace sandrun::config {
namespace {

using rapidjson::Value;

constexpr size_t kMaxNesting = 64;
constexpr int64_t kMaxSafeInteger = (int64_t{1} << 53) - 1;  // JavaScript's, as OpenClaw writes

constexpr const char* kSecurity = "security";
constexpr const char* kAsk = "ask";
constexpr const char* kAskFallback = "askFallback";
constexpr const char* kAutoAllowSkills = "autoAllowSkills";

// Exact lowercase names only: OpenClaw drops "Always" or " full".
std::optional<Security> SecurityFromName(std::string_view s) {
  for (Security v : {Security::kDeny, Security::kAllowlist, Security::kFull}) {
    if (s == ToString(v)) return v;
  }
  return std::nullopt;
}

std::optional<Ask> AskFromName(std::string_view s) {
  for (Ask v : {Ask::kOff, Ask::kOnMiss, Ask::kAlways}) {
    if (s == ToString(v)) return v;
  }
  return std::nullopt;
}

std::string Str(const Value& v) { return std::string(v.GetString(), v.GetStringLength()); }

// A value as quoted in messages: scalars as JSON (shortened), containers by kind.
std::string Describe(const Value& v) {
  if (v.IsObject()) return "an object";
  if (v.IsArray()) return "an array";
  std::string text = ToJson(v);
  if (text.size() > 64) text = text.substr(0, 60) + "...";
  return text;
}

// The integer value of a JSON number within JavaScript's safe range; nullopt otherwise.
std::optional<int64_t> SafeInteger(const Value& v) {
  if (v.IsInt64()) {
    int64_t i = v.GetInt64();
    if (i >= -kMaxSafeInteger && i <= kMaxSafeInteger) return i;
    return std::nullopt;
  }
  if (!v.IsDouble()) return std::nullopt;
  double d = v.GetDouble();
  if (!std::isfinite(d) || d != std::floor(d) ||
      std::fabs(d) > static_cast<double>(kMaxSafeInteger)) {
    return std::nullopt;
  }
  return static_cast<int64_t>(d);
}

// Allowlist entries are the same rule when their lowercase patterns and argPatterns are equal.
bool SameRule(const AllowlistEntry& a, const AllowlistEntry& b) {
  return a.arg_pattern == b.arg_pattern && Lower(a.pattern) == Lower(b.pattern);
}

// Walks the DOM; errors and warnings carry positions from JsonLines.
class Parser {
 public:
  Parser(const JsonLines& lines, std::vector<std::string>* warnings)
      : lines_(lines), warnings_(warnings) {}

  Result<ApprovalsFile> Parse(const Value& root) {
    ApprovalsFile file;
    if (!root.IsObject()) {
      return Fail(
          "", "expected a JSON object with \"version\": 1 at the top level, got " + Describe(root));
    }
    const Value* version = JsonMember(root, "version");
    if (version == nullptr) {
      return Fail("", "missing \"version\": 1 (not an approvals file of a known version)");
    }
    if (!version->IsNumber() || version->GetDouble() != 1.0) {
      return Fail("version", "unsupported version " + Describe(*version) + " (only 1 is known)");
    }
    for (const auto& m : root.GetObject()) {
      std::string key = Str(m.name);
      std::string path = JoinKey("", key);
      if (key == "version") continue;
      if (key == "socket") {
        SANDRUN_RETURN_IF_ERROR(ParseSocket(m.value, path, &file));
      } else if (key == "defaults") {
        if (m.value.IsNull()) continue;
        SANDRUN_RETURN_IF_ERROR(ParsePolicy(m.value, path, false, &file.defaults));
      } else if (key == "agents") {
        SANDRUN_RETURN_IF_ERROR(ParseAgents(m.value, path, &file));
      } else {
        Warn(path, "unknown key (dropped)", true);
      }
    }
    MergeLegacyDefaultAgent(&file);
    return file;
  }

 private:
  Error Fail(const std::string& path, const std::string& reason) const {
    std::string where = lines_.Where(path);
    return Error(ErrorCode::kInvalidArgument,
                 where + ": " + (path.empty() ? "" : path + ": ") + reason);
  }

  void Warn(const std::string& path, const std::string& reason, bool at_key = false) {
    if (warnings_ != nullptr) {
      warnings_->push_back(lines_.Where(path, at_key) + ": " + path + ": " + reason);
    }
  }

  Error Expected(const std::string& path, const char* what, const Value& v) const {
    return Fail(path, std::string("expected ") + what + ", got " + Describe(v));
  }

  Status ParseSocket(const Value& v, const std::string& path, ApprovalsFile* file) {
    if (v.IsNull()) return Ok();
    if (!v.IsObject()) return Expected(path, "an object", v);
    for (const auto& m : v.GetObject()) {
      std::string key = Str(m.name);
      std::string sub = JoinKey(path, key);
      std::string* out = key == "path"    ? &file->socket_path
                         : key == "token" ? &file->socket_token
                                          : nullptr;
      if (out == nullptr) {
        Warn(sub, "unknown key (dropped)", true);
      } else if (m.value.IsString()) {
        *out = Str(m.value);
      } else if (!m.value.IsNull()) {
        return Expected(sub, "a string", m.value);
      }
    }
    return Ok();
  }

  Status ParseAgents(const Value& v, const std::string& path, ApprovalsFile* file) {
    if (v.IsNull()) return Ok();
    if (!v.IsObject()) return Expected(path, "an object", v);
    for (const auto& m : v.GetObject()) {
      if (m.value.IsNull()) continue;
      std::string id = Str(m.name);
      SANDRUN_RETURN_IF_ERROR(
          ParsePolicy(m.value, JoinKey(path, id), true, &file->agents[id], id != "*"));
    }
    return Ok();
  }

  // A policy value that is set but not valid: dropped, remembered, reported.
  void Invalid(const std::string& path, const char* key, const Value& v, const char* expected,
               ApprovalsPolicy* out, bool specific_agent) {
    out->invalid[key] = ToJson(v);
    Warn(path, std::string("expected ") + expected + ", got " + Describe(v) +
                   (specific_agent ? " (ignored: defaults apply, not the wildcard agent \"*\")"
                                   : " (ignored)"));
  }

  // `specific_agent`: a section agents.<id> other than the wildcard.
  Status ParsePolicy(const Value& v, const std::string& path, bool is_agent, ApprovalsPolicy* out,
                     bool specific_agent = false) {
    if (!v.IsObject()) return Expected(path, "an object", v);
    for (const auto& m : v.GetObject()) {
      std::string key = Str(m.name);
      std::string sub = JoinKey(path, key);
      const Value& value = m.value;
      if (key == kSecurity || key == kAskFallback) {
        std::optional<Security>& field = key == kSecurity ? out->security : out->ask_fallback;
        if (value.IsNull()) continue;
        field = value.IsString() ? SecurityFromName(Str(value)) : std::nullopt;
        if (!field)
          Invalid(sub, key.c_str(), value, "one of deny, allowlist, full", out, specific_agent);
      } else if (key == kAsk) {
        if (value.IsNull()) continue;
        out->ask = value.IsString() ? AskFromName(Str(value)) : std::nullopt;
        if (!out->ask)
          Invalid(sub, kAsk, value, "one of off, on-miss, always", out, specific_agent);
      } else if (key == kAutoAllowSkills) {
        if (value.IsNull()) continue;
        if (value.IsBool()) {
          out->auto_allow_skills = value.GetBool();
        } else {
          Invalid(sub, kAutoAllowSkills, value, "true or false", out, specific_agent);
        }
      } else if (key == "allowlist" && is_agent) {
        if (value.IsNull()) continue;
        if (!value.IsArray()) return Expected(sub, "an array", value);
        for (rapidjson::SizeType i = 0; i < value.Size(); ++i) {
          ParseItem(value[i], JoinIndex(sub, i), &out->allowlist);
        }
      } else if (key == "allowlist") {
        Warn(sub, "allowlists belong to agent sections (agents.<id> or agents.*) (dropped)", true);
      } else {
        Warn(sub, "unknown key (dropped)", true);
      }
    }
    return Ok();
  }

  // The entry's id: kept if it is a fresh non-empty string, else a new one.
  std::string TakeId(const Value* id, const std::string& path) {
    if (id != nullptr && id->IsString() && id->GetStringLength() > 0) {
      std::string s = Str(*id);
      if (ids_.insert(s).second) return s;
      Warn(path, "id " + Describe(*id) + " is used by an earlier entry (replaced by a new id)");
    } else if (id != nullptr && !id->IsNull() && !id->IsString()) {
      Warn(path, "expected a string, got " + Describe(*id) + " (replaced by a new id)");
    }
    std::string fresh = NewEntryId();
    ids_.insert(fresh);
    return fresh;
  }

  void ParseItem(const Value& v, const std::string& path, std::vector<AllowlistEntry>* out) {
    static constexpr const char* kBadItem =
        "expected a non-empty string or an object with a non-empty string \"pattern\", got ";
    AllowlistEntry entry;
    if (v.IsString()) {
      entry.pattern = Trim(Str(v));
      if (entry.pattern.empty()) return Warn(path, kBadItem + Describe(v) + " (dropped)");
      entry.id = TakeId(nullptr, path);
      out->push_back(std::move(entry));
      return;
    }
    const Value* pattern = JsonMember(v, "pattern");
    if (!v.IsObject() || pattern == nullptr || !pattern->IsString() ||
        Trim(Str(*pattern)).empty()) {
      std::string got =
          v.IsObject() && pattern != nullptr ? "pattern " + Describe(*pattern) : Describe(v);
      return Warn(path, kBadItem + got + " (dropped)");
    }
    entry.pattern = Trim(Str(*pattern));
    for (const auto& m : v.GetObject()) {
      std::string key = Str(m.name);
      std::string sub = JoinKey(path, key);
      const Value& value = m.value;
      std::string* text = key == "source"             ? &entry.source
                          : key == "argPattern"       ? &entry.arg_pattern
                          : key == "lastUsedCommand"  ? &entry.last_used_command
                          : key == "lastResolvedPath" ? &entry.last_resolved_path
                                                      : nullptr;
      if (key == "pattern" || key == "id" || key == "commandText") continue;
      if (key == "lastUsedAt") {
        if (value.IsNull()) continue;
        entry.last_used_at = SafeInteger(value);
        if (!entry.last_used_at) {
          Warn(sub, "expected a time in unix milliseconds, got " + Describe(value) + " (dropped)");
        }
      } else if (text != nullptr) {
        if (value.IsString()) {
          *text = Str(value);
        } else if (!value.IsNull()) {
          Warn(sub, "expected a string, got " + Describe(value) + " (dropped)");
        }
      } else {
        Warn(sub, "unknown key (dropped)", true);
      }
    }
    entry.id = TakeId(JsonMember(v, "id"), JoinKey(path, "id"));
    out->push_back(std::move(entry));
  }

  // agents.default (an old OpenClaw name) is merged into agents.main: main's fields win, the
  // allowlists are concatenated (main first) without repeating a rule.
  static void MergeLegacyDefaultAgent(ApprovalsFile* file) {
    auto legacy = file->agents.find("default");
    if (legacy == file->agents.end()) return;
    ApprovalsPolicy old = std::move(legacy->second);
    file->agents.erase(legacy);
    ApprovalsPolicy& main = file->agents["main"];
    auto present = [&](const char* key, bool set) { return set || main.invalid.count(key) > 0; };
    if (!present(kSecurity, main.security.has_value())) main.security = old.security;
    if (!present(kAsk, main.ask.has_value())) main.ask = old.ask;
    if (!present(kAskFallback, main.ask_fallback.has_value())) main.ask_fallback = old.ask_fallback;
    if (!present(kAutoAllowSkills, main.auto_allow_skills.has_value())) {
      main.auto_allow_skills = old.auto_allow_skills;
    }
    for (const auto& [key, raw] : old.invalid) {
      bool set = (key == kSecurity && main.security) || (key == kAsk && main.ask) ||
                 (key == kAskFallback && main.ask_fallback) ||
                 (key == kAutoAllowSkills && main.auto_allow_skills);
      if (!set) main.invalid.emplace(key, raw);
    }
    for (AllowlistEntry& entry : old.allowlist) {
      bool known = std::any_of(main.allowlist.begin(), main.allowlist.end(),
                               [&](const AllowlistEntry& e) { return SameRule(e, entry); });
      if (!known) main.allowlist.push_back(std::move(entry));
    }
  }

  const JsonLines& lines_;
  std::vector<std::string>* warnings_;
  std::set<std::string> ids_;
};

using PrettyWriter = PrettyJsonWriter;

// Writes one policy field: the typed value, else a remembered invalid value, else nothing.
template <typename T, typename Emit>
void WriteField(PrettyWriter& w, const ApprovalsPolicy& p, const char* key,
                const std::optional<T>& value, Emit emit) {
  if (value) {
    w.Key(key);
    emit(*value);
  } else if (auto it = p.invalid.find(key); it != p.invalid.end()) {
    w.Key(key);
    w.RawValue(it->second.data(), it->second.size(), rapidjson::kStringType);
  }
}

void WritePolicy(PrettyWriter& w, const ApprovalsPolicy& p, bool is_agent) {
  w.StartObject();
  WriteField(w, p, kSecurity, p.security, [&](Security v) { w.String(ToString(v)); });
  WriteField(w, p, kAsk, p.ask, [&](Ask v) { w.String(ToString(v)); });
  WriteField(w, p, kAskFallback, p.ask_fallback, [&](Security v) { w.String(ToString(v)); });
  WriteField(w, p, kAutoAllowSkills, p.auto_allow_skills, [&](bool v) { w.Bool(v); });
  if (is_agent && !p.allowlist.empty()) {
    w.Key("allowlist");
    w.StartArray();
    for (const AllowlistEntry& e : p.allowlist) {
      w.StartObject();
      auto text = [&](const char* key, const std::string& value) {
        if (value.empty()) return;
        w.Key(key);
        WritePrettyString(w, value);
      };
      text("id", e.id);
      text("pattern", e.pattern);
      text("source", e.source);
      text("argPattern", e.arg_pattern);
      if (e.last_used_at) {
        w.Key("lastUsedAt");
        w.Int64(*e.last_used_at);
      }
      text("lastUsedCommand", e.last_used_command);
      text("lastResolvedPath", e.last_resolved_path);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

// Resolves one field (see ResolveApprovals in the header).
template <typename T>
T ResolveField(const ApprovalsFile& file, const std::string& agent_id,
               std::optional<T> ApprovalsPolicy::*member, const char* key, T fallback,
               const char* fallback_source, std::map<std::string, std::string>* sources) {
  bool skip_wildcard = false;
  if (auto agent = file.agents.find(agent_id); agent != file.agents.end()) {
    if (const auto& v = agent->second.*member) {
      (*sources)[key] = "agents." + agent_id + "." + key;
      return *v;
    }
    skip_wildcard = agent->second.invalid.count(key) > 0;
  }
  if (auto wildcard = file.agents.find("*"); !skip_wildcard && wildcard != file.agents.end()) {
    if (const auto& v = wildcard->second.*member) {
      (*sources)[key] = std::string("agents.*.") + key;
      return *v;
    }
  }
  if (const auto& v = file.defaults.*member) {
    (*sources)[key] = std::string("defaults.") + key;
    return *v;
  }
  (*sources)[key] = fallback_source;
  return fallback;
}

}  // namespace

Result<ApprovalsFile> ParseApprovals(std::string_view text, const std::string& path,
                                     std::vector<std::string>* warnings) {
  SANDRUN_ASSIGN_OR_RETURN(std::optional<JsonFile> json, ParseJsonFile(text, path, kMaxNesting));
  if (!json) return ApprovalsFile{};
  const JsonLines& lines = json->lines;
  const rapidjson::Document& doc = json->doc;
  return Parser(lines, warnings).Parse(doc);
}

std::string SerializeApprovals(const ApprovalsFile& file) {
  return VersionedFileText([&](PrettyJsonWriter& w) {
    if (!file.socket_path.empty() || !file.socket_token.empty()) {
      w.Key("socket");
      w.StartObject();
      if (!file.socket_path.empty()) {
        w.Key("path");
        WritePrettyString(w, file.socket_path);
      }
      if (!file.socket_token.empty()) {
        w.Key("token");
        WritePrettyString(w, file.socket_token);
      }
      w.EndObject();
    }
    w.Key("defaults");
    WritePolicy(w, file.defaults, false);
    w.Key("agents");
    w.StartObject();
    for (const auto& [id, policy] : file.agents) {
      w.Key(id.data(), static_cast<rapidjson::SizeType>(id.size()));
      WritePolicy(w, policy, true);
    }
    w.EndObject();
  });
}

ResolvedApprovals ResolveApprovals(const ApprovalsFile& file, const std::string& agent_id,
                                   Security fallback_security, Ask fallback_ask) {
  const std::string agent = agent_id.empty() ? "main" : agent_id;
  ResolvedApprovals r;
  r.security = ResolveField(file, agent, &ApprovalsPolicy::security, kSecurity, fallback_security,
                            "tools.exec", &r.sources);
  r.ask = ResolveField(file, agent, &ApprovalsPolicy::ask, kAsk, fallback_ask, "tools.exec",
                       &r.sources);
  r.ask_fallback = ResolveField(file, agent, &ApprovalsPolicy::ask_fallback, kAskFallback,
                                Security::kFull, "built-in", &r.sources);
  r.auto_allow_skills = ResolveField(file, agent, &ApprovalsPolicy::auto_allow_skills,
                                     kAutoAllowSkills, false, "built-in", &r.sources);
  for (const std::string& id : {std::string("*"), agent}) {
    if (auto it = file.agents.find(id); it != file.agents.end()) {
      r.allowlist.insert(r.allowlist.end(), it->second.allowlist.begin(),
                         it->second.allowlist.end());
    }
    if (agent == "*") break;
  }
  return r;
}

std::string ApprovalsPath(const std::string& state_dir) {
  return state_dir + "/exec-approvals.json";
}

std::string TenantStateDir(const std::string& state_dir, const std::string& tenant) {
  return state_dir + "/tenants/" + tenant;
}

std::string ApprovalsPath(const std::string& state_dir, const std::string& tenant) {
  return tenant.empty() ? ApprovalsPath(state_dir)
                        : TenantStateDir(state_dir, tenant) + "/exec-approvals.json";
}

const StateFileFormat<ApprovalsFile>& ApprovalsFormat() {
  static const StateFileFormat<ApprovalsFile> format{"approvals file", ParseApprovals,
                                                     SerializeApprovals};
  return format;
}

Result<LoadedApprovals> LoadApprovals(const std::string& path) {
  return LoadStateFile(path, ApprovalsFormat());
}

Result<ApprovalsFile> UpdateApprovals(const std::string& path,
                                      const std::function<Status(ApprovalsFile&)>& mutate) {
  return UpdateStateFile(path, ApprovalsFormat(), mutate);
}

std::string NewEntryId() {
  unsigned char b[16];
  size_t filled = 0;
  while (filled < sizeof b) {
    ssize_t n = ::getrandom(b + filled, sizeof b - filled, 0);
    if (n > 0) {
      filled += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      // No getrandom (a very old kernel or a seccomp filter): not for secrets, ids only.
      std::random_device rd;
      for (; filled < sizeof b; ++filled) b[filled] = static_cast<unsigned char>(rd());
    }
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < sizeof b; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 15];
  }
  return out;
}

bool AddAllowlistEntry(ApprovalsFile& file, const std::string& agent, const std::string& pattern,
                       const std::string& source, int64_t now_ms) {
  AllowlistEntry entry;
  entry.pattern = Trim(pattern);
  if (entry.pattern.empty()) return false;
  std::vector<AllowlistEntry>& list = file.agents[agent.empty() ? "main" : agent].allowlist;
  for (AllowlistEntry& existing : list) {
    if (SameRule(existing, entry)) {
      if (!source.empty() && existing.source != source) existing.source = source;
      return false;
    }
  }
  entry.id = NewEntryId();
  entry.source = source;
  entry.last_used_at = now_ms;
  list.push_back(std::move(entry));
  return true;
}

bool RemoveAllowlistEntry(ApprovalsFile& file, const std::string& agent,
                          const std::string& pattern_or_id) {
  auto it = file.agents.find(agent.empty() ? "main" : agent);
  if (it == file.agents.end()) return false;
  std::string key = Trim(pattern_or_id);
  std::string lower = Lower(key);
  if (key.empty()) return false;
  std::vector<AllowlistEntry>& list = it->second.allowlist;
  size_t before = list.size();
  std::erase_if(list,
                [&](const AllowlistEntry& e) { return e.id == key || Lower(e.pattern) == lower; });
  return list.size() != before;
}

void RecordAllowlistUse(ApprovalsFile& file,
                        const std::vector<std::pair<std::string, std::string>>& uses,
                        const std::string& command, int64_t now_ms) {
  for (auto& [agent, policy] : file.agents) {
    for (AllowlistEntry& entry : policy.allowlist) {
      for (const auto& [id, resolved_path] : uses) {
        if (entry.id != id) continue;
        entry.last_used_at = now_ms;
        entry.last_used_command = command;
        entry.last_resolved_path = resolved_path;
      }
    }
  }
}

std::string ExactCommandPattern(std::string_view command) {
  return "=command:" + Sha256Hex(Trim(command)).substr(0, 16);
}

}  // namespace sandrun::config

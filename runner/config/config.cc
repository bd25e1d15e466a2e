#include "runner/config/config.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>

#include "runner/config/json_lines.h"
#include "runner/config/state_dir.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"
#include "sandbox/os/file.h"

namespace sandrun::config {
namespace {

using rapidjson::Value;

// Integers are bounded by JavaScript's Number.MAX_SAFE_INTEGER, as in OpenClaw; seconds times
// 1000 still fit in an int64_t.
constexpr int64_t kMaxInteger = (int64_t{1} << 53) - 1;
constexpr size_t kMaxConfigBytes = 16u << 20;
constexpr size_t kMaxNesting = 64;

const std::vector<const char*> kHosts = {"auto", "sandbox", "gateway", "node"};
const std::vector<const char*> kElevatedLevels = {"off", "on", "ask", "full"};
// Names under agents.* that are not agent ids.
const std::vector<std::string_view> kReservedAgentIds = {"defaults", "list", "entries"};

template <typename E>
constexpr int kEnumCount = 0;
template <>
constexpr int kEnumCount<SandboxMode> = 3;
template <>
constexpr int kEnumCount<SandboxScope> = 3;
template <>
constexpr int kEnumCount<WorkspaceAccess> = 3;
template <>
constexpr int kEnumCount<Security> = 3;
template <>
constexpr int kEnumCount<Ask> = 3;
template <>
constexpr int kEnumCount<ExecMode> = 5;

std::string JoinNames(const std::vector<const char*>& names) {
  std::string out;
  for (const char* name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// A value as quoted in errors: scalars as JSON (shortened), containers by kind.
std::string Describe(const Value& v) {
  if (v.IsObject()) return "an object";
  if (v.IsArray()) return "an array";
  std::string text = ToJson(v);
  if (text.size() > 64) text = text.substr(0, 60) + "...";
  return text;
}

bool IsAgentId(std::string_view id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// [a-z0-9-]+: names of files under profiles/, so they can never walk out of that directory.
bool IsProfileName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

// Docker's container name rule: [a-zA-Z0-9][a-zA-Z0-9_.-]*.
bool IsContainerPrefix(std::string_view prefix) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  return !prefix.empty() && alnum(prefix[0]) &&
         std::all_of(prefix.begin(), prefix.end(),
                     [&](char c) { return alnum(c) || c == '_' || c == '.' || c == '-'; });
}

Result<std::string> HomeDir() {
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home);
  const passwd* pw = ::getpwuid(::geteuid());
  if (pw != nullptr && pw->pw_dir != nullptr && *pw->pw_dir) return std::string(pw->pw_dir);
  return Error(ErrorCode::kNotFound, "cannot expand ~: HOME is not set");
}

// The integral value of a JSON number, saturated just outside [-kMaxInteger, kMaxInteger];
// nullopt for anything else (including fractions).
std::optional<int64_t> IntegralValue(const Value& v) {
  if (v.IsInt64()) return std::clamp(v.GetInt64(), -kMaxInteger - 1, kMaxInteger + 1);
  if (v.IsUint64()) return kMaxInteger + 1;
  if (!v.IsDouble()) return std::nullopt;
  double d = v.GetDouble();
  if (!std::isfinite(d) || d != std::floor(d)) return std::nullopt;
  if (d > static_cast<double>(kMaxInteger)) return kMaxInteger + 1;
  if (d < -static_cast<double>(kMaxInteger)) return -kMaxInteger - 1;
  return static_cast<int64_t>(d);
}

template <typename T>
Status Discard(Result<T> result) {
  if (!result) return std::move(result).error();
  return Ok();
}

enum class Level { kGlobal, kAgent };

// What a string must look like.
enum class Rule {
  kAny,
  kNonEmpty,             // not empty after trimming
  kTrimmed,              // not empty after trimming; stored trimmed
  kProfileName,          // [a-z0-9-]+
  kOptionalProfileName,  // [a-z0-9-]+ or ""
  kAbsolutePath,         // starts with '/'
  kUserPath,             // "", absolute, or "~" / "~/...": expanded with $HOME
  kTmpfs,                // an absolute path, optionally followed by ":options"
  kContainerPrefix,      // Docker's container name characters
};

const char* RuleText(Rule rule) {
  switch (rule) {
    case Rule::kAny:
      return "a string";
    case Rule::kNonEmpty:
    case Rule::kTrimmed:
      return "a non-empty string";
    case Rule::kProfileName:
    case Rule::kOptionalProfileName:
      return "a profile name of lowercase letters, digits and '-'";
    case Rule::kAbsolutePath:
      return "an absolute path";
    case Rule::kUserPath:
      return "an absolute path or one starting with ~/";
    case Rule::kTmpfs:
      return "an absolute path (optionally followed by :options)";
    case Rule::kContainerPrefix:
      return "a container name prefix ([a-zA-Z0-9][a-zA-Z0-9_.-]*)";
  }
  return "a string";
}

// Applies one member's value, found at `path`.
using Apply = std::function<Status(const Value& value, const std::string& path)>;
struct Field {
  const char* key;
  Apply apply;  // empty: accepted and ignored
};

// Walks the DOM with the positions from JsonLines; every error names the key path and where it
// is. The settings are applied key by key over what is already in the output structs, which is
// how defaults, the global level and agents stack up.
class Loader {
 public:
  explicit Loader(const JsonLines& lines) : lines_(lines) {}

  Status Load(const Value& root, Config* config) {
    if (!root.IsObject()) {
      return Error(
          ErrorCode::kInvalidArgument,
          lines_.Where("") + ": expected a JSON object at the top level, got " + Describe(root));
    }
    // agents.defaults is the global level too; the top-level keys are applied after it so that
    // they win.
    const Value* agents = JsonMember(root, "agents");
    if (agents != nullptr && agents->IsObject()) {
      if (const Value* defaults = JsonMember(*agents, "defaults")) {
        SANDRUN_RETURN_IF_ERROR(
            ApplySection(*defaults, "agents.defaults", &config->global, Level::kGlobal));
      }
    }
    SANDRUN_RETURN_IF_ERROR(Members(
        root, "",
        {
            {"$schema", {}},
            {"version", {}},
            {"tools", [&](const Value& v,
                          const std::string& p) { return ApplyTools(v, p, &config->global); }},
            {"sandbox",
             [&](const Value& v, const std::string& p) {
               return ApplySandbox(v, p, &config->global.sandbox, Level::kGlobal);
             }},
            {"agents",
             [&](const Value& v, const std::string& p) -> Status {
               if (!v.IsObject()) return Expected(p, "an object", v);
               return Ok();
             }},
        }));
    if (agents != nullptr && agents->IsObject()) {
      SANDRUN_RETURN_IF_ERROR(ApplyAgents(*agents, "agents", config));
    }
    return Ok();
  }

  std::vector<std::string> TakeWarnings() { return std::move(warnings_); }

 private:
  // "FILE:L:C: path: reason".
  Error Fail(const std::string& path, const std::string& reason, bool at_key = false) const {
    return Error(ErrorCode::kInvalidArgument,
                 lines_.Where(path, at_key) + ": " + path + ": " + reason);
  }
  Error Expected(const std::string& path, const std::string& what, const Value& v) const {
    return Fail(path, "expected " + what + ", got " + Describe(v));
  }
  void Warn(const std::string& path, const std::string& text, bool at_key = true) {
    warnings_.push_back(lines_.Where(path, at_key) + ": " + text);
  }

  // Applies the members of the object `v` (at `path`) through `fields`; unknown keys are warned
  // about and skipped.
  Status Members(const Value& v, const std::string& path, const std::vector<Field>& fields) {
    if (!v.IsObject()) return Expected(path, "an object", v);
    for (const auto& member : v.GetObject()) {
      std::string_view key(member.name.GetString(), member.name.GetStringLength());
      std::string child = JoinKey(path, key);
      auto field =
          std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return key == f.key; });
      if (field == fields.end()) {
        Warn(child, "unknown key " + child + " (ignored)");
        continue;
      }
      if (field->apply) SANDRUN_RETURN_IF_ERROR(field->apply(member.value, child));
    }
    return Ok();
  }

  // ---- Typed readers. ----

  Result<std::string> String(const Value& v, const std::string& path, Rule rule = Rule::kAny) {
    if (!v.IsString()) return Expected(path, RuleText(rule), v);
    std::string s(v.GetString(), v.GetStringLength());
    if (s.find('\0') != std::string::npos) return Fail(path, "contains a NUL byte");
    bool ok = true;
    switch (rule) {
      case Rule::kAny:
        break;
      case Rule::kNonEmpty:
        ok = !Trim(s).empty();
        break;
      case Rule::kTrimmed:
        s = Trim(s);
        ok = !s.empty();
        break;
      case Rule::kProfileName:
        ok = IsProfileName(s);
        break;
      case Rule::kOptionalProfileName:
        ok = s.empty() || IsProfileName(s);
        break;
      case Rule::kAbsolutePath:
        ok = !s.empty() && s[0] == '/';
        break;
      case Rule::kTmpfs:
        ok = !s.empty() && s[0] == '/';
        break;
      case Rule::kContainerPrefix:
        ok = IsContainerPrefix(s);
        break;
      case Rule::kUserPath:
        if (s == "~" || s.starts_with("~/")) {
          Result<std::string> home = HomeDir();
          if (!home) return Fail(path, home.error().message);
          std::string rest = s.substr(1);
          if (!home->empty() && home->back() == '/' && !rest.empty()) rest.erase(0, 1);
          s = *home + rest;
        } else {
          ok = s.empty() || s[0] == '/';
        }
        break;
    }
    if (!ok) return Expected(path, RuleText(rule), v);
    return s;
  }

  Result<bool> Bool(const Value& v, const std::string& path) {
    if (!v.IsBool()) return Expected(path, "true or false", v);
    return v.GetBool();
  }

  // An integer in [lo, hi]; out-of-range values are an error, or with `clamp` a warning and the
  // nearest bound.
  Result<int64_t> Integer(const Value& v, const std::string& path, int64_t lo, int64_t hi,
                          bool clamp) {
    std::string what;
    if (clamp) {
      what = "an integer";
    } else if (lo == 0 && hi == kMaxInteger) {
      what = "a non-negative integer";
    } else {
      what = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    }
    std::optional<int64_t> n = IntegralValue(v);
    if (!n) return Expected(path, what, v);
    if (*n >= lo && *n <= hi) return *n;
    if (!clamp) return Expected(path, what, v);
    int64_t bound = *n < lo ? lo : hi;
    Warn(path,
         path + ": " + Describe(v) + " is outside " + std::to_string(lo) + ".." +
             std::to_string(hi) + "; using " + std::to_string(bound),
         false);
    return bound;
  }

  Result<double> Number(const Value& v, const std::string& path, double lo) {
    if (!v.IsNumber() || !std::isfinite(v.GetDouble()) || v.GetDouble() < lo) {
      return Expected(path, lo == 0 ? "a non-negative number" : "a number", v);
    }
    return v.GetDouble();
  }

  Result<std::vector<std::string>> Strings(const Value& v, const std::string& path,
                                           Rule rule = Rule::kAny) {
    if (!v.IsArray()) return Expected(path, "an array of strings", v);
    std::vector<std::string> out;
    out.reserve(v.Size());
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      SANDRUN_ASSIGN_OR_RETURN(std::string s, String(v[i], JoinIndex(path, i), rule));
      out.push_back(std::move(s));
    }
    return out;
  }

  Result<size_t> OneOf(const Value& v, const std::string& path,
                       const std::vector<const char*>& names) {
    std::string what = "one of " + JoinNames(names);
    if (!v.IsString()) return Expected(path, what, v);
    std::string s = Lower(Trim(std::string_view(v.GetString(), v.GetStringLength())));
    for (size_t i = 0; i < names.size(); ++i) {
      if (s == names[i]) return i;
    }
    return Expected(path, what, v);
  }

  template <typename E>
  Result<E> Enum(const Value& v, const std::string& path) {
    std::vector<const char*> names;
    for (int i = 0; i < kEnumCount<E>; ++i) names.push_back(ToString(static_cast<E>(i)));
    SANDRUN_ASSIGN_OR_RETURN(size_t index, OneOf(v, path, names));
    return static_cast<E>(index);
  }

  // A byte count: a non-negative integer or a string such as "512m"; -1 with `allow_minus_one`.
  Result<int64_t> Bytes(const Value& v, const std::string& path, bool allow_minus_one) {
    std::string what = allow_minus_one
                           ? "a byte count (an integer, -1, or a string like \"512m\" or \"1.5g\")"
                           : "a byte count (an integer or a string like \"512m\" or \"1.5g\")";
    if (v.IsNumber()) {
      std::optional<int64_t> n = IntegralValue(v);
      if (!n || *n > kMaxInteger || (*n < 0 && !(allow_minus_one && *n == -1))) {
        return Expected(path, what, v);
      }
      return *n;
    }
    if (v.IsString()) {
      std::string s = Trim(std::string_view(v.GetString(), v.GetStringLength()));
      if (allow_minus_one && s == "-1") return int64_t{-1};
      Result<int64_t> bytes = ParseByteSize(s);
      if (bytes) return *bytes;
    }
    return Expected(path, what, v);
  }

  // ---- Field makers: a key and where its value goes. ----

  Field Str(const char* key, std::string* out, Rule rule = Rule::kAny) {
    return {key, [this, out, rule](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, String(v, p, rule));
              return Ok();
            }};
  }
  Field Flag(const char* key, bool* out) {
    return {key, [this, out](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Bool(v, p));
              return Ok();
            }};
  }
  Field Int(const char* key, int64_t* out, int64_t lo = 0, int64_t hi = kMaxInteger,
            bool clamp = false) {
    return {key, [this, out, lo, hi, clamp](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Integer(v, p, lo, hi, clamp));
              return Ok();
            }};
  }
  Field Clamped(const char* key, int64_t* out, int64_t lo, int64_t hi) {
    return Int(key, out, lo, hi, true);
  }
  Field Num(const char* key, double* out) {
    return {key, [this, out](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Number(v, p, 0));
              return Ok();
            }};
  }
  Field List(const char* key, std::vector<std::string>* out, Rule rule = Rule::kAny) {
    return {key, [this, out, rule](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Strings(v, p, rule));
              return Ok();
            }};
  }
  Field Name(const char* key, std::string* out, const std::vector<const char*>& names) {
    return {key, [this, out, &names](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(size_t index, OneOf(v, p, names));
              *out = names[index];
              return Ok();
            }};
  }
  template <typename E>
  Field Choice(const char* key, E* out) {
    return {key, [this, out](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Enum<E>(v, p));
              return Ok();
            }};
  }
  template <typename E>
  Field Choice(const char* key, std::optional<E>* out) {
    return {key, [this, out](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Enum<E>(v, p));
              return Ok();
            }};
  }
  Field Size(const char* key, int64_t* out, bool allow_minus_one) {
    return {key, [this, out, allow_minus_one](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(*out, Bytes(v, p, allow_minus_one));
              return Ok();
            }};
  }
  // Keys that later features read: type-checked now so a mistake is reported early.
  Field CheckBool(const char* key) {
    return {key, [this](const Value& v, const std::string& p) { return Discard(Bool(v, p)); }};
  }
  Field CheckStrings(const char* key) {
    return {key, [this](const Value& v, const std::string& p) { return Discard(Strings(v, p)); }};
  }
  Field CheckInt(const char* key) {
    return {key, [this](const Value& v, const std::string& p) {
              return Discard(Integer(v, p, 0, kMaxInteger, false));
            }};
  }
  Field CheckString(const char* key) {
    return {key, [this](const Value& v, const std::string& p) { return Discard(String(v, p)); }};
  }
  Field CheckObject(const char* key) {
    return {key, [this](const Value& v, const std::string& p) -> Status {
              if (!v.IsObject()) return Expected(p, "an object", v);
              return Ok();
            }};
  }

  // ---- Sections. ----

  // agents.defaults and agents.<id>: tools, sandbox, workspace (and "id" in agents.list[]).
  Status ApplySection(const Value& v, const std::string& path, AgentSettings* out, Level level,
                      bool list_entry = false) {
    std::vector<Field> fields = {
        {"tools", [&](const Value& x, const std::string& p) { return ApplyTools(x, p, out); }},
        {"sandbox", [&](const Value& x,
                        const std::string& p) { return ApplySandbox(x, p, &out->sandbox, level); }},
        Str("workspace", &out->workspace, Rule::kUserPath),
    };
    if (list_entry) fields.push_back({"id", {}});
    return Members(v, path, fields);
  }

  Status ApplyTools(const Value& v, const std::string& path, AgentSettings* out) {
    return Members(
        v, path,
        {
            {"exec",
             [&](const Value& x, const std::string& p) { return ApplyExec(x, p, &out->exec); }},
            {"elevated", [&](const Value& x,
                             const std::string& p) { return ApplyElevated(x, p, &out->elevated); }},
            List("allow", &out->tools.allow),
            List("deny", &out->tools.deny),
        });
  }

  Status ApplyExec(const Value& v, const std::string& path, ExecSettings* e) {
    bool has_timeout_seconds = v.IsObject() && v.HasMember("timeoutSeconds");
    return Members(
        v, path,
        {
            Name("host", &e->host, kHosts),
            Choice("mode", &e->mode),
            Choice("security", &e->security),
            Choice("ask", &e->ask),
            Int("timeoutSeconds", &e->timeout_seconds),
            {"timeoutSec",
             [this, e, has_timeout_seconds](const Value& x, const std::string& p) -> Status {
               SANDRUN_ASSIGN_OR_RETURN(int64_t seconds, Integer(x, p, 0, kMaxInteger, false));
               if (has_timeout_seconds) {
                 Warn(p, p + " is ignored: timeoutSeconds is set too");
               } else {
                 e->timeout_seconds = seconds;
               }
               return Ok();
             }},
            Clamped("backgroundMs", &e->background_ms, 10, 120000),
            Clamped("maxOutputChars", &e->max_output_chars, 1000, 200000),
            Clamped("pendingMaxOutputChars", &e->pending_max_output_chars, 1000, 200000),
            Clamped("cleanupMs", &e->cleanup_ms, 60000, 10800000),
            Flag("notifyOnExit", &e->notify_on_exit),
            Flag("notifyOnExitEmptySuccess", &e->notify_on_exit_empty_success),
            List("pathPrepend", &e->path_prepend),
            Flag("loginShellPath", &e->login_shell_path),
            Str("node", &e->node),
            Str("hostProfile", &e->host_profile, Rule::kProfileName),
            Str("hostUser", &e->host_user),
            // Read by later features.
            CheckStrings("safeBins"),
            CheckStrings("safeBinTrustedDirs"),
            CheckObject("safeBinProfiles"),
            CheckBool("strictInlineEval"),
            CheckBool("autoAllowSkills"),
            CheckInt("approvalTimeoutMs"),
            {"reviewer",
             [this](const Value& x, const std::string& p) {
               return Members(x, p,
                              {
                                  {"command",
                                   [this](const Value& c, const std::string& cp) -> Status {
                                     if (c.IsString()) return Discard(String(c, cp));
                                     if (c.IsArray()) return Discard(Strings(c, cp));
                                     return Expected(cp, "a string or an array of strings", c);
                                   }},
                                  CheckString("model"),
                                  CheckInt("timeoutMs"),
                              });
             }},
            {"applyPatch",
             [this, e](const Value& x, const std::string& p) {
               return Members(x, p,
                              {
                                  Flag("enabled", &e->apply_patch.enabled),
                                  Flag("workspaceOnly", &e->apply_patch.workspace_only),
                                  List("allowModels", &e->apply_patch.allow_models, Rule::kTrimmed),
                              });
             }},
        });
  }

  Status ApplyElevated(const Value& v, const std::string& path, ElevatedSettings* out) {
    return Members(v, path,
                   {
                       Flag("enabled", &out->enabled),
                       {"allowFrom",
                        [this, out](const Value& x, const std::string& p) -> Status {
                          if (!x.IsObject())
                            return Expected(p, "an object of provider: [senders]", x);
                          for (const auto& provider : x.GetObject()) {
                            std::string name(provider.name.GetString(),
                                             provider.name.GetStringLength());
                            std::string provider_path = JoinKey(p, name);
                            SANDRUN_ASSIGN_OR_RETURN(out->allow_from[name],
                                                     Senders(provider.value, provider_path));
                          }
                          return Ok();
                        }},
                       Name("defaultLevel", &out->default_level, kElevatedLevels),
                       Str("hostProfile", &out->host_profile, Rule::kOptionalProfileName),
                   });
  }

  // allowFrom.<provider>: sender names or globs; OpenClaw also allows numeric ids.
  Result<std::vector<std::string>> Senders(const Value& v, const std::string& path) {
    if (!v.IsArray()) return Expected(path, "an array of strings", v);
    std::vector<std::string> out;
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      if (v[i].IsInt64() || v[i].IsUint64()) {
        out.push_back(ToJson(v[i]));
        continue;
      }
      SANDRUN_ASSIGN_OR_RETURN(std::string s, String(v[i], JoinIndex(path, i), Rule::kNonEmpty));
      out.push_back(std::move(s));
    }
    return out;
  }

  Status ApplySandbox(const Value& v, const std::string& path, SandboxSettings* s, Level level) {
    bool has_scope = v.IsObject() && v.HasMember("scope");
    DockerSettings docker_before = s->docker;
    PruneSettings prune_before = s->prune;
    SANDRUN_RETURN_IF_ERROR(
        Members(v, path,
                {
                    Choice("mode", &s->mode),
                    Choice("scope", &s->scope),
                    {"perSession",
                     [this, s, has_scope](const Value& x, const std::string& p) -> Status {
                       // Legacy: true -> session, false -> shared; an explicit scope wins.
                       SANDRUN_ASSIGN_OR_RETURN(bool per_session, Bool(x, p));
                       if (!has_scope)
                         s->scope = per_session ? SandboxScope::kSession : SandboxScope::kShared;
                       return Ok();
                     }},
                    Choice("workspaceAccess", &s->workspace_access),
                    Str("workspaceRoot", &s->workspace_root, Rule::kUserPath),
                    Str("mainSessionKey", &s->main_session_key, Rule::kTrimmed),
                    {"docker",
                     [this, s, level](const Value& x, const std::string& p) {
                       return ApplyDocker(x, p, &s->docker, level);
                     }},
                    {"prune",
                     [this, s](const Value& x, const std::string& p) {
                       return Members(x, p,
                                      {Num("idleHours", &s->prune.idle_hours),
                                       Num("maxAgeDays", &s->prune.max_age_days)});
                     }},
                }));
    // OpenClaw: one shared container cannot honour per-agent container settings.
    if (level == Level::kAgent && s->scope == SandboxScope::kShared) {
      for (const char* key : {"docker", "prune"}) {
        if (!v.HasMember(key)) continue;
        std::string p = JoinKey(path, key);
        Warn(p, p +
                    " is ignored: the agent's sandbox.scope is \"shared\", so it uses the global "
                    "sandbox." +
                    key + " settings");
      }
      s->docker = std::move(docker_before);
      s->prune = prune_before;
    }
    return Ok();
  }

  Status ApplyDocker(const Value& v, const std::string& path, DockerSettings* d, Level level) {
    return Members(v, path,
                   {
                       Str("image", &d->image, Rule::kNonEmpty),
                       Str("containerPrefix", &d->container_prefix, Rule::kContainerPrefix),
                       Str("workdir", &d->workdir, Rule::kAbsolutePath),
                       Flag("readOnlyRoot", &d->read_only_root),
                       List("tmpfs", &d->tmpfs, Rule::kTmpfs),
                       Str("network", &d->network, Rule::kNonEmpty),
                       List("capDrop", &d->cap_drop, Rule::kNonEmpty),
                       {"env",
                        [this, d, level](const Value& x, const std::string& p) -> Status {
                          SANDRUN_ASSIGN_OR_RETURN(auto env, Env(x, p));
                          // The first global env replaces the built-in one; agents merge over the
                          // global.
                          if (level == Level::kGlobal && !global_env_set_) {
                            d->env.clear();
                            global_env_set_ = true;
                          }
                          for (auto& [key, value] : env) d->env[key] = std::move(value);
                          return Ok();
                        }},
                       Str("user", &d->user),
                       Str("setupCommand", &d->setup_command),
                       Int("pidsLimit", &d->pids_limit),
                       Size("memory", &d->memory_bytes, false),
                       Size("memorySwap", &d->memory_swap_bytes, true),
                       Num("cpus", &d->cpus),
                       Str("seccompProfile", &d->seccomp_profile, Rule::kProfileName),
                       Str("apparmorProfile", &d->apparmor_profile),
                       {"binds",
                        [this, d](const Value& x, const std::string& p) -> Status {
                          SANDRUN_ASSIGN_OR_RETURN(auto binds, Strings(x, p, Rule::kNonEmpty));
                          d->binds.insert(d->binds.end(), binds.begin(), binds.end());
                          return Ok();
                        }},
                   });
  }

  Result<std::map<std::string, std::string>> Env(const Value& v, const std::string& path) {
    if (!v.IsObject()) return Expected(path, "an object of NAME: value strings", v);
    std::map<std::string, std::string> out;
    for (const auto& member : v.GetObject()) {
      std::string key(member.name.GetString(), member.name.GetStringLength());
      std::string p = JoinKey(path, key);
      if (key.empty() || key.find('=') != std::string::npos ||
          key.find('\0') != std::string::npos) {
        return Fail(p, "invalid environment variable name", true);
      }
      SANDRUN_ASSIGN_OR_RETURN(out[key], String(member.value, p));
    }
    return out;
  }

  Status ApplyAgents(const Value& agents, const std::string& path, Config* config) {
    for (const auto& member : agents.GetObject()) {
      std::string name(member.name.GetString(), member.name.GetStringLength());
      std::string p = JoinKey(path, name);
      if (name == "defaults") continue;  // applied first, as the global level
      if (name == "list") {
        if (!member.value.IsArray()) {
          return Expected(p, "an array of agents ([{\"id\": ...}])", member.value);
        }
        for (rapidjson::SizeType i = 0; i < member.value.Size(); ++i) {
          const Value& entry = member.value[i];
          std::string entry_path = JoinIndex(p, i);
          const Value* id = JsonMember(entry, "id");
          if (id == nullptr) return Expected(entry_path, "an agent with an \"id\"", entry);
          SANDRUN_ASSIGN_OR_RETURN(std::string agent_id,
                                   String(*id, JoinKey(entry_path, "id"), Rule::kNonEmpty));
          SANDRUN_RETURN_IF_ERROR(
              AddAgent(agent_id, entry, entry_path, JoinKey(entry_path, "id"), true, config));
        }
        continue;
      }
      if (name == "entries") {
        if (!member.value.IsObject()) return Expected(p, "an object of agents", member.value);
        for (const auto& entry : member.value.GetObject()) {
          std::string agent_id(entry.name.GetString(), entry.name.GetStringLength());
          std::string entry_path = JoinKey(p, agent_id);
          SANDRUN_RETURN_IF_ERROR(
              AddAgent(agent_id, entry.value, entry_path, entry_path, false, config));
        }
        continue;
      }
      SANDRUN_RETURN_IF_ERROR(AddAgent(name, member.value, p, p, false, config));
    }
    return Ok();
  }

  // One agent: the global settings with the agent's section applied over them. `id_path` is
  // where the id is written (a key, or agents.list[i].id).
  Status AddAgent(const std::string& id, const Value& v, const std::string& path,
                  const std::string& id_path, bool list_entry, Config* config) {
    bool id_is_key = id_path == path;
    if (!IsAgentId(id)) {
      return Fail(id_path, "invalid agent id \"" + id + "\" (use letters, digits, '_' and '-')",
                  id_is_key);
    }
    if (std::find(kReservedAgentIds.begin(), kReservedAgentIds.end(), id) !=
        kReservedAgentIds.end()) {
      return Fail(id_path, "\"" + id + "\" is reserved and cannot be an agent id", id_is_key);
    }
    if (auto first = agent_paths_.find(id); first != agent_paths_.end()) {
      return Fail(id_path,
                  "agent " + id + " is defined twice (first at line " +
                      std::to_string(lines_.Line(first->second)) + ")",
                  id_is_key);
    }
    agent_paths_.emplace(id, path);
    AgentSettings settings = config->global;
    SANDRUN_RETURN_IF_ERROR(ApplySection(v, path, &settings, Level::kAgent, list_entry));
    config->agents.emplace(id, std::move(settings));
    return Ok();
  }

  const JsonLines& lines_;
  std::vector<std::string> warnings_;
  bool global_env_set_ = false;
  std::map<std::string, std::string> agent_paths_;  // agent id -> path of its section
};

}  // namespace

AgentSettings Config::ForAgent(const std::string& agent_id) const {
  auto it = agents.find(agent_id);
  return it == agents.end() ? global : it->second;
}

Result<int64_t> ParseByteSize(std::string_view text) {
  auto invalid = [&] {
    return Error(ErrorCode::kInvalidArgument,
                 "invalid byte size \"" + std::string(text) +
                     "\" (expected a number with an optional k, m, g or t suffix)");
  };
  std::string s = Lower(Trim(text));
  if (!s.empty() && s.back() == 'b') s.pop_back();
  int shift = 0;
  if (!s.empty()) {
    switch (s.back()) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      case 't':
        shift = 40;
        break;
      default:
        break;
    }
    if (shift != 0) s.pop_back();
  }
  // <digits>[.<digits>]
  size_t dot = s.find('.');
  std::string_view whole = std::string_view(s).substr(0, dot);
  std::string_view fraction =
      dot == std::string::npos ? std::string_view() : std::string_view(s).substr(dot + 1);
  auto digits = [](std::string_view d) {
    return !d.empty() &&
           std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(whole) || (dot != std::string::npos && !digits(fraction))) return invalid();
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return invalid();
  double bytes = std::floor(std::ldexp(value, shift));
  if (!(bytes <= static_cast<double>(kMaxInteger))) return invalid();
  return static_cast<int64_t>(bytes);
}

Result<Config> LoadConfig(const std::string& path, bool must_exist) {
  Config config;
  Result<std::string> text = ReadFile(path, kMaxConfigBytes);
  if (!text) {
    if (text.error().code == ErrorCode::kNotFound) {
      if (!must_exist) return config;
      return Error(ErrorCode::kNotFound, "config file " + path + " does not exist");
    }
    return std::move(text).error();
  }
  config.source_path = path;
  std::string_view body = *text;
  if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);       // a UTF-8 byte order mark
  if (SkipJsonTrivia(body, 0, false) == body.size()) return config;  // empty: the defaults

  if (size_t deep = FindJsonNestingDeeperThan(body, kMaxNesting); deep != std::string_view::npos) {
    return Error(ErrorCode::kInvalidArgument, JsonSourcePosition(body, deep, path) +
                                                  ": objects and arrays nested deeper than " +
                                                  std::to_string(kMaxNesting) + " levels");
  }
  JsonParseOptions options;
  options.allow_comments_and_trailing_commas = true;
  options.source_name = path;
  SANDRUN_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body, options));
  SANDRUN_ASSIGN_OR_RETURN(JsonLines lines, JsonLines::Build(body, path));

  Loader loader(lines);
  SANDRUN_RETURN_IF_ERROR(loader.Load(doc, &config));
  config.warnings = loader.TakeWarnings();
  return config;
}

Result<Config> LoadConfigFor(const std::string& explicit_path, const std::string& state_dir) {
  if (!explicit_path.empty()) return LoadConfig(explicit_path, true);
  std::string dir = state_dir;
  if (dir.empty()) {
    SANDRUN_ASSIGN_OR_RETURN(dir, StateDirPath());
  }
  return LoadConfig(dir + "/config.json", false);
}

}  // namespace sandrun::config

#include "runner/config/config.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>

#include "runner/config/config_reader.h"
#include "runner/config/ids.h"
#include "runner/config/json_lines.h"
#include "runner/config/state_dir.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"
#include "sandbox/os/file.h"
#include "sandbox/os/trusted_file.h"

namespace sandrun::config {
namespace {

using namespace internal;  // NOLINT: the reader's vocabulary (Field, Rule, ...)

constexpr size_t kMaxConfigBytes = 16u << 20;
constexpr size_t kMaxNesting = 64;

const std::vector<const char*> kHosts = {"auto", "sandbox", "gateway", "node"};
const std::vector<const char*> kElevatedLevels = {"off", "on", "ask", "full"};
// Names under agents.* that are not agent ids.
const std::vector<std::string_view> kReservedAgentIds = {"defaults", "list", "entries"};

bool IsAgentId(std::string_view id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

enum class Level { kGlobal, kAgent };

// The sections of config.json over the typed reader: defaults, the global level and agents stack
// up key by key.
class Loader : public ConfigReader {
 public:
  explicit Loader(const JsonLines& lines) : ConfigReader(lines) {}

  Status Load(const Value& root, Config* config) {
    if (!root.IsObject()) {
      return Error(
          ErrorCode::kInvalidArgument,
          lines_.Where("") + ": expected a JSON object at the top level, got " + Describe(root));
    }
    const Value* agents = JsonMember(root, "agents");
    SANDRUN_RETURN_IF_ERROR(ApplyLevel(
        root, "", &config->global,
        {
            {"$schema", {}},
            {"version", {}},
            {"server", [&](const Value& v,
                           const std::string& p) { return ApplyServer(v, p, &config->server); }},
            {"mcp",
             [&](const Value& v, const std::string& p) { return ApplyMcp(v, p, &config->mcp); }},
            {"tenants",
             [&](const Value& v, const std::string& p) -> Status {
               if (!v.IsObject()) return Expected(p, "an object of tenants", v);
               return Ok();
             }},
        }));
    if (agents != nullptr && agents->IsObject()) {
      SANDRUN_RETURN_IF_ERROR(
          ApplyAgents(*agents, "agents", config->global, &config->agents, &agent_paths_));
    }
    const Value* tenants = JsonMember(root, "tenants");
    if (tenants != nullptr && tenants->IsObject()) {
      for (const auto& member : tenants->GetObject()) {
        std::string id(member.name.GetString(), member.name.GetStringLength());
        std::string p = JoinKey("tenants", id);
        if (auto bad = TenantIdError(id)) return Fail(p, *bad, true);
        TenantConfig tenant;
        // Each tenant starts from the file's own state of the global docker env.
        const bool env_set = global_env_set_;
        Status applied = ApplyTenant(member.value, p, agents, *config, &tenant);
        global_env_set_ = env_set;
        SANDRUN_RETURN_IF_ERROR(applied);
        config->tenants.emplace(std::move(id), std::move(tenant));
      }
    }
    return Ok();
  }

  // One level of the file (the top, or tenants.<id> at `path`) into `global`: agents.defaults
  // first, then the level's tools and sandbox keys, which win; `extra` are the level's own keys.
  // The agents.<id> sections are applied afterwards by the caller, over the finished level.
  Status ApplyLevel(const Value& v, const std::string& path, AgentSettings* global,
                    std::vector<Field> extra) {
    const Value* agents = JsonMember(v, "agents");
    if (agents != nullptr && agents->IsObject()) {
      if (const Value* defaults = JsonMember(*agents, "defaults")) {
        SANDRUN_RETURN_IF_ERROR(ApplySection(
            *defaults, JoinKey(JoinKey(path, "agents"), "defaults"), global, Level::kGlobal));
      }
    }
    std::vector<Field> fields = {
        {"tools", [&](const Value& x, const std::string& p) { return ApplyTools(x, p, global); }},
        {"sandbox",
         [&](const Value& x, const std::string& p) {
           return ApplySandbox(x, p, &global->sandbox, Level::kGlobal);
         }},
        {"agents",
         [&](const Value& x, const std::string& p) -> Status {
           if (!x.IsObject()) return Expected(p, "an object", x);
           return Ok();
         }},
    };
    fields.insert(fields.end(), std::make_move_iterator(extra.begin()),
                  std::make_move_iterator(extra.end()));
    return Members(v, path, fields);
  }

  // tenants.<id>: the file's levels again with the tenant's keys over them (config.h).
  Status ApplyTenant(const Value& v, const std::string& path, const Value* file_agents,
                     const Config& config, TenantConfig* tenant) {
    if (!v.IsObject()) return Expected(path, "an object", v);
    tenant->global = config.global;
    SANDRUN_RETURN_IF_ERROR(ApplyLevel(
        v, path, &tenant->global,
        {
            {"quotas", [&](const Value& x,
                           const std::string& p) { return ApplyQuotas(x, p, &tenant->quotas); }},
            Flag("hostExecution", &tenant->host_execution),
        }));
    const Value* own_agents = JsonMember(v, "agents");
    if (file_agents != nullptr && file_agents->IsObject()) {
      // The file's agents once more, over this tenant's global level; their warnings were
      // given when the file's own agents were read.
      const size_t warned = warnings_.size();
      std::map<std::string, std::string> seen;
      SANDRUN_RETURN_IF_ERROR(
          ApplyAgents(*file_agents, "agents", tenant->global, &tenant->agents, &seen));
      warnings_.resize(warned);
    }
    if (own_agents != nullptr && own_agents->IsObject()) {
      std::map<std::string, std::string> seen;
      SANDRUN_RETURN_IF_ERROR(ApplyAgents(*own_agents, JoinKey(path, "agents"), tenant->global,
                                          &tenant->agents, &seen));
    }
    return Ok();
  }

  Status ApplyQuotas(const Value& v, const std::string& path, TenantQuotas* q) {
    return Members(v, path,
                   {
                       Int("maxConcurrentExecs", &q->max_concurrent_execs),
                       Int("maxSessions", &q->max_sessions),
                       Int("maxContainers", &q->max_containers),
                       Int("requestsPerMinute", &q->requests_per_minute),
                       Size("maxLogBytes", &q->max_log_bytes, false),
                       Size("memory", &q->memory_bytes, false),
                       Num("cpus", &q->cpus),
                       Int("pids", &q->pids),
                   });
  }

  // ---- Sections. ----

  Status ApplyServer(const Value& v, const std::string& path, ServerSettings* s) {
    SANDRUN_RETURN_IF_ERROR(Members(v, path,
                                    {
                                        Int("maxConnections", &s->max_connections, 1, 65536),
                                        Int("headerTimeoutMs", &s->header_timeout_ms, 100, 3600000),
                                        Int("idleTimeoutMs", &s->idle_timeout_ms, 100, 86400000),
                                        Size("maxBodyBytes", &s->max_body_bytes, false),
                                        Size("maxBufferedBytes", &s->max_buffered_bytes, false),
                                    }));
    const std::string body = JoinKey(path, "maxBodyBytes");
    const std::string buffered = JoinKey(path, "maxBufferedBytes");
    if (s->max_body_bytes < 1024) {
      return Fail(body, "expected at least 1024 bytes, got " + std::to_string(s->max_body_bytes));
    }
    if (s->max_buffered_bytes < s->max_body_bytes) {
      // Blames the key the file sets (maxBufferedBytes when both are set).
      return Fail(v.HasMember("maxBufferedBytes") ? buffered : body,
                  "server.maxBufferedBytes (" + std::to_string(s->max_buffered_bytes) +
                      ") must be at least server.maxBodyBytes (" +
                      std::to_string(s->max_body_bytes) + ")");
    }
    return Ok();
  }

  Status ApplyMcp(const Value& v, const std::string& path, McpSettings* m) {
    SANDRUN_RETURN_IF_ERROR(Members(v, path,
                                    {
                                        Int("maxBlockMs", &m->max_block_ms, 100, 3600000),
                                        Int("maxOutputChars", &m->max_output_chars, 1000, 10000000),
                                        Flag("waitForApproval", &m->wait_for_approval),
                                        List("allowedOrigins", &m->allowed_origins),
                                    }));
    for (const std::string& origin : m->allowed_origins) {
      // An origin is scheme://host[:port], nothing more (RFC 6454): "*" or a path would be a
      // silent allow-all or never match.
      if (!(origin.rfind("http://", 0) == 0 || origin.rfind("https://", 0) == 0) ||
          origin.find('/', origin.find("://") + 3) != std::string::npos ||
          origin.find_first_of(" *\t") != std::string::npos) {
        return Fail(JoinKey(path, "allowedOrigins"),
                    "\"" + origin + "\" is not an origin such as \"https://app.example.com\"");
      }
    }
    return Ok();
  }

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
            List("envPassthrough", &e->env_passthrough),
            {"safeBins",
             [this, e](const Value& x, const std::string& p) -> Status {
               SANDRUN_ASSIGN_OR_RETURN(e->safe_bins, Strings(x, p, Rule::kTrimmed));
               for (std::string& bin : *e->safe_bins) bin = Lower(bin);
               return Ok();
             }},
            List("safeBinTrustedDirs", &e->safe_bin_trusted_dirs, Rule::kAbsolutePath),
            {"safeBinProfiles",
             [this, e](const Value& x, const std::string& p) -> Status {
               if (!x.IsObject()) return Expected(p, "an object of bin: profile", x);
               for (const auto& member : x.GetObject()) {
                 std::string bin = Lower(Trim(
                     std::string_view(member.name.GetString(), member.name.GetStringLength())));
                 SafeBinProfileSettings& profile = e->safe_bin_profiles[bin];
                 SANDRUN_RETURN_IF_ERROR(
                     ApplySafeBinProfile(member.value, JoinKey(p, bin), &profile));
               }
               return Ok();
             }},
            Flag("strictInlineEval", &e->strict_inline_eval),
            Flag("autoAllowSkills", &e->auto_allow_skills),
            List("skillBinDirs", &e->skill_bin_dirs, Rule::kUserPath),
            Int("approvalTimeoutMs", &e->approval_timeout_ms, 1000, kMaxInteger),
            Int("approvalRunningNoticeMs", &e->approval_running_notice_ms),
            {"reviewer",
             [this, e](const Value& x, const std::string& p) {
               return Members(x, p,
                              {
                                  {"command",
                                   [this, e](const Value& c, const std::string& cp) -> Status {
                                     if (c.IsString()) {
                                       SANDRUN_ASSIGN_OR_RETURN(std::string text,
                                                                String(c, cp, Rule::kNonEmpty));
                                       e->reviewer.command = {"/bin/sh", "-c", text};
                                       return Ok();
                                     }
                                     if (c.IsArray() && c.Size() > 0) {
                                       SANDRUN_ASSIGN_OR_RETURN(e->reviewer.command,
                                                                Strings(c, cp, Rule::kNonEmpty));
                                       return Ok();
                                     }
                                     return Expected(cp, "a string or a non-empty array of strings",
                                                     c);
                                   }},
                                  Str("model", &e->reviewer.model),
                                  Int("timeoutMs", &e->reviewer.timeout_ms, 100, 600000),
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

  Status ApplySafeBinProfile(const Value& v, const std::string& path, SafeBinProfileSettings* out) {
    return Members(v, path,
                   {
                       Int("minPositional", &out->min_positional),
                       {"maxPositional",
                        [this, out](const Value& x, const std::string& p) -> Status {
                          SANDRUN_ASSIGN_OR_RETURN(out->max_positional,
                                                   Integer(x, p, 0, kMaxInteger, false));
                          return Ok();
                        }},
                       List("allowedValueFlags", &out->allowed_value_flags, Rule::kTrimmed),
                       List("allowedFlags", &out->allowed_flags, Rule::kTrimmed),
                       List("deniedFlags", &out->denied_flags, Rule::kTrimmed),
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
    SANDRUN_RETURN_IF_ERROR(Members(
        v, path,
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
            Size("scratchLimit", &s->scratch_limit_bytes, false),
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
            {"pool",
             [this, s](const Value& x, const std::string& p) {
               return Members(
                   x, p,
                   {Int("min", &s->pool.min, 0, 64), Int("max", &s->pool.max, 0, 64),
                    Int("idleTtlMs", &s->pool.idle_ttl_ms, 1000, int64_t{7} * 24 * 3600 * 1000)});
             }},
            {"allow",
             [this, s](const Value& x, const std::string& p) {
               return Members(x, p,
                              {List("images", &s->allow.images, Rule::kNonEmpty),
                               List("network", &s->allow.network, Rule::kNonEmpty),
                               Size("memory", &s->allow.memory_bytes, false),
                               Num("cpus", &s->allow.cpus), Int("pids", &s->allow.pids)});
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
                       Flag("execAgent", &d->exec_agent),
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

  // The agent sections of `agents` (at `path`), each over `global` (or over what `out` already
  // holds for that id: a tenant's agent over the file's); `seen` refuses an id twice.
  Status ApplyAgents(const Value& agents, const std::string& path, const AgentSettings& global,
                     std::map<std::string, AgentSettings>* out,
                     std::map<std::string, std::string>* seen) {
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
          SANDRUN_RETURN_IF_ERROR(AddAgent(agent_id, entry, entry_path, JoinKey(entry_path, "id"),
                                           true, global, out, seen));
        }
        continue;
      }
      if (name == "entries") {
        if (!member.value.IsObject()) return Expected(p, "an object of agents", member.value);
        for (const auto& entry : member.value.GetObject()) {
          std::string agent_id(entry.name.GetString(), entry.name.GetStringLength());
          std::string entry_path = JoinKey(p, agent_id);
          SANDRUN_RETURN_IF_ERROR(
              AddAgent(agent_id, entry.value, entry_path, entry_path, false, global, out, seen));
        }
        continue;
      }
      SANDRUN_RETURN_IF_ERROR(AddAgent(name, member.value, p, p, false, global, out, seen));
    }
    return Ok();
  }

  // One agent: the global settings with the agent's section applied over them. `id_path` is
  // where the id is written (a key, or agents.list[i].id).
  Status AddAgent(const std::string& id, const Value& v, const std::string& path,
                  const std::string& id_path, bool list_entry, const AgentSettings& global,
                  std::map<std::string, AgentSettings>* out,
                  std::map<std::string, std::string>* seen) {
    bool id_is_key = id_path == path;
    if (!IsAgentId(id)) {
      return Fail(id_path, "invalid agent id \"" + id + "\" (use letters, digits, '_' and '-')",
                  id_is_key);
    }
    if (std::find(kReservedAgentIds.begin(), kReservedAgentIds.end(), id) !=
        kReservedAgentIds.end()) {
      return Fail(id_path, "\"" + id + "\" is reserved and cannot be an agent id", id_is_key);
    }
    if (auto first = seen->find(id); first != seen->end()) {
      return Fail(id_path,
                  "agent " + id + " is defined twice (first at line " +
                      std::to_string(lines_.Line(first->second)) + ")",
                  id_is_key);
    }
    seen->emplace(id, path);
    auto existing = out->find(id);
    AgentSettings settings = existing != out->end() ? existing->second : global;
    SANDRUN_RETURN_IF_ERROR(ApplySection(v, path, &settings, Level::kAgent, list_entry));
    (*out)[id] = std::move(settings);
    return Ok();
  }

  bool global_env_set_ = false;
  std::map<std::string, std::string> agent_paths_;  // agent id -> path of its section
};

}  // namespace

namespace internal {

Result<std::string> HomeDir() {
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home);
  const passwd* pw = ::getpwuid(::geteuid());
  if (pw != nullptr && pw->pw_dir != nullptr && *pw->pw_dir) return std::string(pw->pw_dir);
  return Error(ErrorCode::kNotFound, "cannot expand ~: HOME is not set");
}

}  // namespace internal

AgentSettings Config::ForAgent(const std::string& agent_id) const {
  auto it = agents.find(agent_id);
  return it == agents.end() ? global : it->second;
}

TenantConfig Config::ForTenant(const std::string& tenant_id) const {
  if (auto it = tenants.find(tenant_id); it != tenants.end()) return it->second;
  TenantConfig tenant;
  tenant.global = global;
  tenant.agents = agents;
  return tenant;
}

AgentSettings TenantConfig::ForAgent(const std::string& agent_id) const {
  auto it = agents.find(agent_id);
  AgentSettings s = it == agents.end() ? global : it->second;
  DockerSettings& d = s.sandbox.docker;
  // 0 (or -1) in the settings is "no limit": above any ceiling.
  if (quotas.memory_bytes > 0 && (d.memory_bytes <= 0 || d.memory_bytes > quotas.memory_bytes)) {
    d.memory_bytes = quotas.memory_bytes;
  }
  if (quotas.memory_bytes > 0 && d.memory_swap_bytes != -1 &&
      (d.memory_swap_bytes <= 0 || d.memory_swap_bytes > quotas.memory_bytes)) {
    d.memory_swap_bytes = -1;  // the same as memory: no swap beyond the ceiling
  }
  if (quotas.cpus > 0 && (d.cpus <= 0 || d.cpus > quotas.cpus)) d.cpus = quotas.cpus;
  if (quotas.pids > 0 && (d.pids_limit <= 0 || d.pids_limit > quotas.pids)) {
    d.pids_limit = quotas.pids;
  }
  // What a call may choose is clamped the same way (an unset ceiling means the docker value,
  // which is clamped above).
  SandboxAllowSettings& allow = s.sandbox.allow;
  if (quotas.memory_bytes > 0 && allow.memory_bytes > quotas.memory_bytes) {
    allow.memory_bytes = quotas.memory_bytes;
  }
  if (quotas.cpus > 0 && allow.cpus > quotas.cpus) allow.cpus = quotas.cpus;
  if (quotas.pids > 0 && allow.pids > quotas.pids) allow.pids = quotas.pids;
  return s;
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
  // Whoever can change the config decides where the next call runs.
  if (Status trusted = CheckTrustedFile(path, "config file");
      !trusted && trusted.error().code != ErrorCode::kNotFound) {
    return std::move(trusted).error();
  }
  Result<std::string> text = ReadFile(path, kMaxConfigBytes);
  if (!text) {
    if (text.error().code == ErrorCode::kNotFound) {
      if (!must_exist) return config;
      return Error(ErrorCode::kNotFound, "config file " + path + " does not exist");
    }
    return std::move(text).error();
  }
  config.source_path = path;
  SANDRUN_ASSIGN_OR_RETURN(std::optional<JsonFile> json, ParseJsonFile(*text, path, kMaxNesting));
  if (!json) return config;  // empty: the defaults
  const JsonLines& lines = json->lines;
  const rapidjson::Document& doc = json->doc;

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

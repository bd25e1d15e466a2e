#include "runner/api/session_admin.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "runner/api/exec_inputs.h"
#include "runner/config/config.h"
#include "runner/config/ids.h"
#include "runner/config/session_state.h"
#include "runner/policy/directives.h"
#include "runner/policy/host_resolution.h"
#include "runner/policy/session_overrides.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/clock.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"

namespace sandrun::api {
namespace {

constexpr size_t kMaxDirectiveBytes = 64 * 1024;

RuntimeReply Refusal(const Error& e) { return {RefusalStatus(e.WireCode()), RenderToolError(e)}; }

RuntimeReply Invalid(const std::string& message) {
  return {400, RenderToolError("invalid-request", message)};
}

std::optional<std::string> IdsError(const std::string& agent, const std::string& key) {
  if (auto bad = config::AgentIdError(agent)) return bad;
  if (!key.empty()) return config::SessionKeyError(key);
  return std::nullopt;
}

Result<CallSettings> SettingsOf(const SessionAdminContext& ctx, const std::string& agent) {
  auto cfg = config::LoadConfigFor(ctx.global.config_file, ctx.state_dir);
  if (!cfg) return Error::Refusal("invalid-config", cfg.error().ToString());
  return SettingsForCall(*cfg, ctx.who.tenant, agent);
}

policy::Caller CallerOf(const SessionAdminContext& ctx, const std::string& agent,
                        const std::string& key, const CallSettings& picked) {
  policy::Caller c;
  c.provider = ctx.who.provider;
  c.sender = ctx.who.sender;
  c.agent_id = agent;
  c.session_key = key;
  c.tenant = ctx.who.tenant;
  c.host_execution = picked.host_execution;
  return c;
}

std::string StatePath(const SessionAdminContext& ctx) {
  return config::SessionStatePath(ctx.state_dir, ctx.who.tenant);
}

void WriteOverrides(JsonWriter& w, const config::SessionState& s) {
  w.Key("exec");
  w.StartObject();
  for (const auto& [key, value] : {std::pair{"host", &s.host}, std::pair{"security", &s.security},
                                   std::pair{"ask", &s.ask}, std::pair{"node", &s.node}}) {
    if (!*value) continue;
    w.Key(key);
    WriteJsonString(w, **value);
  }
  w.EndObject();
  if (s.elevated) {
    w.Key("elevated");
    WriteJsonString(w, *s.elevated);
  }
}

// What the session's calls are configured with: each override over the config's value.
void WriteCurrent(JsonWriter& w, const config::AgentSettings& base, const config::SessionState& s) {
  config::AgentSettings settings = base;
  policy::Caller caller;
  policy::ApplySessionState(s, &settings, &caller);
  const policy::SecurityAsk configured = policy::ConfiguredSecurityAsk(settings.exec);
  w.Key("current");
  w.StartObject();
  auto str = [&](const char* key, const std::string& value) {
    w.Key(key);
    WriteJsonString(w, value);
  };
  str("host", caller.session_host.value_or(Lower(Trim(settings.exec.host))));
  str("security", policy::SecurityName(configured.security));
  str("ask", policy::AskName(configured.ask));
  str("node", settings.exec.node);
  str("elevated", Lower(Trim(settings.elevated.default_level)));
  w.Key("elevatedEnabled");
  w.Bool(settings.elevated.enabled);
  w.EndObject();
}

void WriteView(JsonWriter& w, const std::string& agent, const std::string& key,
               const config::SessionState& s, const config::AgentSettings& settings) {
  w.StartObject();
  w.Key("agentId");
  WriteJsonString(w, agent);
  w.Key("sessionKey");
  WriteJsonString(w, key);
  WriteOverrides(w, s);
  w.Key("updatedAtMs");
  w.Int64(s.updated_at_ms);
  w.Key("updatedBy");
  WriteJsonString(w, s.updated_by);
  WriteCurrent(w, settings, s);
  w.EndObject();
}

std::string ViewJson(const std::string& agent, const std::string& key,
                     const config::SessionState& s, const config::AgentSettings& settings) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  WriteView(w, agent, key, s, settings);
  return buffer.GetString();
}

std::string Summary(const config::SessionState& s) {
  std::string out;
  for (const auto& [key, value] :
       {std::pair{"host", &s.host}, std::pair{"security", &s.security}, std::pair{"ask", &s.ask},
        std::pair{"node", &s.node}, std::pair{"elevated", &s.elevated}}) {
    if (*value) out += (out.empty() ? "" : " ") + std::string(key) + "=" + **value;
  }
  return out.empty() ? "cleared" : out;
}

// The change of one session: `next_of` turns the state on disk into the one wanted (or refuses),
// the policy checks it, and it is saved under the file's lock. `render` makes the reply.
using NextFn = std::function<Result<config::SessionState>(const config::SessionState& current)>;
using RenderFn = std::function<std::string(const config::SessionState& saved,
                                           const config::AgentSettings& settings)>;

SessionChange Change(const SessionAdminContext& ctx, const std::string& agent,
                     const std::string& key, const NextFn& next_of, const RenderFn& render) {
  SessionChange out;
  if (auto bad = IdsError(agent, key)) {
    out.reply = Invalid(*bad);
    return out;
  }
  auto picked = SettingsOf(ctx, agent);
  if (!picked) {
    out.reply = Refusal(picked.error());
    return out;
  }
  const policy::Caller caller = CallerOf(ctx, agent, key, *picked);
  config::SessionState saved;
  auto updated =
      config::UpdateSessionStates(StatePath(ctx), [&](config::SessionStates& all) -> Status {
        config::SessionState current;
        if (auto a = all.agents.find(agent); a != all.agents.end()) {
          if (auto s = a->second.find(key); s != a->second.end()) current = s->second;
        }
        SANDRUN_ASSIGN_OR_RETURN(config::SessionState next, next_of(current));
        if (auto refusal = policy::CheckSessionChange(picked->settings, caller, next)) {
          return Status(*refusal);
        }
        next.updated_at_ms = current.updated_at_ms;
        next.updated_by = current.updated_by;
        if (next == current) {
          saved = current;  // nothing changes: nothing is written, no event
          return Ok();
        }
        next.updated_at_ms = UnixMillis();
        next.updated_by = OperatorName(ctx.who);
        all.agents[agent][key] = next;
        saved = next;
        out.changed = true;
        return Ok();
      });
  if (!updated) {
    out.changed = false;
    out.reply = Refusal(updated.error());
    return out;
  }
  out.reply = {200, render(saved, picked->settings)};
  if (out.changed) {
    out.summary = Summary(saved);
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    w.Key("tenant");
    WriteJsonString(w, ctx.who.tenant);
    w.Key("agentId");
    WriteJsonString(w, agent);
    w.Key("sessionKey");
    WriteJsonString(w, key);
    WriteOverrides(w, saved);
    w.Key("updatedBy");
    WriteJsonString(w, saved.updated_by);
    w.Key("text");
    WriteJsonString(
        w, "Session " + agent + "/" + key + " updated by " + saved.updated_by + ": " + out.summary);
    w.EndObject();
    out.event_json = buffer.GetString();
  }
  return out;
}

SessionChange Only(RuntimeReply reply) {
  SessionChange c;
  c.reply = std::move(reply);
  return c;
}

RenderFn ViewRender(const std::string& agent, const std::string& key) {
  return [agent, key](const config::SessionState& s, const config::AgentSettings& settings) {
    return ViewJson(agent, key, s, settings);
  };
}

// The session's state as it is, rendered with the agent's settings (`status` on success).
RuntimeReply Current(const SessionAdminContext& ctx, const std::string& agent,
                     const std::string& key, int status, const RenderFn& render) {
  if (auto bad = IdsError(agent, key)) return Invalid(*bad);
  auto picked = SettingsOf(ctx, agent);
  if (!picked) return Refusal(picked.error());
  auto state = config::LoadSessionState(StatePath(ctx), agent, key);
  if (!state) return Refusal(state.error());
  return {status, render(*state, picked->settings)};
}

// A value of one of `names` (trimmed, any case), as stored; the refusal names the field.
Result<std::string> OneOf(const std::string& field, const std::string& raw,
                          const std::vector<const char*>& names) {
  const std::string value = Lower(Trim(raw));
  std::string allowed;
  for (const char* name : names) {
    if (value == name) return value;
    allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  }
  return Error::Refusal("invalid-request",
                        "Invalid " + field + " \"" + raw + "\". Allowed values: " + allowed + ".");
}

Result<std::string> NodeValue(const std::string& raw) {
  const std::string node = Trim(raw);
  if (auto bad = config::NodeIdError(node)) {
    return Error::Refusal("invalid-request", "Invalid exec node: " + *bad);
  }
  return node;
}

}  // namespace

std::string OperatorName(const Principal& who) {
  if (!who.token_name.empty()) return who.token_name;
  if (who.uid >= 0) return UserName(static_cast<uid_t>(who.uid));
  return who.sender.empty() ? "local" : who.sender;
}

RuntimeReply ListSessionStates(const SessionAdminContext& ctx, const std::string& agent) {
  if (auto bad = IdsError(agent, "")) return Invalid(*bad);
  auto picked = SettingsOf(ctx, agent);
  if (!picked) return Refusal(picked.error());
  auto loaded = config::LoadSessionStates(StatePath(ctx));
  if (!loaded) return Refusal(loaded.error());
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("agentId");
  WriteJsonString(w, agent);
  w.Key("sessions");
  w.StartArray();
  if (auto a = loaded->file.agents.find(agent); a != loaded->file.agents.end()) {
    for (const auto& [key, state] : a->second) WriteView(w, agent, key, state, picked->settings);
  }
  w.EndArray();
  w.EndObject();
  return {200, buffer.GetString()};
}

RuntimeReply ShowSessionState(const SessionAdminContext& ctx, const std::string& agent,
                              const std::string& key) {
  return Current(ctx, agent, key, 200, ViewRender(agent, key));
}

SessionChange PatchSessionState(const SessionAdminContext& ctx, const std::string& agent,
                                const std::string& key, std::string_view body) {
  auto doc = ParseJson(std::string(body));
  if (!doc || !doc->IsObject()) {
    return Only(
        Invalid("PATCH takes {\"exec\":{\"host\",\"security\",\"ask\",\"node\"},"
                "\"elevated\":\"off|on|ask|full\"} (every field optional, null clears it)"));
  }
  // The wanted fields, read whole before anything is saved: one bad field changes nothing.
  using Setter = std::function<Status(config::SessionState&)>;
  std::vector<Setter> setters;
  auto field = [&](const rapidjson::Value& v, const std::string& name,
                   std::optional<std::string> config::SessionState::*member,
                   const std::vector<const char*>* names) -> Status {
    if (v.IsNull()) {
      setters.push_back([member](config::SessionState& s) {
        s.*member = std::nullopt;
        return Ok();
      });
      return Ok();
    }
    if (!v.IsString()) return Error::Refusal("invalid-request", name + " must be a string");
    const std::string raw(v.GetString(), v.GetStringLength());
    SANDRUN_ASSIGN_OR_RETURN(std::string value,
                             names != nullptr ? OneOf(name, raw, *names) : NodeValue(raw));
    setters.push_back([member, value](config::SessionState& s) {
      s.*member = value;
      return Ok();
    });
    return Ok();
  };
  for (const auto& m : doc->GetObject()) {
    const std::string name(m.name.GetString(), m.name.GetStringLength());
    Status ok = Ok();
    if (name == "elevated") {
      ok = field(m.value, "elevated level", &config::SessionState::elevated,
                 &config::kElevatedLevelValues);
    } else if (name == "exec" && m.value.IsObject()) {
      for (const auto& e : m.value.GetObject()) {
        const std::string k(e.name.GetString(), e.name.GetStringLength());
        if (k == "host") {
          ok =
              field(e.value, "exec host", &config::SessionState::host, &config::kSessionHostValues);
        } else if (k == "security") {
          ok = field(e.value, "exec security", &config::SessionState::security,
                     &config::kSessionSecurityValues);
        } else if (k == "ask") {
          ok = field(e.value, "exec ask", &config::SessionState::ask, &config::kSessionAskValues);
        } else if (k == "node") {
          ok = field(e.value, "exec node", &config::SessionState::node, nullptr);
        } else {
          ok = Error::Refusal("invalid-request",
                              "unknown key exec." + k + " (host, security, ask, node)");
        }
        if (!ok) break;
      }
    } else {
      ok = Error::Refusal("invalid-request", name == "exec"
                                                 ? std::string("exec must be an object")
                                                 : "unknown key " + name + " (exec, elevated)");
    }
    if (!ok) return Only(Refusal(ok.error()));
  }
  return Change(
      ctx, agent, key,
      [&](const config::SessionState& current) -> Result<config::SessionState> {
        config::SessionState next = current;
        for (const Setter& set : setters) SANDRUN_RETURN_IF_ERROR(set(next));
        return next;
      },
      ViewRender(agent, key));
}

SessionChange ClearSessionState(const SessionAdminContext& ctx, const std::string& agent,
                                const std::string& key) {
  return Change(
      ctx, agent, key,
      [](const config::SessionState&) -> Result<config::SessionState> {
        return config::SessionState{};
      },
      ViewRender(agent, key));
}

SessionChange ApplySessionDirective(const SessionAdminContext& ctx, const std::string& agent,
                                    const std::string& key, std::string_view body) {
  auto doc = ParseJson(std::string(body));
  const rapidjson::Value* text = doc && doc->IsObject() ? JsonMember(*doc, "text") : nullptr;
  if (text == nullptr || !text->IsString()) {
    return Only(Invalid("POST .../directive takes {\"text\": \"... /exec host=gateway ...\"}"));
  }
  if (text->GetStringLength() > kMaxDirectiveBytes) {
    return Only(Invalid("a directive's text is at most 64 KiB"));
  }
  const policy::Directives parsed =
      policy::ParseDirectives(std::string_view(text->GetString(), text->GetStringLength()));
  const policy::ExecDirective& exec = parsed.exec;
  const policy::ElevatedDirective& elevated = parsed.elevated;

  std::vector<std::pair<std::string, std::string>> applied, invalid;
  auto note = [](std::vector<std::pair<std::string, std::string>>& list, const char* name,
                 const std::optional<std::string>& value) {
    if (value) list.emplace_back(name, *value);
  };
  note(applied, "host", exec.host);
  note(applied, "security", exec.security);
  note(applied, "ask", exec.ask);
  note(applied, "node", exec.node);
  note(applied, "elevated", elevated.level);
  note(invalid, "host", exec.invalid_host);
  note(invalid, "security", exec.invalid_security);
  note(invalid, "ask", exec.invalid_ask);
  note(invalid, "node", exec.invalid_node);
  if (exec.node && config::NodeIdError(*exec.node)) {  // a value the state file could not hold
    invalid.emplace_back("node", *exec.node);
    applied.erase(std::remove_if(applied.begin(), applied.end(),
                                 [](const auto& a) { return a.first == "node"; }),
                  applied.end());
  }
  note(invalid, "elevated", elevated.invalid);
  if (!invalid.empty()) applied.clear();  // all or nothing

  auto render = [&](const config::SessionState& s, const config::AgentSettings& settings,
                    const std::string* error) {
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    for (const auto& [name, list] :
         {std::pair{"applied", &applied}, std::pair{"invalid", &invalid}}) {
      w.Key(name);
      w.StartObject();
      for (const auto& [k, v] : *list) {
        w.Key(k.c_str());
        WriteJsonString(w, v);
      }
      w.EndObject();
    }
    w.Key("cleaned");
    WriteJsonString(w, parsed.cleaned);
    WriteCurrent(w, settings, s);
    if (error != nullptr) {
      w.Key("error");
      w.StartObject();
      w.Key("code");
      w.String("invalid-directive");
      w.Key("message");
      WriteJsonString(w, *error);
      w.EndObject();
    }
    w.EndObject();
    return std::string(buffer.GetString());
  };

  if (!invalid.empty() || applied.empty()) {
    // Nothing to save: the current values (a bare /exec or /elevated shows them), or why not.
    std::string message = "Nothing was changed:";
    for (const auto& [k, v] : invalid) {
      message += " invalid " + std::string(k == "elevated" ? "elevated level" : "exec " + k) +
                 " \"" + v + "\";";
    }
    message.back() = '.';
    const std::string* error = invalid.empty() ? nullptr : &message;
    return Only(Current(ctx, agent, key, error == nullptr ? 200 : 400,
                        [&](const config::SessionState& st, const config::AgentSettings& set) {
                          return render(st, set, error);
                        }));
  }
  return Change(
      ctx, agent, key,
      [&](const config::SessionState& current) -> Result<config::SessionState> {
        config::SessionState next = current;
        if (exec.host) next.host = *exec.host;
        if (exec.security) next.security = *exec.security;
        if (exec.ask) next.ask = *exec.ask;
        if (exec.node) next.node = *exec.node;
        if (elevated.level) next.elevated = *elevated.level;
        return next;
      },
      [&](const config::SessionState& s, const config::AgentSettings& settings) {
        return render(s, settings, nullptr);
      });
}

}  // namespace sandrun::api

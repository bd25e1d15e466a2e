#include "runner/config/session_state.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include "runner/config/approvals_file.h"
#include "runner/config/config_reader.h"
#include "runner/config/ids.h"
#include "runner/config/json_lines.h"

namespace sandrun::config {
namespace {

using internal::Field;
using internal::Value;

class Parser : public internal::ConfigReader {
 public:
  using ConfigReader::ConfigReader;

  Result<SessionStates> Parse(const Value& root) {
    SessionStates out;
    SANDRUN_RETURN_IF_ERROR(ExpectVersion1(root));
    SANDRUN_RETURN_IF_ERROR(
        Members(root, "", {{"version", {}}, {"agents", [&](const Value& v, const std::string& p) {
                                               return Agents(v, p, &out);
                                             }}}));
    return out;
  }

 private:
  Status Agents(const Value& v, const std::string& path, SessionStates* out) {
    if (!v.IsObject()) return Expected(path, "an object of agents", v);
    for (const auto& agent : v.GetObject()) {
      std::string id(agent.name.GetString(), agent.name.GetStringLength());
      std::string agent_path = JoinKey(path, id);
      if (auto bad = AgentIdError(id)) return Fail(agent_path, *bad, true);
      if (!agent.value.IsObject())
        return Expected(agent_path, "an object of sessions", agent.value);
      for (const auto& session : agent.value.GetObject()) {
        std::string key(session.name.GetString(), session.name.GetStringLength());
        std::string session_path = JoinKey(agent_path, key);
        if (auto bad = SessionKeyError(key)) return Fail(session_path, *bad, true);
        SessionState state;
        SANDRUN_RETURN_IF_ERROR(State(session.value, session_path, &state));
        if (!state.empty()) out->agents[id][key] = std::move(state);
      }
    }
    return Ok();
  }

  Field Optional(const char* key, std::optional<std::string>* out,
                 const std::vector<const char*>& names) {
    return {key, [this, out, &names](const Value& v, const std::string& p) -> Status {
              SANDRUN_ASSIGN_OR_RETURN(size_t index, OneOf(v, p, names));
              *out = names[index];
              return Ok();
            }};
  }

  Status State(const Value& v, const std::string& path, SessionState* s) {
    return Members(v, path,
                   {{"exec",
                     [&](const Value& exec, const std::string& p) {
                       return Members(
                           exec, p,
                           {Optional("host", &s->host, kSessionHostValues),
                            Optional("security", &s->security, kSessionSecurityValues),
                            Optional("ask", &s->ask, kSessionAskValues),
                            {"node", [&](const Value& node, const std::string& np) -> Status {
                               SANDRUN_ASSIGN_OR_RETURN(std::string n,
                                                        String(node, np, internal::Rule::kTrimmed));
                               if (auto bad = NodeIdError(n)) return Fail(np, *bad);
                               s->node = std::move(n);
                               return Ok();
                             }}});
                     }},
                    Optional("elevated", &s->elevated, kElevatedLevelValues),
                    Int("updatedAtMs", &s->updated_at_ms),
                    Str("updatedBy", &s->updated_by)});
  }
};

using PrettyWriter = PrettyJsonWriter;

void DropEmpty(SessionStates& states) {
  for (auto agent = states.agents.begin(); agent != states.agents.end();) {
    std::erase_if(agent->second, [](const auto& entry) { return entry.second.empty(); });
    agent = agent->second.empty() ? states.agents.erase(agent) : std::next(agent);
  }
}

}  // namespace

std::string SessionStatePath(const std::string& state_dir, const std::string& tenant) {
  return (tenant.empty() ? state_dir : TenantStateDir(state_dir, tenant)) + "/session-state.json";
}

Result<SessionStates> ParseSessionStates(std::string_view text, const std::string& path,
                                         std::vector<std::string>* warnings) {
  return internal::ParseWithReader<Parser, SessionStates>(text, path, warnings);
}

std::string SerializeSessionStates(const SessionStates& states) {
  return VersionedFileText([&](PrettyJsonWriter& w) {
    w.Key("agents");
    w.StartObject();
    for (const auto& [agent, sessions] : states.agents) {
      WritePrettyString(w, agent);
      w.StartObject();
      for (const auto& [key, s] : sessions) {
        WritePrettyString(w, key);
        w.StartObject();
        if (s.host || s.security || s.ask || s.node) {
          w.Key("exec");
          w.StartObject();
          auto field = [&](const char* name, const std::optional<std::string>& value) {
            if (!value) return;
            w.Key(name);
            WritePrettyString(w, *value);
          };
          field("host", s.host);
          field("security", s.security);
          field("ask", s.ask);
          field("node", s.node);
          w.EndObject();
        }
        if (s.elevated) {
          w.Key("elevated");
          WritePrettyString(w, *s.elevated);
        }
        w.Key("updatedAtMs");
        w.Int64(s.updated_at_ms);
        w.Key("updatedBy");
        WritePrettyString(w, s.updated_by);
        w.EndObject();
      }
      w.EndObject();
    }
    w.EndObject();
  });
}

const StateFileFormat<SessionStates>& SessionStatesFormat() {
  static const StateFileFormat<SessionStates> format{"session state file", ParseSessionStates,
                                                     SerializeSessionStates};
  return format;
}

Result<LoadedState<SessionStates>> LoadSessionStates(const std::string& path) {
  return LoadStateFile(path, SessionStatesFormat());
}

Result<SessionState> LoadSessionState(const std::string& path, const std::string& agent,
                                      const std::string& session_key) {
  SANDRUN_ASSIGN_OR_RETURN(LoadedState<SessionStates> loaded, LoadSessionStates(path));
  auto a = loaded.file.agents.find(agent);
  if (a == loaded.file.agents.end()) return SessionState{};
  auto s = a->second.find(session_key);
  return s == a->second.end() ? SessionState{} : s->second;
}

Result<SessionStates> UpdateSessionStates(const std::string& path,
                                          const std::function<Status(SessionStates&)>& mutate) {
  return UpdateStateFile<SessionStates>(path, SessionStatesFormat(),
                                        [&](SessionStates& states) -> Status {
                                          SANDRUN_RETURN_IF_ERROR(mutate(states));
                                          DropEmpty(states);
                                          return Ok();
                                        });
}

}  // namespace sandrun::config

#include "runner/api/session_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "runner/api/runtime.h"
#include "runner/api/server_client.h"
#include "sandbox/base/clock.h"
#include "sandbox/base/json.h"

namespace sandrun::api {
namespace {

std::string PatchBody(const SessionFlags& flags) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  if (!flags.host.empty() || !flags.security.empty() || !flags.ask.empty() || !flags.node.empty()) {
    w.Key("exec");
    w.StartObject();
    for (const auto& [key, value] :
         {std::pair{"host", &flags.host}, std::pair{"security", &flags.security},
          std::pair{"ask", &flags.ask}, std::pair{"node", &flags.node}}) {
      if (value->empty()) continue;
      w.Key(key);
      WriteJsonString(w, *value);
    }
    w.EndObject();
  }
  if (!flags.elevated.empty()) {
    w.Key("elevated");
    WriteJsonString(w, flags.elevated);
  }
  w.EndObject();
  return buffer.GetString();
}

// One row per session: its overrides ("-": as configured), who changed it last and when.
void PrintTable(const std::string& json) {
  auto doc = ParseJson(json);
  const rapidjson::Value* sessions =
      doc && doc->IsObject() ? JsonMember(*doc, "sessions") : nullptr;
  if (sessions == nullptr || !sessions->IsArray() || sessions->Empty()) {
    std::printf("no session of agent %s has overrides (every session runs as configured)\n",
                doc && doc->IsObject() ? JsonString(*doc, "agentId").c_str() : "?");
    return;
  }
  std::printf("%-24s %-8s %-10s %-8s %-10s %-8s %-16s %s\n", "SESSION", "HOST", "SECURITY", "ASK",
              "NODE", "ELEVATED", "BY", "AT");
  for (const auto& s : sessions->GetArray()) {
    const rapidjson::Value* exec = JsonMember(s, "exec");
    auto field = [&](const char* key) {
      std::string v = exec != nullptr ? JsonString(*exec, key) : "";
      return v.empty() ? std::string("-") : v;
    };
    std::string elevated = JsonString(s, "elevated");
    std::printf("%-24s %-8s %-10s %-8s %-10s %-8s %-16s %s\n", JsonString(s, "sessionKey").c_str(),
                field("host").c_str(), field("security").c_str(), field("ask").c_str(),
                field("node").c_str(), elevated.empty() ? "-" : elevated.c_str(),
                JsonString(s, "updatedBy").c_str(),
                UtcTimestamp(JsonInt(s, "updatedAtMs")).c_str());
  }
}

int Print(const RuntimeReply& reply, bool table) {
  if (reply.status == 200 && table) {
    PrintTable(reply.json);
  } else {
    std::printf("%s\n", reply.json.c_str());
  }
  return ExitCodeFor(ServerReply{reply.status, reply.json});
}

}  // namespace

CLI::App* AddSessionCommand(CLI::App& app, SessionFlags& flags) {
  CLI::App* session = app.add_subcommand(
      "session",
      "Per-session exec overrides and elevated level (operators; --agent picks the agent)");
  session->require_subcommand(1);
  CLI::App* list = session->add_subcommand("list", "Sessions of the agent that have overrides");
  list->add_flag("--json", flags.json, "Print JSON");
  list->callback([&flags] { flags.action = "list"; });
  CLI::App* show = session->add_subcommand("show", "A session's overrides and current values");
  show->add_option("KEY", flags.key, "The session key")->required();
  show->callback([&flags] { flags.action = "show"; });
  CLI::App* set = session->add_subcommand("set", "Change a session's overrides (all or nothing)");
  set->add_option("KEY", flags.key, "The session key")->required();
  set->add_option("--elevated", flags.elevated,
                  "off | on | ask | full (on/ask/full: the session's calls leave the sandbox)");
  set->add_option("--host", flags.host, "auto | sandbox | gateway | node (within tools.exec.host)");
  set->add_option("--security", flags.security, "deny | allowlist | full");
  set->add_option("--ask", flags.ask, "off | on-miss | always");
  set->add_option("--node", flags.node, "The node id");
  set->callback([&flags] { flags.action = "set"; });
  CLI::App* clear = session->add_subcommand("clear", "Drop every override of a session");
  clear->add_option("KEY", flags.key, "The session key")->required();
  clear->callback([&flags] { flags.action = "clear"; });
  return session;
}

int RunSessionCommand(const GlobalOptions& global, const SessionFlags& flags) {
  if (flags.action == "set" && flags.elevated.empty() && flags.host.empty() &&
      flags.security.empty() && flags.ask.empty() && flags.node.empty()) {
    PrintError("session set needs at least one of --elevated, --host, --security, --ask, --node");
    return kExitRefused;
  }
  const bool table = flags.action == "list" && !flags.json;
  const std::string base = "/v1/agents/" + global.agent + "/sessions";
  if (std::string socket = LiveServer(global); !socket.empty()) {
    const std::string path = flags.action == "list" ? base : base + "/" + flags.key;
    const std::string method = flags.action == "set"     ? "PATCH"
                               : flags.action == "clear" ? "DELETE"
                                                         : "GET";
    auto reply =
        RequestServer(socket, method, path, flags.action == "set" ? PatchBody(flags) : "", global);
    if (!reply) return PrintServerReply(reply);
    return Print({reply->status, reply->body}, table);
  }
  // No server: the same runtime calls on the state files (no event: nobody listens).
  std::unique_ptr<Runtime> runtime = Runtime::StartOneShot(global);
  const Principal who = CliPrincipal(global);
  if (flags.action == "list") return Print(runtime->ListSessionStates(who, global.agent), table);
  if (flags.action == "show") {
    return Print(runtime->ShowSessionState(who, global.agent, flags.key), false);
  }
  return Print(
      runtime->ChangeSessionState(who, global.agent, flags.key,
                                  flags.action == "set" ? "patch" : "clear", PatchBody(flags)),
      false);
}

}  // namespace sandrun::api

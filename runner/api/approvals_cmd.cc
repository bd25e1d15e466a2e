#include "runner/api/approvals_cmd.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <set>
#include <vector>

#include "runner/api/server_client.h"
#include "runner/config/state_dir.h"
#include "sandbox/base/clock.h"
#include "sandbox/base/json.h"

namespace sandrun::api {
namespace {

// One line, at most `width` bytes, safe for a terminal: a command's text is the agent's, so C0
// controls and DEL become spaces and C1 controls (U+0080-U+009F as UTF-8, or raw bytes
// 0x80-0x9F outside a UTF-8 sequence, which 8-bit terminals read as CSI/OSC) become '?'.
}  // namespace

std::string TerminalLine(const std::string& text, size_t width) {
  std::string out;
  size_t continuation = 0;  // bytes still expected of a UTF-8 sequence
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (continuation > 0 && b >= 0x80 && b <= 0xBF) {
      out.push_back(text[i]);
      --continuation;
      continue;
    }
    continuation = 0;
    if (b == 0xE2 && i + 2 < text.size()) {
      // Bidi overrides and isolates and zero-width characters can make a command read as
      // another: U+200B-U+200F, U+202A-U+202E, U+2066-U+2069.
      const auto b1 = static_cast<unsigned char>(text[i + 1]);
      const auto b2 = static_cast<unsigned char>(text[i + 2]);
      if ((b1 == 0x80 && ((b2 >= 0x8B && b2 <= 0x8F) || (b2 >= 0xAA && b2 <= 0xAE))) ||
          (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9)) {
        out.push_back('?');
        i += 2;
        continue;
      }
    }
    if (b < 0x20 || b == 0x7f) {
      out.push_back(' ');
    } else if (b == 0xC2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      out.push_back('?');  // a C1 control as UTF-8
      ++i;
    } else if (b >= 0x80 && b <= 0xBF) {
      out.push_back('?');  // a stray continuation byte (0x9B: an 8-bit CSI)
    } else {
      continuation = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : 0;
      out.push_back(text[i]);
    }
  }
  if (out.size() > width) {
    size_t cut = width - 3;
    // Not inside a UTF-8 sequence.
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out = out.substr(0, cut) + "...";
  }
  return out;
}

namespace {

std::string Duration(int64_t ms) {
  const int64_t s = std::max<int64_t>(0, ms / 1000);
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  return std::to_string(s / 3600) + "h" + std::to_string(s / 60 % 60) + "m";
}

std::string Row(const std::vector<std::pair<std::string, size_t>>& cells) {
  std::string line;
  for (const auto& [text, width] : cells) {
    line += text;
    if (width > 0) line += std::string(text.size() < width ? width - text.size() : 1, ' ');
  }
  return line + "\n";
}

// An approval's command in full (the broker takes at most 8 KiB), so what is approved is what
// was read.
constexpr size_t kWholeCommand = 64 * 1024;

std::atomic<bool> g_stop{false};
extern "C" void OnStopSignal(int) { g_stop.store(true); }

// Asks the operator about one approval on the terminal and sends the answer.
void Ask(const std::string& socket, const GlobalOptions& global, const rapidjson::Value& p) {
  const std::string id = JsonString(p, "id");
  const std::vector<std::string> allowed = JsonStringArray(p, "allowedDecisions");
  const bool always = std::find(allowed.begin(), allowed.end(), "allow-always") != allowed.end();
  for (;;) {
    std::printf("approve %s? [o]nce%s [d]eny [s]kip: ", id.substr(0, 8).c_str(),
                always ? " [a]lways" : "");
    std::fflush(stdout);
    std::string answer;
    if (!std::getline(std::cin, answer)) {
      g_stop.store(true);  // the terminal closed
      return;
    }
    std::string decision = answer == "o" || answer == "once"                 ? "allow-once"
                           : (answer == "a" || answer == "always") && always ? "allow-always"
                           : answer == "d" || answer == "deny"               ? "deny"
                                                                             : "";
    if (answer == "s" || answer == "skip") return;
    if (decision.empty()) continue;
    auto reply =
        PostToServer(socket, "/v1/approvals/" + id, "{\"decision\":\"" + decision + "\"}", global);
    if (!reply) {
      std::printf("sandrun: %s\n", reply.error().ToString().c_str());
      return;
    }
    auto doc = ParseJson(reply->body);
    const rapidjson::Value* error = doc && doc->IsObject() ? JsonMember(*doc, "error") : nullptr;
    std::printf("%s\n", error != nullptr ? ("not decided: " + JsonString(*error, "message")).c_str()
                        : doc && doc->IsObject() ? JsonString(*doc, "text").c_str()
                                                 : reply->body.c_str());
    std::fflush(stdout);
    return;
  }
}

}  // namespace

std::string RenderApprovalsTable(const rapidjson::Value& list, int64_t now_ms, size_t max_decided) {
  std::string out;
  const rapidjson::Value* pending = JsonMember(list, "pending");
  const rapidjson::Value* decided = JsonMember(list, "decided");
  const size_t n_pending = pending != nullptr && pending->IsArray() ? pending->Size() : 0;
  out += "PENDING (" + std::to_string(n_pending) + ")\n";
  if (n_pending > 0) {
    out += Row({{"ID", 10},
                {"AGENT/SESSION", 22},
                {"HOST", 9},
                {"WAITING", 9},
                {"EXPIRES", 9},
                {"COMMAND", 0}});
    for (const auto& p : pending->GetArray()) {
      out +=
          Row({{JsonString(p, "slug"), 10},
               {TerminalLine(JsonString(p, "agentId") + "/" + JsonString(p, "sessionKey"), 21), 22},
               {JsonString(p, "host"), 9},
               {Duration(now_ms - JsonInt(p, "createdAtMs")), 9},
               {Duration(JsonInt(p, "expiresAtMs") - now_ms), 9},
               {TerminalLine(JsonString(p, "command")), 0}});
    }
  }
  std::vector<const rapidjson::Value*> rows;
  if (decided != nullptr && decided->IsArray()) {
    for (const auto& r : decided->GetArray()) rows.push_back(&r);
  }
  std::reverse(rows.begin(), rows.end());  // newest first
  if (rows.size() > max_decided) rows.resize(max_decided);
  out += "\nDECIDED (" + std::to_string(rows.size()) +
         (decided != nullptr && decided->IsArray() && decided->Size() > rows.size()
              ? " of " + std::to_string(decided->Size())
              : std::string()) +
         ")\n";
  if (!rows.empty()) {
    out += Row({{"ID", 10},
                {"STATUS", 9},
                {"DECISION", 13},
                {"BY", 16},
                {"AT", 21},
                {"AGENT/SESSION", 22},
                {"COMMAND", 0}});
    for (const rapidjson::Value* r : rows) {
      out += Row(
          {{JsonString(*r, "slug"), 10},
           {JsonString(*r, "status"), 9},
           {JsonString(*r, "decision"), 13},
           {TerminalLine(JsonString(*r, "decidedBy"), 15), 16},
           {UtcTimestamp(JsonInt(*r, "decidedAtMs")), 21},
           {TerminalLine(JsonString(*r, "agentId") + "/" + JsonString(*r, "sessionKey"), 21), 22},
           {TerminalLine(JsonString(*r, "command")), 0}});
    }
  }
  return out;
}

int RunApprovalsShow(const GlobalOptions& global, const ApprovalsFlags& flags) {
  const std::string socket = LiveServer(global);
  if (socket.empty()) {
    PrintError(
        "no running server: `sandrun approvals show` asks `sandrun serve` (the record is "
        "also in $SANDRUN_HOME/approvals-record.json)");
    return kExitRefused;
  }
  return PrintServerReply(RequestServer(socket, "GET", "/v1/approvals/" + flags.id, "", global));
}

int RunApprovalsWatch(const GlobalOptions& global, const ApprovalsFlags& flags) {
  const std::string socket = LiveServer(global);
  if (socket.empty()) {
    PrintError("no running server: start `sandrun serve`; approvals are asked for through it");
    return kExitRefused;
  }
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  const bool interactive = ::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1;
  std::set<std::string> asked;
  auto offer = [&](const rapidjson::Value& p) {
    const std::string id = JsonString(p, "id");
    if (!asked.insert(id).second) return;
    std::printf("[%s] approval %s requested: %s/%s on %s: %s\n", UtcTimestamp(UnixMillis()).c_str(),
                id.substr(0, 8).c_str(), JsonString(p, "agentId").c_str(),
                JsonString(p, "sessionKey").c_str(), JsonString(p, "host").c_str(),
                TerminalLine(JsonString(p, "command"), kWholeCommand).c_str());
    std::fflush(stdout);
    if (interactive) Ask(socket, global, p);
  };
  Status followed =
      FollowEvents(socket, global, &g_stop, [&](const std::string& type, const std::string& data) {
        if (flags.json) {
          std::printf("{\"type\":\"%s\",\"data\":%s}\n", type.c_str(), data.c_str());
          std::fflush(stdout);
          return !g_stop.load();
        }
        if (type == "ready") {
          // What was pending before the stream opened is offered first.
          auto reply = RequestServer(socket, "GET", "/v1/approvals", "", global);
          auto doc = ParseJson(reply && reply->status == 200 ? reply->body : "{}");
          const rapidjson::Value* pending =
              doc && doc->IsObject() ? JsonMember(*doc, "pending") : nullptr;
          if (pending != nullptr && pending->IsArray()) {
            for (const auto& p : pending->GetArray()) offer(p);
          }
          std::printf("sandrun: watching approvals (Ctrl-C ends)\n");
          std::fflush(stdout);
        } else if (type == "approval.requested") {
          if (auto doc = ParseJson(data); doc && doc->IsObject()) offer(*doc);
        } else if (type == "approval.resolved" || type == "exec.running") {
          if (auto doc = ParseJson(data); doc && doc->IsObject()) {
            std::printf("[%s] %s\n", UtcTimestamp(UnixMillis()).c_str(),
                        TerminalLine(JsonString(*doc, "text"), 400).c_str());
            std::fflush(stdout);
          }
        }
        return !g_stop.load();
      });
  if (!followed) {
    PrintError(followed.error().ToString());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace sandrun::api

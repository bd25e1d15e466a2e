#include "runner/api/policy_cmd.h"

#include <chrono>
#include <cstdio>
#include <optional>

#include "runner/api/approval_broker.h"
#include "runner/api/approvals_cmd.h"
#include "runner/api/exec_approvals.h"
#include "runner/api/exec_cmd.h"
#include "runner/api/exec_inputs.h"
#include "runner/api/exec_tool.h"
#include "runner/api/runtime.h"
#include "runner/api/server_client.h"
#include "runner/api/tool_call.h"
#include "runner/config/approvals_file.h"
#include "runner/config/state_dir.h"
#include "runner/policy/host_resolution.h"
#include "runner/policy/inline_eval.h"
#include "sandbox/base/clock.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"

namespace sandrun::api {
namespace {

void WriteStringOrNull(JsonWriter& w, const std::optional<std::string>& s) {
  if (s) {
    WriteJsonString(w, *s);
  } else {
    w.Null();
  }
}

// The analysis part when the approvals flow did not run (sandbox, refused calls): the shell
// analysis alone, nothing resolved or satisfied.
policy::AllowlistEvaluation AnalysisOnly(const std::string& command) {
  policy::AllowlistEvaluation e;
  policy::ShellAnalysis a = policy::AnalyzeShellCommand(command);
  e.analysis_ok = a.ok;
  e.analysis_reason = a.reason;
  for (const policy::ShellChainPart& part : a.parts) {
    for (const policy::ShellSegment& seg : part.pipeline) {
      policy::SegmentEvaluation s;
      s.argv = seg.Argv();
      s.inline_eval = policy::DetectInlineEval(s.argv);
      if (s.inline_eval) e.inline_eval.push_back(*s.inline_eval);
      e.segments.push_back(std::move(s));
    }
  }
  return e;
}

}  // namespace

std::string PolicyCheckJson(const GlobalOptions& global, const policy::Caller& caller,
                            const policy::ExecRequest& request) {
  // The exec path's own loader and decision: what this prints is what exec acts on.
  std::unique_ptr<LoadedCall> call = LoadExecInputs(global, caller, request, Purpose::kCheck);
  for (const std::string& w : call->diagnostics) PrintWarning(w);
  std::string verdict = "deny";
  std::string reason;
  std::string security, ask;
  std::optional<std::string> rewritten;
  std::optional<policy::AllowlistEvaluation> eval;
  std::optional<policy::ExecDecision> d;
  if (call->failure) {
    reason = call->failure->ToString();
  } else {
    d = policy::DecideExec(request, call->inputs);
    verdict = policy::ExecVerdictName(d->verdict);
    reason = d->reason;
    security = policy::SecurityName(d->decision.effective.security);
    ask = policy::AskName(d->decision.effective.ask);
    if (d->approvals) {
      const policy::ApprovalVerdict& v = *d->approvals;
      security = policy::SecurityName(v.security);
      ask = policy::AskName(v.ask);
      eval = v.eval;
      if (v.eval.satisfied && v.security == config::Security::kAllowlist) {
        rewritten = v.eval.rewritten;
      }
    }
    if (d->verdict == policy::ExecVerdict::kNeedsReview) {
      reason += " (mode auto: the reviewer would be asked before an operator)";
    }
  }
  if (!eval) eval = AnalysisOnly(request.command);

  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("decision");
  WriteJsonString(w, verdict);
  w.Key("reason");
  WriteJsonString(w, reason);
  w.Key("host");
  w.StartObject();
  w.Key("requested");
  WriteStringOrNull(w, request.host);
  w.Key("configured");
  WriteJsonString(w, call->settings.exec.host);
  w.Key("effective");
  WriteStringOrNull(w, d ? std::optional<std::string>(policy::HostName(d->decision.effective_host))
                         : std::nullopt);
  w.EndObject();
  w.Key("security");
  WriteJsonString(w, security);
  w.Key("ask");
  WriteJsonString(w, ask);
  w.Key("analysis");
  w.StartObject();
  w.Key("ok");
  w.Bool(eval->analysis_ok);
  w.Key("reason");
  WriteJsonString(w, eval->analysis_reason);
  w.Key("segments");
  w.StartArray();
  for (const policy::SegmentEvaluation& s : eval->segments) {
    w.StartObject();
    w.Key("argv");
    w.StartArray();
    for (const std::string& a : s.argv) WriteJsonString(w, a);
    w.EndArray();
    w.Key("resolvedPath");
    WriteJsonString(w, s.resolved_path);
    w.Key("satisfiedBy");
    WriteStringOrNull(
        w, s.satisfied_by.empty() ? std::nullopt : std::optional<std::string>(s.satisfied_by));
    if (!s.satisfied_by.empty() || s.miss.empty()) {
      // nothing more to say
    } else {
      w.Key("miss");
      WriteJsonString(w, s.miss);
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.Key("inlineEval");
  w.StartArray();
  for (const std::string& hit : eval->inline_eval) WriteJsonString(w, hit);
  w.EndArray();
  w.Key("rewritten");
  WriteStringOrNull(w, rewritten);
  if (d && (d->verdict == policy::ExecVerdict::kAsk ||
            d->verdict == policy::ExecVerdict::kNeedsReview)) {
    // What happens when no operator can answer (the one-shot CLI, an approval that timed out).
    w.Key("askFallback");
    w.StartObject();
    w.Key("security");
    WriteJsonString(w, policy::SecurityName(d->approvals->ask_fallback));
    w.Key("approved");
    w.Bool(d->fallback.approved);
    if (d->fallback.approved) {
      w.Key("command");
      WriteJsonString(w, d->fallback.command);
    } else {
      w.Key("reason");
      WriteJsonString(w, d->fallback.reason);
    }
    w.EndObject();
    w.Key("allowedDecisions");
    w.StartArray();
    for (const std::string& a : d->allowed_decisions) WriteJsonString(w, a);
    w.EndArray();
    w.Key("allowAlways");
    w.StartArray();
    for (const std::string& p : d->always_patterns) WriteJsonString(w, p);
    w.EndArray();
  }
  w.EndObject();
  return buffer.GetString();
}

int RunPolicyCheckCommand(const GlobalOptions& global, const PolicyCheckFlags& flags) {
  policy::ExecRequest request;
  request.command = CommandFromWords(flags.command);
  if (!flags.host.empty()) request.host = flags.host;
  if (!flags.cwd.empty()) request.workdir = flags.cwd;
  if (flags.elevated) request.elevated = true;
  if (std::string bad = ParseEnvFlags(flags.env, &request.env); !bad.empty()) {
    PrintError(bad);
    return kExitRefused;
  }
  std::printf("%s\n",
              Runtime::StartOneShot(global)->PolicyCheck(CliPrincipal(global), request).c_str());
  return kExitOk;
}

namespace {

void WriteEntries(JsonWriter& w, const config::ApprovalsFile& file) {
  w.StartObject();
  for (const auto& [agent, section] : file.agents) {
    w.Key(agent.c_str(), static_cast<rapidjson::SizeType>(agent.size()));
    w.StartArray();
    for (const config::AllowlistEntry& e : section.allowlist) {
      w.StartObject();
      w.Key("id");
      WriteJsonString(w, e.id);
      w.Key("pattern");
      WriteJsonString(w, e.pattern);
      w.Key("source");
      WriteJsonString(w, e.source);
      if (e.last_used_at) {
        w.Key("lastUsedAt");
        w.Int64(*e.last_used_at);
      }
      if (!e.last_resolved_path.empty()) {
        w.Key("lastResolvedPath");
        WriteJsonString(w, e.last_resolved_path);
      }
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

}  // namespace

int RunApprovalsCommand(const GlobalOptions& global, const ApprovalsFlags& flags) {
  auto state_dir = config::StateDirPath();
  if (!state_dir) {
    PrintError(state_dir.error().ToString());
    return kExitFailure;
  }
  const std::string path = config::ApprovalsPath(*state_dir);
  const std::string socket = ServerSocketPath(global, *state_dir);
  const bool server = ServerAnswers(socket);

  if (flags.action == "approve") {
    if (!server) {
      PrintError(
          "no running server: approvals are pending only in `sandrun serve` (without it, "
          "askFallback decides at once)");
      return kExitRefused;
    }
    rapidjson::StringBuffer body;
    JsonWriter w(body);
    w.StartObject();
    w.Key("decision");
    WriteJsonString(w, flags.decision);
    w.EndObject();
    return PrintServerReply(
        PostToServer(socket, "/v1/approvals/" + flags.id, body.GetString(), global));
  }
  if (flags.action == "allowlist-add" || flags.action == "allowlist-remove") {
    if (Trim(flags.pattern).empty()) {
      PrintError("give a pattern (a path glob such as ~/bin/rg or /usr/bin/*, or a name)");
      return kExitRefused;
    }
    bool changed = false;
    auto written = config::UpdateApprovals(path, [&](config::ApprovalsFile& file) -> Status {
      changed = flags.action == "allowlist-add"
                    ? config::AddAllowlistEntry(file, global.agent, Trim(flags.pattern), "operator",
                                                UnixMillis())
                    : config::RemoveAllowlistEntry(file, global.agent, Trim(flags.pattern));
      return Ok();
    });
    if (!written) {
      PrintError(written.error().ToString());
      return kExitRefused;
    }
    if (flags.action == "allowlist-remove" && !changed) {
      PrintError("agents." + global.agent + ".allowlist has no entry \"" + flags.pattern + "\"");
      return kExitRefused;
    }
    std::fprintf(
        stderr, "sandrun: %s %s agents.%s.allowlist: %s\n",
        changed ? (flags.action == "allowlist-add" ? "added to" : "removed from") : "already in",
        path.c_str(), global.agent.c_str(), flags.pattern.c_str());
    return kExitOk;
  }
  if (flags.action == "show") return RunApprovalsShow(global, flags);
  if (flags.action == "watch") return RunApprovalsWatch(global, flags);
  // list / allowlist-list: the file's allowlists; list: the approvals too (the server's pending
  // ones and its decision record; without a server, the record on disk).
  auto loaded = config::LoadApprovals(path);
  if (!loaded) {
    PrintError(loaded.error().ToString());
    return kExitRefused;
  }
  for (const auto& warning : loaded->warnings) PrintWarning(warning);
  std::string pending = "[]", decided = "[]";
  if (flags.action == "list") {
    std::string listed;
    if (server) {
      auto reply = RequestServer(socket, "GET", "/v1/approvals", "", global);
      if (reply && reply->status == 200) listed = reply->body;
    } else {
      listed = RecordedApprovalsJson(*state_dir, "");
    }
    auto doc = ParseJson(listed.empty() ? "{}" : listed);
    if (doc && doc->IsObject()) {
      if (const auto* p = JsonMember(*doc, "pending")) pending = ToJson(*p);
      if (const auto* d = JsonMember(*doc, "decided")) decided = ToJson(*d);
      if (!flags.json) {
        std::printf("%s", RenderApprovalsTable(*doc, UnixMillis()).c_str());
        if (!server && pending != "[]") {
          std::printf("(no server runs: pending approvals wait for `sandrun serve`)\n");
        }
        return kExitOk;
      }
    }
  }
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("file");
  WriteJsonString(w, path);
  w.Key("allowlists");
  WriteEntries(w, loaded->file);
  w.EndObject();
  std::string out = buffer.GetString();
  if (flags.action == "list") {
    out.pop_back();
    out += ",\"server\":" + std::string(server ? "true" : "false") + ",\"pending\":" + pending +
           ",\"decided\":" + decided + "}";
  }
  std::printf("%s\n", out.c_str());
  return kExitOk;
}

}  // namespace sandrun::api

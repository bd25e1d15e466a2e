#include "runner/api/exec_approvals.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>

#include "runner/policy/host_resolution.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/clock.h"
#include "sandbox/base/deadline.h"
#include "sandbox/base/json.h"
#include "sandbox/base/strings.h"
#include "sandbox/harden/profile_file.h"
#include "sandbox/os/subprocess.h"

extern char** environ;

namespace sandrun::api {
namespace {}  // namespace

Result<const std::map<std::string, policy::SafeBinProfile>*> BuiltinSafeBinProfiles() {
  static std::mutex mu;
  static std::unique_ptr<std::map<std::string, policy::SafeBinProfile>> cached;
  std::lock_guard<std::mutex> lock(mu);
  if (!cached) {
    SANDRUN_ASSIGN_OR_RETURN(auto profiles,
                             policy::LoadSafeBinProfiles(harden::DefaultProfilesDir()));
    cached = std::make_unique<std::map<std::string, policy::SafeBinProfile>>(std::move(profiles));
  }
  return cached.get();
}

Status RecordApprovalUse(const std::string& state_dir, const std::string& tenant,
                         const CallApprovals& approvals, const std::string& command) {
  struct Use {
    std::string id, pattern, resolved_path;
  };
  std::vector<Use> uses;
  for (const policy::SegmentEvaluation& s : approvals.verdict.eval.segments) {
    if (!s.entry || *s.entry >= approvals.approvals.allowlist.size()) continue;
    const config::AllowlistEntry& e = approvals.approvals.allowlist[*s.entry];
    uses.push_back({e.id, e.pattern, s.resolved_path});
  }
  if (uses.empty()) return Ok();
  auto written = config::UpdateApprovals(
      config::ApprovalsPath(state_dir, tenant), [&](config::ApprovalsFile& file) -> Status {
        // A hand-written entry without an id got a fresh one at each read: find it by pattern.
        auto has_id = [&](const std::string& id) {
          for (const auto& [agent, section] : file.agents) {
            for (const config::AllowlistEntry& e : section.allowlist) {
              if (e.id == id) return true;
            }
          }
          return false;
        };
        std::vector<std::pair<std::string, std::string>> ids;
        for (const Use& u : uses) {
          std::string id = u.id;
          if (!has_id(id)) {
            for (const auto& [agent, section] : file.agents) {
              for (const config::AllowlistEntry& e : section.allowlist) {
                if (e.pattern == u.pattern) id = e.id;
              }
            }
          }
          ids.emplace_back(id, u.resolved_path);
        }
        config::RecordAllowlistUse(file, ids, command, UnixMillis());
        return Ok();
      });
  if (!written) return std::move(written).error();
  return Ok();
}

Status PersistAllowAlways(const std::string& state_dir, const std::string& tenant,
                          const std::string& agent, const std::vector<std::string>& patterns) {
  auto written = config::UpdateApprovals(
      config::ApprovalsPath(state_dir, tenant), [&](config::ApprovalsFile& file) -> Status {
        const int64_t now = UnixMillis();
        for (const std::string& p : patterns) {
          config::AddAllowlistEntry(file, agent, p, "allow-always", now);
        }
        return Ok();
      });
  if (!written) return std::move(written).error();
  return Ok();
}

std::string ReviewerPlanJson(const policy::ApprovalVerdict& v, const std::string& host,
                             const std::string& cwd, const policy::Caller& caller) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  auto str = [&](const char* key, const std::string& value) {
    w.Key(key);
    WriteJsonString(w, value);
  };
  str("command", v.command);
  str("host", host);
  str("cwd", cwd);
  str("agentId", caller.agent_id);
  str("sessionKey", caller.session_key);
  str("security", policy::SecurityName(v.security));
  str("ask", policy::AskName(v.ask));
  str("reason", v.reason);
  w.Key("segments");
  w.StartArray();
  for (const policy::SegmentEvaluation& s : v.eval.segments) {
    w.StartObject();
    w.Key("argv");
    w.StartArray();
    for (const std::string& a : s.argv) WriteJsonString(w, a);
    w.EndArray();
    str("resolvedPath", s.resolved_path);
    w.EndObject();
  }
  w.EndArray();
  w.Key("inlineEval");
  w.StartArray();
  for (const std::string& hit : v.eval.inline_eval) WriteJsonString(w, hit);
  w.EndArray();
  w.EndObject();
  return buffer.GetString();
}

ReviewerResult RunReviewer(const config::ReviewerSettings& reviewer, const std::string& plan_json) {
  ReviewerResult r;
  if (reviewer.command.empty()) {
    r.note = "no reviewer command configured";
    return r;
  }
  SpawnOptions spawn;
  spawn.path = reviewer.command[0];
  spawn.argv = reviewer.command;
  for (char** e = environ; *e != nullptr; ++e) spawn.env.emplace_back(*e);
  spawn.stdin_mode = SpawnOptions::Stdin::kPipe;
  auto proc = Subprocess::Spawn(spawn);
  if (!proc) {
    r.note = "the reviewer did not start: " + proc.error().ToString();
    return r;
  }
  UniqueFd in = proc->TakeStdin();
  UniqueFd out = proc->TakeStdout();
  UniqueFd err = proc->TakeStderr();
  const Deadline deadline = Deadline::After(std::chrono::milliseconds(reviewer.timeout_ms));
  size_t written = 0;
  std::string answer;
  bool out_open = out.valid();
  while (out_open && !deadline.expired()) {
    pollfd fds[3] = {{out.get(), POLLIN, 0},
                     {in.valid() ? in.get() : -1, POLLOUT, 0},
                     {err.valid() ? err.get() : -1, POLLIN, 0}};
    int n = ::poll(fds, 3, static_cast<int>(std::min<int64_t>(deadline.remaining_ms(), 1000)));
    if (n < 0 && errno != EINTR) break;
    if (in.valid() && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t k = ::write(in.get(), plan_json.data() + written, plan_json.size() - written);
      if (k > 0) written += static_cast<size_t>(k);
      if (k < 0 && errno != EAGAIN && errno != EINTR) written = plan_json.size();
      if (written >= plan_json.size()) in.reset();  // EOF for the reviewer
    }
    if (fds[2].revents & (POLLIN | POLLHUP)) {
      char sink[4096];
      if (::read(err.get(), sink, sizeof(sink)) <= 0) err.reset();
    }
    if (fds[0].revents & (POLLIN | POLLHUP)) {
      char buf[4096];
      ssize_t k = ::read(out.get(), buf, sizeof(buf));
      if (k > 0 && answer.size() < 4096) answer.append(buf, static_cast<size_t>(k));
      if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) out_open = false;
    }
  }
  in.reset();
  auto status =
      proc->Wait(deadline.expired() ? Deadline::After(std::chrono::milliseconds(0))
                                    : Deadline::After(std::chrono::milliseconds(
                                          std::max<int64_t>(deadline.remaining_ms(), 1))));
  if (!status || !status->has_value()) {
    (void)proc->KillGroup(SIGKILL);
    (void)proc->Reap();
    r.note = "the reviewer timed out after " + std::to_string(reviewer.timeout_ms) + " ms";
    return r;
  }
  (void)proc->KillGroup(SIGKILL);  // nothing it started outlives the review
  const ExitStatus& st = **status;
  if (!st.exited() || st.exit_code != 0) {
    r.note = "the reviewer failed (" +
             (st.exited() ? "exit code " + std::to_string(st.exit_code)
                          : "signal " + std::to_string(st.signal)) +
             ")";
    return r;
  }
  std::string first = Lower(Trim(answer.substr(0, answer.find('\n'))));
  if (first == "allow") {
    r.answer = ReviewerAnswer::kAllow;
  } else if (first == "deny") {
    r.answer = ReviewerAnswer::kDeny;
  } else {
    r.note = first == "ask" ? "the reviewer asked for a human"
                            : "the reviewer answered \"" + first + "\"";
  }
  return r;
}

std::string ApprovalSlug(const std::string& id) { return id.substr(0, 8); }

std::string RenderApprovalPending(const PendingApprovalView& v) {
  const std::string slug = ApprovalSlug(v.id);
  std::string fence = "```";
  while (v.command.find(fence) != std::string::npos) fence += "`";
  bool always = false;
  for (const std::string& d : v.allowed_decisions) always = always || d == "allow-always";
  std::string text;
  for (const std::string& w : v.warnings) text += w + "\n";
  text += "Approval required (id " + slug + ", full " + v.id + ").\nHost: " + v.host +
          "\nCWD: " + v.cwd + "\nCommand:\n" + fence + "sh\n" + v.command + "\n" + fence +
          "\nMode: foreground (interactive approvals available).\n";
  text += always ? "Background mode requires pre-approved policy (allow-always or ask=off).\n"
                 : "Background mode requires an effective policy that allows pre-approval (for "
                   "example ask=off).\n";
  std::string choices;
  for (const std::string& d : v.allowed_decisions) choices += (choices.empty() ? "" : "|") + d;
  text += "Reply with: /approve " + slug + " " + choices + "\n";
  if (!always) {
    text +=
        "The effective approval policy requires approval every time, so Allow Always is "
        "unavailable.\n";
  }
  text +=
      "If the short code is ambiguous, use the full id in /approve.\nOperators: sandrun "
      "approvals approve " +
      slug + " " + choices;

  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  BeginToolResult(w, text);
  auto str = [&](const char* key, const std::string& value) {
    w.Key(key);
    WriteJsonString(w, value);
  };
  str("status", "approval-pending");
  str("approvalId", v.id);
  str("approvalSlug", slug);
  w.Key("expiresAtMs");
  w.Int64(v.expires_at_ms);
  w.Key("allowedDecisions");
  w.StartArray();
  for (const std::string& d : v.allowed_decisions) WriteJsonString(w, d);
  w.EndArray();
  str("host", v.host);
  str("command", v.command);
  str("cwd", v.cwd);
  if (!v.warnings.empty()) {
    std::string joined;
    for (const std::string& line : v.warnings) joined += (joined.empty() ? "" : "\n") + line;
    str("warningText", joined);
  }
  EndToolResult(w);
  return buffer.GetString();
}

}  // namespace sandrun::api

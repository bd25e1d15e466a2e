#include "runner/api/exec_tool.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "runner/api/approval_broker.h"
#include "runner/api/exec_approvals.h"
#include "runner/api/exec_inputs.h"
#include "runner/config/config.h"
#include "runner/config/state_dir.h"
#include "runner/policy/env_policy.h"
#include "runner/policy/env_strip.h"
#include "runner/policy/gate.h"
#include "runner/policy/preflight.h"
#include "runner/policy/session_overrides.h"
#include "runner/policy/tool_policy.h"
#include "runner/sessions/manager.h"
#include "runner/sessions/process_request.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/strings.h"
#include "sandbox/executors/host/host_executor.h"
#include "sandbox/executors/registry.h"

namespace sandrun::api {
namespace {

ExecToolResult Refused(std::string code, std::string message) {
  ExecToolResult r;
  r.refused = true;
  r.error = Error::Refusal(std::move(code), std::move(message));
  r.json = RenderToolError(r.error);
  return r;
}

ExecToolResult Internal(std::string message) {
  ExecToolResult r;
  r.internal = true;
  r.error = Error(ErrorCode::kInternal, std::move(message));
  r.json = RenderToolError(r.error);
  return r;
}

Result<std::shared_ptr<sessions::Session>> BeginSession(ExecServices& services,
                                                        const policy::Caller& caller,
                                                        const exec::Plan& plan,
                                                        const BackgroundRun& run) {
  sessions::SessionMeta meta;
  meta.scope = sessions::Scope{services.tenant, caller.agent_id, caller.session_key};
  meta.command = run.command;
  meta.cwd = plan.cwd;
  meta.host = exec::TargetName(plan.target);
  meta.pty = plan.pty;
  meta.timeout_ms = plan.timeout_ms;
  meta.notify_on_exit = run.notify_on_exit;
  meta.notify_on_exit_empty_success = run.notify_on_exit_empty_success;
  return services.sessions->Begin(meta);
}

}  // namespace

Result<std::string> StartBackgroundSession(ExecServices& services, const policy::Caller& caller,
                                           const exec::Plan& plan, const BackgroundRun& run) {
  if (services.sessions == nullptr) {
    return Error(ErrorCode::kConflict, "background sessions need `sandrun serve`");
  }
  SANDRUN_ASSIGN_OR_RETURN(std::shared_ptr<exec::Executor> executor,
                           services.executors->For(plan.target));
  SANDRUN_ASSIGN_OR_RETURN(auto session, BeginSession(services, caller, plan, run));
  auto process = executor->Start(plan, session->Sink());
  if (!process) {
    services.sessions->Discard(session->id());
    return std::move(process).error();
  }
  session->Attach(std::move(process).value());
  session->MarkBackgrounded();
  return session->id();
}

exec::HostExecutor::Options HostExecutorOptions(const GlobalOptions& global,
                                                const std::string& state_dir,
                                                const std::vector<std::string>& sockets) {
  exec::HostExecutor::Options options;
  options.cache_dir = state_dir + "/cache";  // a one-shot call reads the compiled filter
  auto absolute = [](const std::string& path) {
    if (path.empty()) return std::string();
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) != nullptr) return std::string(resolved);
    return path[0] == '/' ? path : std::string();
  };
  for (const std::string& path : {state_dir, global.server}) {
    if (std::string p = absolute(path); !p.empty()) options.masked_paths.push_back(p);
  }
  for (const std::string& path : sockets) {
    if (std::string p = absolute(path); !p.empty()) options.masked_paths.push_back(p);
  }
  const char* docker_host = std::getenv("DOCKER_HOST");
  if (docker_host != nullptr && std::string_view(docker_host).rfind("unix://", 0) == 0) {
    if (std::string p = absolute(docker_host + 7); !p.empty()) options.masked_paths.push_back(p);
  }
  if (std::string p = absolute(global.config_file); !p.empty()) {
    options.read_only_paths.push_back(p);
  }
  return options;
}

namespace {

// The approval an operator decides for an ask verdict `d` (registered, or restored after a
// restart).
PendingApproval MakePending(const policy::ExecDecision& d, const policy::Caller& caller,
                            const policy::ExecRequest& request,
                            const config::AgentSettings& settings, const std::string& tenant) {
  const exec::Plan& plan = d.gated->plan;
  PendingApproval pending;
  pending.timeout_ms = settings.exec.approval_timeout_ms;
  pending.tenant = tenant;
  pending.caller = caller;
  // "node" stays "node" although the plan runs on the gateway.
  pending.host = plan.target == exec::Target::kSandbox ? exec::TargetName(plan.target)
                                                       : HostName(d.gated->decision.effective_host);
  pending.command = request.command;
  pending.gated = *d.gated;
  pending.verdict = *d.approvals;
  pending.notify_on_exit = settings.exec.notify_on_exit;
  pending.notify_on_exit_empty_success = settings.exec.notify_on_exit_empty_success;
  pending.running_notice_ms = settings.exec.approval_running_notice_ms;
  policy::ExecRequest recorded = request;
  recorded.wait = false;
  pending.request_json = ExecRequestToJson(recorded);
  return pending;
}

// The yield window: true once the run ended inside it. With a watch, the window is looked at
// every tick: new output goes to its progress callback, and a cancelled caller ends the run
// (TERM, grace, KILL) and the window with it (true: it has ended).
bool WaitYield(sessions::Session& session, int64_t yield_ms, const YieldWatch* watch) {
  if (watch == nullptr) return session.WaitFor(yield_ms);
  const auto end = std::min(std::chrono::steady_clock::now() + std::chrono::milliseconds(yield_ms),
                            watch->deadline);
  uint64_t reported = 0;
  for (;;) {
    const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                             end - std::chrono::steady_clock::now())
                             .count();
    if (left > 0 && session.WaitFor(std::min(left, std::max<int64_t>(watch->tick_ms, 10)))) {
      return true;
    }
    if (watch->cancel != nullptr && watch->cancel->cancelled()) {
      (void)session.Terminate(watch->kill_grace_ms);
      return true;
    }
    if (left <= 0) return session.WaitFor(0);
    if (watch->progress) {
      sessions::SessionSnapshot snap = session.Snapshot();
      if (snap.total_bytes > reported) {
        reported = snap.total_bytes;
        watch->progress(snap.tail, snap.total_bytes);
      }
    }
  }
}

// The call once its inputs are loaded: decide, then act on the verdict.
ExecToolResult RunLoadedCall(std::unique_ptr<LoadedCall> call, const policy::Caller& caller,
                             const policy::ExecRequest& request, const exec::LiveSink& live,
                             const CancelToken* cancel, ExecServices& services) {
  if (call->failure) {
    return call->failure->WireCode() == "internal"
               ? Internal(call->failure->ToString())
               : Refused(call->failure->WireCode(), call->failure->message);
  }
  policy::ExecDecision d = policy::DecideExec(request, call->inputs);
  if (d.verdict == policy::ExecVerdict::kDeny) {
    return Refused(d.refusal->WireCode(), d.refusal->message);
  }
  const std::string& state_dir = call->state_dir;
  const config::AgentSettings& settings = call->settings;
  policy::GatedPlan& gated = *d.gated;
  exec::Plan& plan = gated.plan;
  if (auto w = policy::SessionElevatedWarning(call->settings, call->inputs.ctx.caller,
                                              request.elevated)) {
    plan.warnings.push_back(*w);
  }
  bool background_available = services.sessions != nullptr && d.background_allowed;
  // The approval's host: "node" stays "node" although the plan runs on the gateway.
  const std::string host_name = plan.target == exec::Target::kSandbox
                                    ? exec::TargetName(plan.target)
                                    : HostName(gated.decision.effective_host);
  // The decision is made; what follows acts on it. Mode auto: the reviewer answers first.
  if (d.verdict == policy::ExecVerdict::kNeedsReview) {
    ReviewerResult review = RunReviewer(
        settings.exec.reviewer, ReviewerPlanJson(*d.approvals, host_name, plan.cwd, caller));
    if (review.answer == ReviewerAnswer::kDeny) {
      return Refused("denied", "exec denied: the reviewer denied it (mode auto)");
    }
    if (review.answer == ReviewerAnswer::kAllow) {
      d.verdict = policy::ExecVerdict::kAllow;  // single use: nothing is persisted
      plan.warnings.push_back("Warning: the reviewer allowed this command once (mode auto).");
    } else {
      d.verdict = policy::ExecVerdict::kAsk;
      plan.warnings.push_back("Warning: " + review.note + "; an operator must decide.");
    }
  }
  if (d.verdict == policy::ExecVerdict::kAsk) {
    if (background_available && services.approvals != nullptr) {
      PendingApproval pending = MakePending(d, caller, request, settings, services.tenant);
      pending.principal_json = services.principal_json;
      pending.wait = request.wait;
      auto registering = services.approvals->Register(std::move(pending));
      if (!registering) {
        return Refused(registering.error().WireCode(), registering.error().message);
      }
      PendingApproval registered = std::move(registering).value();
      ExecToolResult result;
      result.pending = true;
      result.approval_id = registered.id;
      result.host = host_name;
      result.warnings = plan.warnings;
      result.json =
          RenderApprovalPending({registered.id, registered.expires_ms, host_name, request.command,
                                 plan.cwd, d.allowed_decisions, plan.warnings});
      if (!request.wait) return result;
      if (services.on_wait) services.on_wait(result);
      ApprovalBroker::Handoff h = services.approvals->Await(registered.id, cancel);
      if (!h.resolved && services.watch != nullptr && services.watch->cancel != nullptr &&
          services.watch->cancel->cancelled()) {
        // An MCP caller cancelled the call: it is withdrawn, never to run behind its back (a
        // call that stopped waiting at its deadline stays pending: it was told the id).
        (void)services.approvals->Decide(registered.id, "deny", services.tenant,
                                         "the caller (cancelled)");
        return Refused("cancelled", "exec cancelled by the caller while it waited for approval");
      }
      if (!h.resolved) return result;  // the caller went away or the server stops: still pending
      if (!h.approved) return Refused("denied", h.text);
      plan.command = h.command;
      if (cancel != nullptr && cancel->cancelled()) {
        // Approved as the caller left: it runs in the background, as an unwaited approval does.
        auto id = StartBackgroundSession(services, caller, plan,
                                         {request.command, settings.exec.notify_on_exit,
                                          settings.exec.notify_on_exit_empty_success});
        if (!id) return Refused(exec::UnavailableWire(plan.target), id.error().ToString());
        return result;
      }
    } else if (request.wait) {
      return Refused("approval-pending",
                     "exec needs an operator's approval (" + d.reason +
                         ") and --wait waits for one only through a server: start `sandrun "
                         "serve` and run the command again (nothing was run)");
    } else {
      // No route to an operator (the one-shot CLI): askFallback decides now.
      if (!d.fallback.approved) {
        return Refused("approval-required",
                       policy::HeadlessDenial(*d.approvals, d.fallback.reason));
      }
      plan.command = d.fallback.command;
      plan.warnings.push_back(std::string("Warning: approval needed (") + d.reason +
                              ") but no operator can answer without `sandrun serve`; "
                              "askFallback=" +
                              policy::SecurityName(d.approvals->ask_fallback) + " allowed it.");
    }
  } else if (d.approvals) {
    plan.command = d.command;
  }
  if (d.approvals) {
    CallApprovals used{*d.approvals, *call->inputs.approvals, {}};
    if (Status ok = RecordApprovalUse(state_dir, caller.tenant, used, request.command); !ok) {
      PrintWarning("the approvals file was not updated: " + ok.error().ToString());
    }
  }
  if ((request.background || request.yield_ms) && !background_available) {
    // Background sessions outlive a call only through `sandrun serve` (SPEC §2.2), and only
    // while the tool policy allows `process` (OpenClaw's allowBackground).
    plan.warnings.push_back(std::string(policy::kBackgroundDisabledWarning));
  }

  ExecToolResult result;
  result.host = exec::TargetName(plan.target);
  result.timeout_seconds = plan.timeout_ms / 1000;
  // The registry says which executor runs this target; none (or none could be made, e.g. no
  // engine client) fails closed, nothing ran.
  auto made = services.executors->For(plan.target);
  if (!made) return Refused(made.error().WireCode(), made.error().ToString());
  std::shared_ptr<exec::Executor> executor = std::move(made).value();
  if (services.on_run) {
    if (Status ok = services.on_run(result.host); !ok) {
      return Internal(ok.error().ToString() + "; nothing was run");
    }
  }
  auto failed_to_start = [&](const Error& e) {
    // A tenant's container quota is the caller's limit (429), not an unavailable sandbox.
    const bool quota = e.wire == "quota-exceeded";
    return Refused(quota ? e.wire : exec::UnavailableWire(plan.target), e.ToString());
  };

  // A front end that drives foreground runs itself (stdin, cancel, streaming) gets those that
  // were not asked to yield.
  const bool foreground_hook =
      services.run_foreground &&
      (!background_available || (!request.background && !request.yield_ms));
  if (background_available && !foreground_hook) {
    // The server: every run has a yield window; past it (or at once with background:true) the
    // run becomes a background session and the call answers `running`.
    BackgroundRun run{request.command, settings.exec.notify_on_exit,
                      settings.exec.notify_on_exit_empty_success};
    auto session = BeginSession(services, caller, plan, run);
    if (!session) return Internal(session.error().ToString());
    auto process = executor->Start(plan, (*session)->Sink());
    if (!process) {
      services.sessions->Discard((*session)->id());
      return failed_to_start(process.error());
    }
    (*session)->Attach(std::move(process).value());
    if (!gated.background && WaitYield(**session, gated.yield_ms, services.watch)) {
      auto outcome = (*session)->Outcome();
      if (services.watch != nullptr && services.watch->cancel != nullptr &&
          services.watch->cancel->cancelled()) {
        services.sessions->Discard((*session)->id());
        return Refused("cancelled", "exec cancelled by the caller: the command was killed");
      }
      if (!outcome) {
        services.sessions->Discard((*session)->id());
        return Internal("the run ended without an outcome");
      }
      if (services.watch != nullptr && services.watch->keep_over_bytes > 0 &&
          outcome->total_bytes > services.watch->keep_over_bytes) {
        // Too long for one result: the front end shows head and tail, `process log` the rest.
        (*session)->MarkBackgrounded();
        result.session_id = (*session)->id();
        result.output_head = (*session)->SliceLog(0, std::nullopt).text;
        if (result.output_head.size() > services.watch->keep_over_bytes) {
          result.output_head.resize(services.watch->keep_over_bytes);
        }
      } else {
        services.sessions->Discard((*session)->id());
      }
      result.outcome = std::move(*outcome);
    } else {
      (*session)->MarkBackgrounded();
      result.session_id = (*session)->id();
      result.running = true;
      result.warnings = plan.warnings;
      result.json = sessions::RenderRunning(**session, result.warnings);
      return result;
    }
  } else {
    auto outcome = foreground_hook ? services.run_foreground(*executor, plan)
                                   : executor->Run(plan, live, cancel);
    if (!outcome) return failed_to_start(outcome.error());
    result.outcome = std::move(outcome).value();
  }

  result.warnings = plan.warnings;
  result.warnings.insert(result.warnings.end(), result.outcome.warnings.begin(),
                         result.outcome.warnings.end());
  result.json =
      RenderExecOutcome(result.outcome, result.host, result.timeout_seconds, result.warnings);
  return result;
}

}  // namespace

Result<PendingApproval> RebuildPendingApproval(const GlobalOptions& global,
                                               const policy::Caller& caller,
                                               const policy::ExecRequest& request,
                                               const std::string& tenant) {
  std::unique_ptr<LoadedCall> call = LoadExecInputs(global, caller, request, Purpose::kExec);
  if (call->failure) return *call->failure;
  policy::ExecDecision d = policy::DecideExec(request, call->inputs);
  if (d.verdict != policy::ExecVerdict::kAsk && d.verdict != policy::ExecVerdict::kNeedsReview) {
    return Error::Refusal("conflict",
                          std::string("under the config in force the call is no longer one an "
                                      "operator decides (") +
                              policy::ExecVerdictName(d.verdict) + ": " + d.reason + ")");
  }
  return MakePending(d, caller, request, call->settings, tenant);
}

ExecToolResult RunExecTool(const GlobalOptions& global, const policy::Caller& caller,
                           const policy::ExecRequest& request, const exec::LiveSink& live,
                           const CancelToken* cancel, ExecServices& services) {
  std::unique_ptr<LoadedCall> call = LoadExecInputs(global, caller, request, Purpose::kExec);
  std::vector<std::string> diagnostics = call->diagnostics;
  ExecToolResult result = RunLoadedCall(std::move(call), caller, request, live, cancel, services);
  result.config_warnings = std::move(diagnostics);
  return result;
}

}  // namespace sandrun::api

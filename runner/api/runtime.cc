#include "runner/api/runtime.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <variant>

#include "runner/api/apply_patch_tool.h"
#include "runner/api/approval_broker.h"
#include "runner/api/approval_restore.h"
#include "runner/api/audit_trail.h"
#include "runner/api/exec_inputs.h"
#include "runner/api/exec_tool.h"
#include "runner/api/metrics.h"
#include "runner/api/policy_cmd.h"
#include "runner/api/quotas.h"
#include "runner/api/sandbox_admin.h"
#include "runner/api/server_client.h"
#include "runner/api/session_admin.h"
#include "runner/api/tool_call.h"
#include "runner/auth/tokens.h"
#include "runner/config/config.h"
#include "runner/config/ids.h"
#include "runner/config/state_dir.h"
#include "runner/policy/tool_policy.h"
#include "runner/sessions/manager.h"
#include "runner/sessions/process_request.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/json.h"
#include "sandbox/docker/client.h"
#include "sandbox/executors/docker/container_pool.h"
#include "sandbox/executors/docker/docker_executor.h"
#include "sandbox/executors/host/host_executor.h"
#include "sandbox/executors/registry.h"

namespace sandrun::api {

namespace {

RuntimeReply ErrorReply(int status, const std::string& code, const std::string& message) {
  return {status, RenderToolError(Error::Refusal(code, message))};
}

}  // namespace

int RefusalStatus(const std::string& wire_code) {
  if (wire_code == "unauthorized") return 401;
  if (wire_code == "forbidden") return 403;
  if (wire_code == "not-found" || wire_code == "session-not-found") return 404;
  if (wire_code == "conflict") return 409;
  if (wire_code == "quota-exceeded") return 429;
  return 400;
}

namespace {

// A call over a quota as the wire's 429 with its Retry-After.
RuntimeReply QuotaReply(const QuotaRefusal& over) {
  return {RefusalStatus(over.error.WireCode()), RenderToolError(over.error),
          over.retry_after_seconds};
}
// The same as a tool result, for the front ends that render results themselves.
template <typename R>
R QuotaResult(const QuotaRefusal& over) {
  R r;
  r.refused = true;
  r.error = over.error;
  r.json = RenderToolError(over.error);
  return r;
}

// Private session dirs (<state_dir>/mcp/<pid>) of in-process MCP servers that died without
// their Shutdown (SIGKILL): their host commands died with them (die-with-runner), but their
// sandbox commands run on in their containers. Each dir's sessions are recovered (re-adopted
// through the executors) and killed, then the dir goes.
void ReapDeadPrivateDirs(const std::string& root, const sessions::Options& base) {
  std::error_code ec;
  std::vector<std::filesystem::path> dead;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t digits = name.find_first_not_of("0123456789");
    if (digits == 0 || (digits == std::string::npos ? name.size() : digits) > 9) continue;
    if (digits != std::string::npos) {
      // "<pid>.dead-<time>": set aside by a start that found its own pid's dir.
      if (name.compare(digits, 6, ".dead-") == 0) dead.push_back(entry.path());
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno == EPERM) continue;
    dead.push_back(entry.path());
  }
  for (const auto& dir : dead) {
    {
      sessions::Options options = base;
      options.state_dir = dir.string();
      sessions::SessionManager orphans(options);
      if (auto recovered = orphans.Recover(); !recovered) {
        PrintWarning("mcp: cannot recover " + dir.string() + ": " + recovered.error().ToString());
      }
    }  // destroyed: every re-adopted session is killed
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
}

// What a one-shot runtime answers to the calls only a server can serve.
RuntimeReply ServerRequired(const char* what) {
  return ErrorReply(400, "server-required",
                    std::string(what) + ", which live in a running server: start `sandrun serve`.");
}

}  // namespace

struct Runtime::Impl {
  GlobalOptions global;
  Options options;
  std::string state_dir;
  std::string sessions_root;  // sessions/ and events/ go here: state_dir, or a private dir
  config::ServerSettings server;
  int recovered_finished = 0;
  int recovered_lost = 0;
  std::string instance_id;  // this server's containers carry it (the containers gauge)
  // The config the server loaded (Start, Reload): the tenants' quotas come from it; each call
  // still reads the config for its own settings.
  mutable std::mutex config_mu;
  std::shared_ptr<const config::Config> config;
  Quotas quotas;
  RuntimeMetrics metrics;
  std::unique_ptr<EventHub> events = std::make_unique<EventHub>();  // the ring: Start opens it
  // The executors by plan target, made on first use and shared by every call. Before the
  // manager: sessions re-adopted after a restart use them, so they outlive it.
  exec::ExecutorRegistry executors;
  ExecServices services;  // what each call is lent: the registry, the manager, the broker
  std::unique_ptr<sessions::SessionManager> manager;
  std::unique_ptr<ApprovalBroker> broker;
  std::unique_ptr<AuditTrail> audit;  // every decision, every operator answer

  // The per-call options the tool code reads: the principal's agent, session and workspace
  // over the server's own --config/--server. A hosted tenant's workspace is its own
  // (CallWorkspaceDir refuses a workspace_root it was given), and the cwd is not its to give.
  GlobalOptions GlobalFor(const Principal& who) const {
    GlobalOptions g = global;
    g.agent = who.agent;
    g.session = who.session;
    g.workspace = who.workspace_root;
    g.cwd = who.tenant.empty() ? who.cwd : std::string();
    return g;
  }
  // One exec call with its audit lines: the decision to run before anything starts (on_run),
  // then how it ended, or the one line of a call that ran nothing. Counted in the metrics with
  // the audit's decision, and its latency when it ran.
  ExecToolResult RunAudited(const Principal& who, const policy::ExecRequest& request,
                            ExecServices& call_services, const CancelToken* cancel) {
    bool started = false;
    const auto begin = std::chrono::steady_clock::now();
    call_services.principal_json = PrincipalToJson(who);
    call_services.on_run = [&](const std::string& host) -> Status {
      SANDRUN_RETURN_IF_ERROR(audit->Started(who, request, host));
      started = true;
      return Ok();
    };
    ExecToolResult result =
        RunExecTool(GlobalFor(who), CallerFor(who), request, nullptr, cancel, call_services);
    audit->Exec(who, request, result, started);
    const char* decision = result.internal || (result.refused && started) ? "error"
                           : result.refused                               ? "deny"
                           : result.pending                               ? "ask"
                                                                          : "allow";
    metrics.Call(who.tenant, "exec", decision);
    if (started && !result.refused && !result.internal) {
      metrics.ExecLatency(
          who.tenant,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
    }
    return result;
  }

  // The config in force and the quotas it sets (tenant "" never has any: not a tenant id).
  void SetConfig(config::Config cfg) {
    std::map<std::string, config::TenantQuotas> limits;
    for (const auto& [id, tenant] : cfg.tenants) limits[id] = tenant.quotas;  // = ForTenant(id)
    quotas.SetLimits(std::move(limits));
    std::lock_guard<std::mutex> lock(config_mu);
    config = std::make_shared<const config::Config>(std::move(cfg));
    SetLogBudgetsLocked();
  }
  // maxLogBytes goes to the session manager (once it exists and recovered: Start calls this
  // again then). Caller holds config_mu.
  void SetLogBudgetsLocked() {
    if (!manager || !config) return;
    std::map<std::string, uint64_t> budgets;
    for (const auto& [id, tenant] : config->tenants) {
      if (!id.empty() && tenant.quotas.max_log_bytes > 0) {
        budgets[id] = static_cast<uint64_t>(tenant.quotas.max_log_bytes);
      }
    }
    manager->SetLogBudgets(std::move(budgets));
  }

  // A call over a quota: its audit line (deny, quota-exceeded) and counts; nothing ran.
  QuotaRefusal OverQuota(const Principal& who, const std::string& tool, const std::string& command,
                         QuotaRefusal over) {
    audit->Refused(who, tool, command, over.error);
    metrics.QuotaRejection(who.tenant, over.quota);
    metrics.Call(who.tenant, tool, "deny");
    return over;
  }
  // requestsPerMinute, for any tool call.
  std::optional<QuotaRefusal> AdmitCall(const Principal& who, const std::string& tool,
                                        const std::string& command) {
    auto over = quotas.AdmitCall(who.tenant);
    if (!over) return std::nullopt;
    return OverQuota(who, tool, command, std::move(*over));
  }
  // Every quota of an exec call; the slot holds its place until the call returns.
  std::variant<Quotas::ExecSlot, QuotaRefusal> AdmitExec(const Principal& who,
                                                         const policy::ExecRequest& request,
                                                         bool may_background) {
    if (auto over = AdmitCall(who, "exec", request.command)) return std::move(*over);
    auto slot = quotas.AdmitExec(who.tenant, may_background, [&] {
      if (!manager) return TenantSessionUsage{};
      sessions::SessionManager::TenantUsage u = manager->UsageOf(who.tenant);
      return TenantSessionUsage{u.held, u.running};
    });
    if (auto* over = std::get_if<QuotaRefusal>(&slot)) {
      return OverQuota(who, "exec", request.command, std::move(*over));
    }
    return std::move(std::get<Quotas::ExecSlot>(slot));
  }
  // The config a call without a decision of its own (the process tool) is judged by: the file as
  // it is now, as exec reads it; when it does not load, the config in force (a server's last good
  // one, which its quotas come from too); a one-shot runtime has none: invalid-config.
  Result<std::shared_ptr<const config::Config>> ConfigForCall() const {
    auto cfg = config::LoadConfigFor(global.config_file, state_dir);
    if (cfg) return std::make_shared<const config::Config>(std::move(*cfg));
    std::lock_guard<std::mutex> lock(config_mu);
    if (config) return config;
    return Error::Refusal("invalid-config", cfg.error().ToString());
  }
  // A call's decision for the metrics, by its reply's status.
  void CountCall(const Principal& who, const std::string& tool, int status) {
    metrics.Call(who.tenant, tool, status >= 500 ? "error" : status >= 400 ? "deny" : "allow");
  }
  ApplyPatchToolResult RunPatch(const Principal& who, const ApplyPatchRequest& request) {
    ApplyPatchToolResult result = RunApplyPatchTool(GlobalFor(who), CallerFor(who), request);
    audit->Patch(who, request.input, result);
    metrics.Call(who.tenant, "apply_patch",
                 result.internal  ? "error"
                 : result.refused ? "deny"
                                  : "allow");
    return result;
  }
  static policy::Caller CallerFor(const Principal& who) {
    policy::Caller caller;
    caller.provider = who.provider;
    caller.sender = who.sender;
    caller.uid = who.sender.empty() ? who.uid : -1;
    caller.agent_id = who.agent;
    caller.session_key = who.session;
    caller.tenant = who.tenant;  // host_execution: the loader reads it from the tenant's layer
    return caller;
  }
};

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() = default;

namespace {

// Every back-end a runtime knows, by the plan's target. The Docker one is made on the first
// sandbox call (or re-adoption): making the client does not contact the engine, and a failure
// (a bad DOCKER_HOST) is not remembered, so each sandbox call fails closed until it is fixed.
// `die_with_runner`: background host sessions die with a crashed runner (a clean Shutdown kills
// or keeps them by the same option).
void RegisterExecutors(exec::ExecutorRegistry& registry, const GlobalOptions& global,
                       const std::string& state_dir, const std::string& socket,
                       bool die_with_runner, bool warm_pools) {
  // Host commands must not reach this server's socket, the state dir or the engine.
  exec::HostExecutor::Options host_options = HostExecutorOptions(
      global, state_dir, socket.empty() ? std::vector<std::string>{} : std::vector{socket});
  host_options.die_with_runner = die_with_runner;
  registry.Register(
      exec::Target::kGateway, [host_options]() -> Result<std::shared_ptr<exec::Executor>> {
        return std::shared_ptr<exec::Executor>(std::make_shared<exec::HostExecutor>(host_options));
      });
  // Warm pools (sandbox.pool) only in the server: it drains them, and it serves new scopes (an
  // in-process MCP server serves its one --session: its pool would only wait).
  registry.Register(exec::Target::kSandbox,
                    [warm_pool = warm_pools]() -> Result<std::shared_ptr<exec::Executor>> {
                      SANDRUN_ASSIGN_OR_RETURN(auto client, docker::Client::FromEnvironment());
                      auto executor = std::make_shared<exec::DockerExecutor>(std::move(client));
                      if (warm_pool) executor->pool().EnableWarmPool();
                      return std::shared_ptr<exec::Executor>(std::move(executor));
                    });
}

}  // namespace

Result<std::unique_ptr<Runtime>> Runtime::Start(const GlobalOptions& global, Options options) {
  auto impl = std::make_unique<Impl>();
  impl->global = global;
  impl->options = options;
  impl->services.executors = &impl->executors;
  if (options.one_shot) {
    // Nothing is created here: a call that cannot resolve the state dir says so itself.
    impl->state_dir = config::StateDirPath().value_or(std::string());
    RegisterExecutors(impl->executors, global, impl->state_dir, "", /*die_with_runner=*/true,
                      /*warm_pools=*/false);
    impl->audit = AuditTrail::Open(impl->state_dir, /*required=*/false).value();
    return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
  }
  SANDRUN_ASSIGN_OR_RETURN(impl->state_dir, config::StateDirPath());
  SANDRUN_RETURN_IF_ERROR(config::EnsureStateDir(impl->state_dir));
  auto cfg = config::LoadConfigFor(global.config_file, impl->state_dir);
  if (!cfg) return Error::Refusal("invalid-config", cfg.error().ToString());
  for (const auto& w : cfg->warnings) PrintWarning(w);
  impl->server = cfg->server;
  config::AgentSettings defaults = cfg->ForAgent(global.agent);
  impl->SetConfig(std::move(*cfg));
  // Before any call: concurrent first calls must find it, not race to create it.
  SANDRUN_ASSIGN_OR_RETURN(impl->instance_id, config::LoadOrCreateInstanceId(impl->state_dir));
  // The sessions' and events' directory: the state dir's, or this process's own.
  impl->sessions_root = impl->state_dir;
  if (options.private_sessions) {
    impl->sessions_root = impl->state_dir + "/mcp/" + std::to_string(::getpid());
    std::error_code ec;
    if (std::filesystem::exists(impl->sessions_root, ec)) {
      // A dead process's that had this pid: set aside for the reaper, which kills what it left.
      std::filesystem::rename(impl->sessions_root,
                              impl->sessions_root + ".dead-" + std::to_string(::time(nullptr)), ec);
      if (ec) std::filesystem::remove_all(impl->sessions_root, ec);
    }
    std::filesystem::create_directories(impl->sessions_root, ec);
    if (ec || ::chmod(impl->sessions_root.c_str(), 0700) != 0) {
      return Error(ErrorCode::kIo, "cannot create " + impl->sessions_root + ": " +
                                       (ec ? ec.message() : std::strerror(errno)));
    }
  }
  // Before the sessions are recovered: a re-adopted session's exit is an event with its id.
  SANDRUN_ASSIGN_OR_RETURN(impl->events, EventHub::Open(impl->sessions_root + "/events"));
  SANDRUN_ASSIGN_OR_RETURN(impl->audit, AuditTrail::Open(impl->state_dir, /*required=*/true));
  RegisterExecutors(impl->executors, global, impl->state_dir, options.socket,
                    !options.keep_host_processes, /*warm_pools=*/!options.private_sessions);
  // The operator hears at once when no sandbox call can work (it is retried on each call).
  if (auto docker = impl->executors.For(exec::Target::kSandbox); !docker) {
    PrintWarning("sandbox calls will fail: " + docker.error().ToString());
  }

  sessions::Options session_options;
  session_options.state_dir = impl->sessions_root;
  session_options.cleanup_ms = defaults.exec.cleanup_ms;
  session_options.pending_max_chars = static_cast<size_t>(defaults.exec.pending_max_output_chars);
  session_options.max_output_chars = static_cast<size_t>(defaults.exec.max_output_chars);
  Impl* self = impl.get();
  session_options.executor_for = [self](exec::ProcessKind kind) {
    return self->executors.ForKind(kind);
  };
  if (options.private_sessions) ReapDeadPrivateDirs(impl->state_dir + "/mcp", session_options);
  impl->manager = std::make_unique<sessions::SessionManager>(session_options);
  impl->manager->SetEventSink([self](const sessions::Event& e) {
    self->events->Publish(e.scope.tenant, sessions::Event::TypeName(e.type), e.ToJson());
  });
  impl->services.sessions = impl->manager.get();
  // After the executors are registered: sandbox sessions that outlived a restart are re-adopted.
  SANDRUN_ASSIGN_OR_RETURN(auto recovered, impl->manager->Recover());
  for (const auto& w : recovered.warnings) PrintWarning(w);
  impl->recovered_finished = recovered.finished;
  impl->recovered_lost = recovered.lost;
  {
    std::lock_guard<std::mutex> lock(impl->config_mu);
    impl->SetLogBudgetsLocked();
  }
  if (options.private_sessions) return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
  // Approved commands run as background sessions of the caller that asked.
  impl->broker = std::make_unique<ApprovalBroker>(
      impl->state_dir,
      [self](const PendingApproval& p, const std::string& command) -> Result<std::string> {
        // The tenant's session quotas hold at approval time too: the operator's answer must not
        // start what the tenant could not (its requests were counted when it asked).
        auto slot = self->quotas.AdmitExec(p.tenant, /*may_background=*/true, [&] {
          sessions::SessionManager::TenantUsage u = self->manager->UsageOf(p.tenant);
          return TenantSessionUsage{u.held, u.running};
        });
        if (auto* over = std::get_if<QuotaRefusal>(&slot)) {
          self->metrics.QuotaRejection(p.tenant, over->quota);
          return std::move(over->error);
        }
        exec::Plan plan = p.gated.plan;
        plan.command = command;
        ExecServices run_services = self->services;
        run_services.tenant = p.tenant;
        return StartBackgroundSession(
            run_services, p.caller, plan,
            {p.command, p.notify_on_exit, p.notify_on_exit_empty_success});
      },
      [self](const std::string& tenant, const std::string& type, const std::string& json) {
        self->events->Publish(tenant, type, json);
      },
      ApprovalBroker::NowFn(),
      [self](const PendingApproval& p, const std::string& session_id) {
        auto session = self->manager->Find(
            session_id, sessions::Scope{p.tenant, p.caller.agent_id, p.caller.session_key});
        return session != nullptr && !session->finished();
      });
  impl->services.approvals = impl->broker.get();
  // Approvals pending when the last run stopped: each call decided again in its asker's name.
  RestoreReport restored = RestorePendingApprovals(
      impl->state_dir, *impl->broker,
      [self](const Principal& who, const policy::ExecRequest& request) {
        return RebuildPendingApproval(self->GlobalFor(who), Impl::CallerFor(who), request,
                                      who.tenant);
      });
  for (const auto& w : restored.warnings) PrintWarning(w);
  if (restored.restored + restored.dropped > 0) {
    std::fprintf(stderr, "sandrun: %d pending approvals restored, %d dropped\n", restored.restored,
                 restored.dropped);
  }
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

std::unique_ptr<Runtime> Runtime::StartOneShot(const GlobalOptions& global) {
  Options options;
  options.one_shot = true;
  auto runtime = Start(global, std::move(options));
  return std::move(runtime).value();  // a one-shot start has no failure
}

RuntimeReply Runtime::Count(RuntimeReply reply) {
  ++requests_;
  if (reply.status >= 400 && reply.status < 500) ++refused_;
  return reply;
}

namespace {

// A tool call of the one kind a route takes, or the 400 reply.
std::variant<ToolCall, RuntimeReply> ParseCallOf(std::string_view body, const std::string& tool,
                                                 const char* route) {
  auto parsed = ParseToolCall(body);
  if (!parsed) return RuntimeReply{400, RenderToolError(parsed.error())};
  ToolCall& call = *parsed;
  if (call.tool != tool) {
    return ErrorReply(400, "invalid-request",
                      std::string("POST ") + route + " takes " + tool + " tool calls");
  }
  return std::move(call);
}

}  // namespace

RuntimeReply Runtime::Exec(const Principal& who, std::string_view body, const CancelToken* cancel) {
  auto parsed = ParseCallOf(body, "exec", "/v1/tools/exec");
  if (auto* reply = std::get_if<RuntimeReply>(&parsed)) return Count(std::move(*reply));
  const policy::ExecRequest& request = std::get<ToolCall>(parsed).exec;
  // A server exec has a yield window: any call may become a background session.
  auto slot = impl_->AdmitExec(who, request, impl_->manager != nullptr);
  if (auto* over = std::get_if<QuotaRefusal>(&slot)) return Count(QuotaReply(*over));
  ExecServices call_services = impl_->services;
  call_services.tenant = who.tenant;
  ExecToolResult result = impl_->RunAudited(who, request, call_services, cancel);
  for (const std::string& w : result.config_warnings) PrintWarning(w);
  return Count({result.refused    ? RefusalStatus(result.error.WireCode())
                : result.internal ? 500
                                  : 200,
                result.json});
}

ExecToolResult Runtime::ExecForeground(const Principal& who, const policy::ExecRequest& request,
                                       ForegroundFn run_foreground, const CancelToken* cancel,
                                       std::function<void(const ExecToolResult&)> on_wait) {
  ++requests_;
  const bool may_background =
      impl_->manager != nullptr && (request.background || request.yield_ms.has_value());
  auto slot = impl_->AdmitExec(who, request, may_background);
  if (auto* over = std::get_if<QuotaRefusal>(&slot)) {
    ++refused_;
    return QuotaResult<ExecToolResult>(*over);
  }
  ExecServices call_services = impl_->services;
  call_services.tenant = who.tenant;
  call_services.run_foreground = std::move(run_foreground);
  call_services.on_wait = std::move(on_wait);
  ExecToolResult result = impl_->RunAudited(who, request, call_services, cancel);
  for (const std::string& w : result.config_warnings) PrintWarning(w);
  if (result.refused) ++refused_;
  return result;
}

ExecToolResult Runtime::ExecWatched(const Principal& who, const policy::ExecRequest& request,
                                    const YieldWatch& watch, const CancelToken* approval_cancel) {
  ++requests_;
  auto slot = impl_->AdmitExec(who, request, impl_->manager != nullptr);
  if (auto* over = std::get_if<QuotaRefusal>(&slot)) {
    ++refused_;
    return QuotaResult<ExecToolResult>(*over);
  }
  ExecServices call_services = impl_->services;
  call_services.tenant = who.tenant;
  call_services.watch = &watch;
  ExecToolResult result = impl_->RunAudited(who, request, call_services, approval_cancel);
  for (const std::string& w : result.config_warnings) PrintWarning(w);
  if (result.refused) ++refused_;
  return result;
}

config::McpSettings Runtime::McpSettings() const {
  auto cfg = impl_->ConfigForCall();
  return cfg ? (*cfg)->mcp : config::McpSettings();
}

RuntimeReply Runtime::ApplyPatch(const Principal& who, std::string_view body) {
  auto parsed = ParseCallOf(body, "apply_patch", "/v1/tools/apply_patch");
  if (auto* reply = std::get_if<RuntimeReply>(&parsed)) return Count(std::move(*reply));
  if (auto over = impl_->AdmitCall(who, "apply_patch", "")) return Count(QuotaReply(*over));
  ApplyPatchToolResult result = impl_->RunPatch(who, std::get<ToolCall>(parsed).apply_patch);
  return Count({result.refused    ? RefusalStatus(result.error.WireCode())
                : result.internal ? 500
                                  : 200,
                result.json});
}

ApplyPatchToolResult Runtime::ApplyPatch(const Principal& who, const ApplyPatchRequest& request) {
  ++requests_;
  if (auto over = impl_->AdmitCall(who, "apply_patch", "")) {
    ++refused_;
    return QuotaResult<ApplyPatchToolResult>(*over);
  }
  ApplyPatchToolResult result = impl_->RunPatch(who, request);
  if (result.refused) ++refused_;
  return result;
}

RuntimeReply Runtime::Process(const Principal& who, std::string_view body) {
  if (auto bad = config::CallerIdsError(who.agent, who.session)) {
    return Count(ErrorReply(400, "invalid-request", *bad));
  }
  // Tool policy first: a denied process tool refuses every action, server or not (the CLI's
  // one-shot runtime, the server's routes and `sandrun call` all come here).
  auto cfg = impl_->ConfigForCall();
  std::optional<Error> refused =
      cfg ? ToolPolicyRefusal(**cfg, who.tenant, who.agent, policy::kToolProcess)
          : std::optional<Error>(cfg.error());
  if (refused) {
    impl_->audit->Refused(who, "process", "", *refused);
    RuntimeReply reply{RefusalStatus(refused->WireCode()), RenderToolError(*refused)};
    impl_->CountCall(who, "process", reply.status);
    return Count(std::move(reply));
  }
  if (!impl_->manager)
    return Count(ServerRequired("The process tool works on background sessions"));
  auto parsed = sessions::ParseProcessRequest(body);
  if (!parsed) return Count({400, RenderToolError(parsed.error())});
  if (auto over = impl_->AdmitCall(who, "process", "")) return Count(QuotaReply(*over));
  sessions::Scope scope{who.tenant, who.agent, who.session};
  sessions::ProcessResult result = impl_->manager->Process(*parsed, scope);
  RuntimeReply reply = result.error ? RuntimeReply{RefusalStatus(result.error->WireCode()),
                                                   RenderToolError(*result.error)}
                                    : RuntimeReply{200, result.json};
  impl_->CountCall(who, "process", reply.status);
  return Count(std::move(reply));
}

RuntimeReply Runtime::PolicyCheck(const Principal& who, std::string_view body) {
  auto parsed = ParseCallOf(body, "exec", "/v1/policy/check");
  if (auto* reply = std::get_if<RuntimeReply>(&parsed)) return Count(std::move(*reply));
  const policy::ExecRequest& request = std::get<ToolCall>(parsed).exec;
  if (auto over = impl_->AdmitCall(who, "policy_check", request.command)) {
    return Count(QuotaReply(*over));
  }
  impl_->CountCall(who, "policy_check", 200);
  return Count({200, PolicyCheck(who, request)});
}

std::string Runtime::PolicyCheck(const Principal& who, const policy::ExecRequest& request) {
  return PolicyCheckJson(impl_->GlobalFor(who), Impl::CallerFor(who), request);
}

namespace {

// Whose approvals `who` may see and answer: its own agent's (an agent token), the agents its
// token names (an operator's --agents), or every agent of its tenant.
ApprovalBroker::AgentFilter ApprovalAgents(const Principal& who, bool own_agent_only) {
  if (own_agent_only) {
    return [agent = who.agent](const std::string& a) { return a == agent; };
  }
  if (who.agent_globs.empty()) return {};
  return [globs = who.agent_globs](const std::string& a) {
    for (const std::string& g : globs) {
      if (auth::AgentGlobMatch(g, a)) return true;
    }
    return false;
  };
}

}  // namespace

RuntimeReply Runtime::ListApprovals(const Principal& who) {
  if (!impl_->broker) return ServerRequired("Pending approvals wait for an operator");
  return {200, impl_->broker->ListJson(who.tenant, ApprovalAgents(who, false))};
}

RuntimeReply Runtime::DecideApproval(const Principal& who, const std::string& id,
                                     std::string_view body) {
  if (!impl_->broker) return Count(ServerRequired("Pending approvals wait for an operator"));
  auto doc = ParseJson(body);
  if (!doc || !doc->IsObject() || !JsonMember(*doc, "decision") ||
      !JsonMember(*doc, "decision")->IsString()) {
    return Count(ErrorReply(400, "invalid-request",
                            "POST /v1/approvals/{id} takes {\"decision\": \"allow-once|"
                            "allow-always|deny\"}"));
  }
  const std::string decision = JsonString(*doc, "decision");
  ApprovalBroker::Answer a = impl_->broker->Decide(id, decision, who.tenant, OperatorName(who),
                                                   ApprovalAgents(who, false));
  if (a.status == 200) {
    // The full id (the operator may have given the slug).
    auto answered = ParseJson(a.json);
    impl_->audit->Approval(who, answered ? JsonString(*answered, "id", id) : id, decision);
  }
  return Count({a.status, a.json});
}

RuntimeReply Runtime::ShowApproval(const Principal& who, const std::string& id,
                                   bool own_agent_only) {
  if (!impl_->broker) return ServerRequired("Approvals are kept by the server");
  ApprovalBroker::Answer a =
      impl_->broker->Show(id, who.tenant, ApprovalAgents(who, own_agent_only));
  return {a.status, a.json};
}

RuntimeReply Runtime::ListSessionStates(const Principal& who, const std::string& agent) {
  return ::sandrun::api::ListSessionStates({impl_->global, impl_->state_dir, who}, agent);
}

RuntimeReply Runtime::ShowSessionState(const Principal& who, const std::string& agent,
                                       const std::string& key) {
  return ::sandrun::api::ShowSessionState({impl_->global, impl_->state_dir, who}, agent, key);
}

RuntimeReply Runtime::ChangeSessionState(const Principal& who, const std::string& agent,
                                         const std::string& key, const std::string& action,
                                         std::string_view body) {
  const SessionAdminContext ctx{impl_->global, impl_->state_dir, who};
  SessionChange change = action == "clear"       ? ClearSessionState(ctx, agent, key)
                         : action == "directive" ? ApplySessionDirective(ctx, agent, key, body)
                                                 : PatchSessionState(ctx, agent, key, body);
  if (change.changed) {
    impl_->events->Publish(who.tenant, "session.updated", change.event_json);
  }
  if (change.changed || change.reply.status != 200) {
    impl_->audit->Operator(who, "session", action,
                           agent + "/" + key + (change.changed ? " " + change.summary : ""),
                           change.changed);
  }
  return Count(std::move(change.reply));
}

Status Runtime::Reload() {
  if (!impl_->manager) return Ok();  // a one-shot runtime reads the config per call
  auto cfg = config::LoadConfigFor(impl_->global.config_file, impl_->state_dir);
  if (!cfg) return Error::Refusal("invalid-config", cfg.error().ToString());
  for (const auto& w : cfg->warnings) PrintWarning(w);
  impl_->SetConfig(std::move(*cfg));
  impl_->executors.ConfigChanged();  // warm containers of the old config go
  return Ok();
}

RuntimeReply Runtime::ListSandboxes(const Principal& who) {
  if (!impl_->manager) return ServerRequired("Sandboxes are listed and removed by operators");
  return ::sandrun::api::ListSandboxes(impl_->state_dir, who.tenant);
}

RuntimeReply Runtime::RemoveSandbox(const Principal& who, const std::string& name) {
  if (!impl_->manager) return ServerRequired("Sandboxes are listed and removed by operators");
  RuntimeReply reply = ::sandrun::api::RemoveSandbox(impl_->state_dir, who.tenant, name);
  impl_->audit->Operator(who, "sandbox", "remove", name, reply.status == 200);
  return reply;
}

std::shared_ptr<Runtime::Subscription> Runtime::Subscribe(const TenantFilter& filter,
                                                          std::optional<uint64_t> after) {
  return impl_->events->Subscribe(filter, after);
}
void Runtime::Unsubscribe(const std::shared_ptr<Subscription>& s) { impl_->events->Unsubscribe(s); }
bool Runtime::NextEvent(const std::shared_ptr<Subscription>& s, Event* out, int ms) {
  StoredEvent e;
  if (!impl_->events->Next(s, &e, ms)) return false;
  *out = {std::move(e.type), std::move(e.json), e.id, std::move(e.tenant)};
  return true;
}

std::string Runtime::MetricsText(const TenantFilter& filter) const {
  RuntimeMetrics::Gauges g;
  g.requests = requests_.load();
  g.refused = refused_.load();
  g.sessions = session_count();
  if (impl_->manager) g.running_sessions = impl_->manager->RunningByTenant();
  if (impl_->broker) g.pending_approvals = impl_->broker->PendingByTenant();
  // One list call to the engine, bounded: a scrape must not hang on a stuck engine.
  if (!impl_->instance_id.empty()) {
    if (auto client = docker::Client::FromEnvironment(); client) {
      CallOptions opts{Deadline::After(std::chrono::seconds(2))};
      auto list = (*client)->ListContainers(
          {std::string(exec::kInstanceLabel) + "=" + impl_->instance_id}, true, opts);
      if (list) {
        std::map<std::string, size_t> by;
        // As the quotas count: a warm-pool container is nobody's until claimed.
        const auto registry = exec::SandboxRegistry(impl_->state_dir).Load();
        for (const auto& c : *list) {
          if (registry && exec::IsUnclaimedPoolContainer(
                              c.id, c.names.empty() ? "" : c.names.front(), c.labels, *registry))
            continue;
          auto it = c.labels.find(exec::kTenantLabel);
          ++by[it == c.labels.end() ? std::string() : it->second];
        }
        g.containers = std::move(by);
      }
    }
  }
  return impl_->metrics.Text(filter, g);
}

const config::ServerSettings& Runtime::server_settings() const { return impl_->server; }
size_t Runtime::session_count() const { return impl_->manager ? impl_->manager->size() : 0; }
int Runtime::recovered_finished() const { return impl_->recovered_finished; }
int Runtime::recovered_lost() const { return impl_->recovered_lost; }
const std::string& Runtime::state_dir() const { return impl_->state_dir; }

void Runtime::CloseEvents() {
  impl_->events->Close();
  // Calls waiting for an approval return now (it stays recorded for the next run).
  if (impl_->broker) impl_->broker->Shutdown();
}

void Runtime::Shutdown() {
  if (impl_->broker) impl_->broker->Shutdown();
  impl_->executors.Shutdown();  // the warm pool's containers go; sessions are handled below
  if (impl_->options.private_sessions) {
    // Nothing outlives an in-process MCP server: no later run could reach its sessions.
    impl_->manager.reset();  // kills every session still running (executor contract)
    std::error_code ec;
    std::filesystem::remove_all(impl_->sessions_root, ec);
    return;
  }
  if (impl_->manager) {
    impl_->manager->Shutdown(/*kill_host_processes=*/!impl_->options.keep_host_processes);
  }
}

Principal CliPrincipal(const GlobalOptions& global) {
  Principal who;
  who.provider = "cli";
  who.uid = ::geteuid();
  who.agent = global.agent;
  who.session = global.session.empty() ? "main" : global.session;
  who.workspace_root = global.workspace;
  who.cwd = global.cwd;
  return who;
}

}  // namespace sandrun::api

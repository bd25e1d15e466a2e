#include "runner/api/runtime.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <variant>

#include "runner/api/apply_patch_tool.h"
#include "runner/api/approval_broker.h"
#include "runner/api/audit_trail.h"
#include "runner/api/exec_tool.h"
#include "runner/api/policy_cmd.h"
#include "runner/api/server_client.h"
#include "runner/api/tool_call.h"
#include "runner/config/config.h"
#include "runner/config/ids.h"
#include "runner/config/state_dir.h"
#include "runner/sessions/manager.h"
#include "runner/sessions/process_request.h"
#include "runner/wire/tool_result.h"
#include "sandbox/base/json.h"
#include "sandbox/docker/client.h"
#include "sandbox/executors/docker/docker_executor.h"
#include "sandbox/executors/host/host_executor.h"
#include "sandbox/executors/registry.h"

namespace sandrun::api {

class Runtime::Subscription {
 public:
  std::deque<Event> queue;
  std::condition_variable wake;
};

namespace {

// Fans events out to every subscriber; each has a bounded queue so a slow client loses old
// events instead of holding the server's memory.
class EventHub {
 public:
  using Subscription = Runtime::Subscription;
  std::shared_ptr<Subscription> Subscribe() {
    auto s = std::make_shared<Subscription>();
    std::lock_guard<std::mutex> lock(mu_);
    subscribers_.push_back(s);
    return s;
  }
  void Unsubscribe(const std::shared_ptr<Subscription>& s) {
    std::lock_guard<std::mutex> lock(mu_);
    subscribers_.remove(s);
  }
  void Publish(const std::string& type, const std::string& json) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : subscribers_) {
      if (s->queue.size() >= kMaxQueued) s->queue.pop_front();
      s->queue.push_back({type, json});
      s->wake.notify_all();
    }
  }
  bool Next(const std::shared_ptr<Subscription>& s, Runtime::Event* out, int ms) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!s->wake.wait_for(lock, std::chrono::milliseconds(ms),
                          [&] { return closed_ || !s->queue.empty(); }) ||
        s->queue.empty()) {
      return false;
    }
    *out = std::move(s->queue.front());
    s->queue.pop_front();
    return true;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    for (auto& s : subscribers_) s->wake.notify_all();
  }

 private:
  static constexpr size_t kMaxQueued = 1000;
  std::mutex mu_;
  std::list<std::shared_ptr<Subscription>> subscribers_;
  bool closed_ = false;
};

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
  config::ServerSettings server;
  int recovered_finished = 0;
  int recovered_lost = 0;
  EventHub events;
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
  // then how it ended, or the one line of a call that ran nothing.
  ExecToolResult RunAudited(const Principal& who, const policy::ExecRequest& request,
                            ExecServices& call_services, const CancelToken* cancel) {
    bool started = false;
    call_services.on_run = [&](const std::string& host) -> Status {
      SANDRUN_RETURN_IF_ERROR(audit->Started(who, request, host));
      started = true;
      return Ok();
    };
    ExecToolResult result =
        RunExecTool(GlobalFor(who), CallerFor(who), request, nullptr, cancel, call_services);
    audit->Exec(who, request, result, started);
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
                       bool die_with_runner) {
  // Host commands must not reach this server's socket, the state dir or the engine.
  exec::HostExecutor::Options host_options = HostExecutorOptions(
      global, state_dir, socket.empty() ? std::vector<std::string>{} : std::vector{socket});
  host_options.die_with_runner = die_with_runner;
  registry.Register(
      exec::Target::kGateway, [host_options]() -> Result<std::shared_ptr<exec::Executor>> {
        return std::shared_ptr<exec::Executor>(std::make_shared<exec::HostExecutor>(host_options));
      });
  registry.Register(exec::Target::kSandbox, []() -> Result<std::shared_ptr<exec::Executor>> {
    SANDRUN_ASSIGN_OR_RETURN(auto client, docker::Client::FromEnvironment());
    return std::shared_ptr<exec::Executor>(
        std::make_shared<exec::DockerExecutor>(std::move(client)));
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
    RegisterExecutors(impl->executors, global, impl->state_dir, "", /*die_with_runner=*/true);
    impl->audit = AuditTrail::Open(impl->state_dir, /*required=*/false).value();
    return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
  }
  SANDRUN_ASSIGN_OR_RETURN(impl->state_dir, config::StateDirPath());
  SANDRUN_RETURN_IF_ERROR(config::EnsureStateDir(impl->state_dir));
  auto cfg = config::LoadConfigFor(global.config_file, impl->state_dir);
  if (!cfg) return Error::Refusal("invalid-config", cfg.error().ToString());
  for (const auto& w : cfg->warnings) PrintWarning(w);
  impl->server = cfg->server;
  // Before any call: concurrent first calls must find it, not race to create it.
  SANDRUN_RETURN_IF_ERROR(config::LoadOrCreateInstanceId(impl->state_dir));
  SANDRUN_ASSIGN_OR_RETURN(impl->audit, AuditTrail::Open(impl->state_dir, /*required=*/true));
  RegisterExecutors(impl->executors, global, impl->state_dir, options.socket,
                    !options.keep_host_processes);
  // The operator hears at once when no sandbox call can work (it is retried on each call).
  if (auto docker = impl->executors.For(exec::Target::kSandbox); !docker) {
    PrintWarning("sandbox calls will fail: " + docker.error().ToString());
  }

  sessions::Options session_options;
  session_options.state_dir = impl->state_dir;
  config::AgentSettings defaults = cfg->ForAgent(global.agent);
  session_options.cleanup_ms = defaults.exec.cleanup_ms;
  session_options.pending_max_chars = static_cast<size_t>(defaults.exec.pending_max_output_chars);
  session_options.max_output_chars = static_cast<size_t>(defaults.exec.max_output_chars);
  Impl* self = impl.get();
  session_options.executor_for = [self](exec::ProcessKind kind) {
    return self->executors.ForKind(kind);
  };
  impl->manager = std::make_unique<sessions::SessionManager>(session_options);
  impl->manager->SetEventSink([self](const sessions::Event& e) {
    self->events.Publish(sessions::Event::TypeName(e.type), e.ToJson());
  });
  impl->services.sessions = impl->manager.get();
  // After the executors are registered: sandbox sessions that outlived a restart are re-adopted.
  SANDRUN_ASSIGN_OR_RETURN(auto recovered, impl->manager->Recover());
  for (const auto& w : recovered.warnings) PrintWarning(w);
  impl->recovered_finished = recovered.finished;
  impl->recovered_lost = recovered.lost;
  // Approved commands run as background sessions of the caller that asked.
  impl->broker = std::make_unique<ApprovalBroker>(
      impl->state_dir,
      [self](const PendingApproval& p, const std::string& command) -> Result<std::string> {
        exec::Plan plan = p.gated.plan;
        plan.command = command;
        ExecServices run_services = self->services;
        run_services.tenant = p.tenant;
        return StartBackgroundSession(
            run_services, p.caller, plan,
            {p.command, p.notify_on_exit, p.notify_on_exit_empty_success});
      },
      [self](const std::string& type, const std::string& json) {
        self->events.Publish(type, json);
      });
  impl->services.approvals = impl->broker.get();
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
  ExecServices call_services = impl_->services;
  call_services.tenant = who.tenant;
  const policy::ExecRequest& request = std::get<ToolCall>(parsed).exec;
  ExecToolResult result = impl_->RunAudited(who, request, call_services, cancel);
  for (const std::string& w : result.config_warnings) PrintWarning(w);
  return Count({result.refused    ? RefusalStatus(result.error.WireCode())
                : result.internal ? 500
                                  : 200,
                result.json});
}

ExecToolResult Runtime::ExecForeground(const Principal& who, const policy::ExecRequest& request,
                                       ForegroundFn run_foreground) {
  ++requests_;
  ExecServices call_services = impl_->services;
  call_services.tenant = who.tenant;
  call_services.run_foreground = std::move(run_foreground);
  ExecToolResult result = impl_->RunAudited(who, request, call_services, nullptr);
  for (const std::string& w : result.config_warnings) PrintWarning(w);
  if (result.refused) ++refused_;
  return result;
}

RuntimeReply Runtime::ApplyPatch(const Principal& who, std::string_view body) {
  auto parsed = ParseCallOf(body, "apply_patch", "/v1/tools/apply_patch");
  if (auto* reply = std::get_if<RuntimeReply>(&parsed)) return Count(std::move(*reply));
  ApplyPatchToolResult result = ApplyPatch(who, std::get<ToolCall>(parsed).apply_patch);
  return {result.refused    ? RefusalStatus(result.error.WireCode())
          : result.internal ? 500
                            : 200,
          result.json};
}

ApplyPatchToolResult Runtime::ApplyPatch(const Principal& who, const ApplyPatchRequest& request) {
  ApplyPatchToolResult result =
      RunApplyPatchTool(impl_->GlobalFor(who), Impl::CallerFor(who), request);
  ++requests_;
  if (result.refused) ++refused_;
  return result;
}

RuntimeReply Runtime::Process(const Principal& who, std::string_view body) {
  if (!impl_->manager)
    return Count(ServerRequired("The process tool works on background sessions"));
  auto parsed = sessions::ParseProcessRequest(body);
  if (!parsed) return Count({400, RenderToolError(parsed.error())});
  if (auto bad = config::CallerIdsError(who.agent, who.session)) {
    return Count(ErrorReply(400, "invalid-request", *bad));
  }
  sessions::Scope scope{who.tenant, who.agent, who.session};
  sessions::ProcessResult result = impl_->manager->Process(*parsed, scope);
  if (result.error) {
    return Count({RefusalStatus(result.error->WireCode()), RenderToolError(*result.error)});
  }
  return Count({200, result.json});
}

RuntimeReply Runtime::PolicyCheck(const Principal& who, std::string_view body) {
  auto parsed = ParseCallOf(body, "exec", "/v1/policy/check");
  if (auto* reply = std::get_if<RuntimeReply>(&parsed)) return Count(std::move(*reply));
  return Count({200, PolicyCheck(who, std::get<ToolCall>(parsed).exec)});
}

std::string Runtime::PolicyCheck(const Principal& who, const policy::ExecRequest& request) {
  return PolicyCheckJson(impl_->GlobalFor(who), Impl::CallerFor(who), request);
}

RuntimeReply Runtime::ListApprovals(const Principal& who) {
  if (!impl_->broker) return ServerRequired("Pending approvals wait for an operator");
  return {200, impl_->broker->ListJson(who.tenant)};
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
  ApprovalBroker::Answer a = impl_->broker->Decide(id, decision, who.tenant);
  if (a.status == 200) {
    // The full id (the operator may have given the slug).
    auto answered = ParseJson(a.json);
    impl_->audit->Approval(who, answered ? JsonString(*answered, "id", id) : id, decision);
  }
  return Count({a.status, a.json});
}

std::shared_ptr<Runtime::Subscription> Runtime::Subscribe() { return impl_->events.Subscribe(); }
void Runtime::Unsubscribe(const std::shared_ptr<Subscription>& s) { impl_->events.Unsubscribe(s); }
bool Runtime::NextEvent(const std::shared_ptr<Subscription>& s, Event* out, int ms) {
  return impl_->events.Next(s, out, ms);
}

const config::ServerSettings& Runtime::server_settings() const { return impl_->server; }
size_t Runtime::session_count() const { return impl_->manager ? impl_->manager->size() : 0; }
int Runtime::recovered_finished() const { return impl_->recovered_finished; }
int Runtime::recovered_lost() const { return impl_->recovered_lost; }
const std::string& Runtime::state_dir() const { return impl_->state_dir; }

void Runtime::CloseEvents() { impl_->events.Close(); }

void Runtime::Shutdown() {
  if (impl_->broker) impl_->broker->Shutdown();
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

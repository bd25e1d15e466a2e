#include "runner/sessions/manager.h"

#include <fcntl.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/file.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>

#include "runner/sessions/internal.h"
#include "runner/sessions/session_id.h"
#include "sandbox/os/file.h"

namespace sandrun::sessions {
namespace {

constexpr int64_t kMinCleanupMs = 60 * 1000;  // OpenClaw's TTL clamp
constexpr int64_t kMaxCleanupMs = 3 * 60 * 60 * 1000;
constexpr int64_t kMinSweepIntervalMs = 30 * 1000;
constexpr int64_t kShutdownKillWaitMs = 5000;

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void internal::Hub::Emit(const Event& event) {
  std::lock_guard<std::mutex> lock(events_mu);
  if (events) events(event);
}

const char* Event::TypeName(Type type) {
  switch (type) {
    case Type::kSessionStarted:
      return "session.started";
    case Type::kExecFinished:
      return "exec.finished";
    case Type::kExecFailed:
      return "exec.failed";
  }
  return "session.started";
}

std::string Event::ToJson() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  auto str = [&](std::string_view s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  };
  w.StartObject();
  w.Key("type");
  w.String(TypeName(type));
  w.Key("sessionId");
  str(session_id);
  w.Key("tenant");
  str(scope.tenant);
  w.Key("agentId");
  str(scope.agent_id);
  w.Key("sessionKey");
  str(scope.session_key);
  w.Key("text");
  str(text);
  w.Key("atMs");
  w.Int64(at_ms);
  w.Key("status");
  w.String(SessionStatusName(status));
  w.Key("exitCode");
  if (exit_code) {
    w.Int(*exit_code);
  } else {
    w.Null();
  }
  w.Key("signal");
  if (signal.empty()) {
    w.Null();
  } else {
    str(signal);
  }
  w.Key("timedOut");
  w.Bool(timed_out);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

SessionManager::SessionManager(Options options) : hub_(std::make_shared<internal::Hub>()) {
  if (!options.now_ms) options.now_ms = SystemNowMs;
  options.cleanup_ms = std::clamp(options.cleanup_ms, kMinCleanupMs, kMaxCleanupMs);
  if (options.max_output_chars == 0) options.max_output_chars = 1;
  hub_->root = (options.state_dir.empty() ? std::string(".") : options.state_dir) + "/sessions";
  hub_->options = std::move(options);
  if (hub_->options.sweeper_thread) sweeper_ = std::thread([this] { SweeperLoop(); });
}

SessionManager::~SessionManager() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_sweeper_ = true;
  }
  sweep_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
  SetEventSink(nullptr);
  {
    std::lock_guard<std::mutex> lock(hub_->log_budget_mu);
    hub_->enforce_log_budget = nullptr;  // sessions may outlive this object briefly
  }
  std::map<std::string, std::shared_ptr<Session>> sessions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sessions.swap(sessions_);
  }
  sessions.clear();  // running ones are killed by their destructors (unless released)
}

void SessionManager::SweeperLoop() {
  int64_t interval = std::max(kMinSweepIntervalMs, hub_->options.cleanup_ms / 6);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_sweeper_) {
    sweep_cv_.wait_for(lock, std::chrono::milliseconds(interval), [this] { return stop_sweeper_; });
    if (stop_sweeper_) break;
    lock.unlock();
    Sweep();
    lock.lock();
  }
}

Result<RecoveryReport> SessionManager::Recover() {
  RecoveryReport report;
  SANDRUN_RETURN_IF_ERROR(EnsureDirectory(hub_->root, 0700));
  if (!owner_lock_.valid()) {
    std::string path = hub_->root + "/.lock";
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!fd.valid()) return Error::FromErrno(errno, "opening " + path);
    while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EINTR) continue;
      if (errno == EWOULDBLOCK) {
        return Error(ErrorCode::kConflict,
                     "another process (a running sandrun server?) owns " + hub_->root);
      }
      return Error::FromErrno(errno, "locking " + path);
    }
    owner_lock_ = std::move(fd);
  }
  std::error_code ec;
  std::vector<std::string> ids;
  for (const auto& entry : std::filesystem::directory_iterator(hub_->root, ec)) {
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) ids.push_back(entry.path().filename().string());
  }
  if (ec) return Error(ErrorCode::kIo, "reading " + hub_->root + ": " + ec.message());
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (sessions_.count(id) != 0) continue;
    }
    auto loaded = Session::Load(id, hub_);
    if (!loaded) {
      report.warnings.push_back(loaded.error().ToString());
      continue;
    }
    auto [session, kind] = std::move(loaded).value();
    if (kind == Session::LoadKind::kDrop) {
      session->DeleteFiles();
      ++report.dropped;
      continue;
    }
    if (kind == Session::LoadKind::kRunning) {
      (AdoptOrLose(*session) ? report.adopted : report.lost)++;
    } else {
      ++report.finished;
    }
    std::lock_guard<std::mutex> lock(mu_);
    sessions_[id] = std::move(session);
  }
  return report;
}

bool SessionManager::AdoptOrLose(Session& session) {
  SessionSnapshot s = session.Snapshot();
  exec::Executor* executor = nullptr;
  if (s.kind && *s.kind != exec::ProcessKind::kHost && hub_->options.executor_for) {
    executor = hub_->options.executor_for(*s.kind);
  }
  std::string key;
  {
    std::lock_guard<std::mutex> lock(session.mu_);
    key = session.adoption_key_;
  }
  if (executor == nullptr || key.empty()) {
    session.MarkLost(session.LostNote());
    return false;
  }
  // The timeout runs from the original start: what is left of it (at least 1 ms, so an expired
  // one fires at once and the session ends timed out).
  int64_t timeout_ms = 0;
  if (s.meta.timeout_ms > 0) {
    timeout_ms = std::max<int64_t>(s.meta.timeout_ms - (hub_->Now() - s.started_at_ms), 1);
  }
  auto adopted = executor->Adopt(key, session.Sink(), timeout_ms);
  if (!adopted) {
    if (adopted.error().code == ErrorCode::kNotFound) {
      session.MarkLost("Process was lost when the server restarted (it is no longer running).");
    } else {
      session.MarkLost("Process was lost when the server restarted: it could not be re-adopted (" +
                       adopted.error().ToString() + ") and may still be running in the sandbox.");
    }
    return false;
  }
  // The agent replays what the process printed while no server was attached: nothing to note.
  const bool whole = (*adopted)->recovers_output();
  session.Adopt(std::move(adopted).value(),
                whole ? std::string()
                      : "\n[sandrun: the server restarted and re-adopted this process; kill and "
                        "its timeout still apply, but output it printed after the restart was not "
                        "captured]\n");
  return true;
}

bool SessionManager::IdTaken(const std::string& id) const {
  if (sessions_.count(id) != 0) return true;
  std::error_code ec;
  return std::filesystem::exists(hub_->root + "/" + id, ec);
}

Result<std::shared_ptr<Session>> SessionManager::Begin(SessionMeta meta) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_) return Error(ErrorCode::kConflict, "the session manager is shutting down");
  std::string id =
      CreateSessionId([this](const std::string& candidate) { return IdTaken(candidate); });
  auto session = std::make_shared<Session>(id, std::move(meta), hub_);
  sessions_[id] = session;
  return session;
}

void SessionManager::Remove(const std::string& id) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    session = std::move(it->second);
    sessions_.erase(it);
  }
  (void)session->Kill();
  session->DeleteFiles();
}

void SessionManager::Discard(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second->backgrounded()) return;
  }
  Remove(id);
}

void internal::Hub::LogGrew(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(log_budget_mu);
  auto it = log_budgets.find(tenant);
  if (it == log_budgets.end() || !enforce_log_budget) return;
  enforce_log_budget(tenant, it->second);
}

void SessionManager::SetLogBudgets(std::map<std::string, uint64_t> budgets) {
  std::erase_if(budgets, [](const auto& entry) { return entry.second == 0; });
  std::lock_guard<std::mutex> lock(hub_->log_budget_mu);
  hub_->log_budgets = std::move(budgets);
  if (!hub_->enforce_log_budget) {
    hub_->enforce_log_budget = [this](const std::string& tenant, uint64_t budget) {
      EnforceLogBudget(tenant, budget);
    };
  }
}

void SessionManager::EnforceLogBudget(const std::string& tenant, uint64_t budget) {
  struct Held {
    std::shared_ptr<Session> session;
    Session::LogUsage usage;
  };
  std::vector<Held> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, session] : sessions_) {
      if (session->meta().scope.tenant == tenant) held.push_back({session, 0, {}});
    }
  }
  // Outside mu_: a session's own lock is never taken under the manager's.
  uint64_t total = 0;
  for (Held& h : held) {
    h.usage = h.session->log_usage();
    if (!h.usage.backgrounded) h.usage.bytes = 0;  // a run in its yield window is its call's
    total += h.usage.bytes;
  }
  if (total <= budget) return;
  // Oldest finished first.
  std::sort(held.begin(), held.end(),
            [](const Held& a, const Held& b) { return a.usage.ended_at_ms < b.usage.ended_at_ms; });
  for (Held& h : held) {
    if (!h.usage.finished || h.usage.bytes == 0) continue;
    h.session->DropLog();
    total -= h.usage.bytes;
    if (total <= budget) return;
  }
  for (Held& h : held) {
    if (h.usage.backgrounded && !h.usage.finished) h.session->CapLog();
  }
}

void SessionManager::SetEventSink(std::function<void(const Event&)> sink) {
  std::lock_guard<std::mutex> lock(hub_->events_mu);
  hub_->events = std::move(sink);
}

void SessionManager::Sweep() {
  int64_t now = hub_->Now();
  std::vector<std::string> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, session] : sessions_) {
      std::lock_guard<std::mutex> session_lock(session->mu_);
      if (session->finished_locked() && now - session->ended_at_ms_ > hub_->options.cleanup_ms) {
        expired.push_back(id);
      }
    }
  }
  for (const auto& id : expired) Remove(id);
}

void SessionManager::Shutdown(bool kill_host_processes) {
  std::vector<std::shared_ptr<Session>> running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
    for (const auto& [id, session] : sessions_) {
      if (!session->finished()) running.push_back(session);
    }
  }
  std::vector<std::shared_ptr<Session>> killed;
  for (auto& session : running) {
    // A run still inside its yield window belongs to a foreground call that is going away.
    // A background one is left running (released) unless it is a host process and host
    // processes are to be killed, or its kind cannot be left running.
    bool kill = !session->backgrounded() ||
                (kill_host_processes && session->kind() == exec::ProcessKind::kHost);
    if (!kill && session->Release()) continue;
    if (session->has_process()) {
      (void)session->Kill(/*wait_ms=*/0);
      killed.push_back(session);
    }
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kShutdownKillWaitMs);
  for (auto& session : killed) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    (void)session->WaitFor(std::max<int64_t>(left, 1));
  }
}

std::shared_ptr<Session> SessionManager::Find(const std::string& id, const Scope& scope) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || !(it->second->meta().scope == scope)) return nullptr;
  return it->second;
}

std::vector<std::shared_ptr<Session>> SessionManager::Visible(const Scope& scope) const {
  std::vector<std::shared_ptr<Session>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, session] : sessions_) {
    if (session->meta().scope == scope) out.push_back(session);
  }
  return out;
}

size_t SessionManager::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

SessionManager::TenantUsage SessionManager::UsageOf(const std::string& tenant) const {
  std::vector<std::shared_ptr<Session>> of_tenant;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, session] : sessions_) {
      if (session->meta().scope.tenant == tenant) of_tenant.push_back(session);
    }
  }
  // Outside mu_: a session's own lock is never taken under the manager's.
  TenantUsage usage;
  for (const auto& session : of_tenant) {
    if (!session->backgrounded()) continue;  // a run in its yield window is its call's
    ++usage.held;
    if (!session->finished()) ++usage.running;
  }
  return usage;
}

std::map<std::string, size_t> SessionManager::RunningByTenant() const {
  std::vector<std::shared_ptr<Session>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, session] : sessions_) all.push_back(session);
  }
  std::map<std::string, size_t> running;
  for (const auto& session : all) {
    if (session->backgrounded() && !session->finished()) ++running[session->meta().scope.tenant];
  }
  return running;
}

}  // namespace sandrun::sessions

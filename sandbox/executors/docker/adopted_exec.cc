#include "sandbox/executors/docker/adopted_exec.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "sandbox/executors/docker/exec_wrapper.h"

namespace sandrun::exec {
namespace {

// v2 adds whether the exec is wrapped (exec_wrapper.h); v1 keys (an older server's) are not.
constexpr char kKeyVersion[] = "sandrun-exec-v2";
constexpr char kKeyVersionV1[] = "sandrun-exec-v1";
constexpr auto kPollInterval = std::chrono::milliseconds(200);
constexpr int64_t kTimeoutGraceMs = 3000;

// Ids, tokens and users as the runner makes them: no separator, no control character.
bool CleanField(const std::string& s, bool may_be_empty) {
  if (s.empty()) return may_be_empty;
  if (s.size() > 256) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

std::vector<std::string> SplitBar(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == '|') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

class AdoptedExec final : public RunningProcess {
 public:
  AdoptedExec(std::shared_ptr<docker::Client> client, ExecTree tree, std::string key, int64_t pid,
              int64_t timeout_ms)
      : client_(std::move(client)), tree_(std::move(tree)), key_(std::move(key)), pid_(pid) {
    started_ = std::chrono::steady_clock::now();
    if (timeout_ms > 0) deadline_ = started_ + std::chrono::milliseconds(timeout_ms);
    thread_ = std::thread([this] { Watch(); });
  }
  ~AdoptedExec() override {
    if (!finished() && !released_) (void)Kill(SIGKILL);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

  ProcessKind kind() const override { return ProcessKind::kContainer; }
  std::string adoption_key() const override { return key_; }
  int64_t pid() const override { return pid_; }
  Status WriteStdin(std::string_view) override {
    return Error(ErrorCode::kConflict, "stdin is not reattached after a server restart");
  }
  Status CloseStdin() override { return Ok(); }
  Status Resize(unsigned, unsigned) override {
    return Error(ErrorCode::kConflict, "the terminal is not reattached after a server restart");
  }
  Status Kill(int signal) override {
    if (finished()) return Ok();
    return KillContainerExecTree(*client_, tree_, signal, 0);
  }
  Status Release() override {
    released_ = true;
    return Ok();
  }
  bool finished() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_;
  }
  ExecOutcome Wait() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return finished_; });
    return outcome_;
  }

 private:
  void Watch() {
    ExecOutcome outcome;
    outcome.where = "container " + tree_.container;
    outcome.warnings.push_back(
        "Warning: re-adopted after a server restart; output printed since was not captured.");
    for (;;) {
      auto info = client_->InspectExec(tree_.exec_id);
      if (!info || !info->running) {
        if (info && info->exit_code) EndFromExitCode(*client_, tree_, *info->exit_code, &outcome);
        break;
      }
      if (deadline_ && std::chrono::steady_clock::now() >= *deadline_) {
        if (KillContainerExecTree(*client_, tree_, SIGTERM, kTimeoutGraceMs)) {
          DiscardExecRecord(*client_, tree_);
        }
        outcome.status = ExecOutcome::Status::kTimedOut;
        break;
      }
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, kPollInterval, [this] { return stop_; })) return;
    }
    outcome.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - started_)
                              .count();
    std::lock_guard<std::mutex> lock(mu_);
    outcome_ = std::move(outcome);
    finished_ = true;
    cv_.notify_all();
  }

  std::shared_ptr<docker::Client> client_;
  ExecTree tree_;
  std::string key_;
  int64_t pid_;
  std::chrono::steady_clock::time_point started_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::atomic<bool> released_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool finished_ = false;
  ExecOutcome outcome_;
  std::thread thread_;  // last: started after everything it uses exists
};

}  // namespace

std::string ExecAdoptionKey(const ExecTree& tree) {
  const int64_t created_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(tree.created_at.time_since_epoch())
          .count();
  return std::string(kKeyVersion) + "|" + tree.container + "|" + tree.exec_id + "|" + tree.token +
         "|" + tree.user + "|" + std::to_string(created_ns) + "|" + (tree.wrapped ? "1" : "0");
}

Result<ExecTree> ParseExecAdoptionKey(const std::string& key) {
  auto bad = [] { return Error(ErrorCode::kInvalidArgument, "not a sandbox exec adoption key"); };
  std::vector<std::string> f = SplitBar(key);
  const bool v2 = f.size() == 7 && f[0] == kKeyVersion && (f[6] == "0" || f[6] == "1");
  if (!v2 && !(f.size() == 6 && f[0] == kKeyVersionV1)) return bad();
  if (!CleanField(f[1], false) || !CleanField(f[2], false) || !CleanField(f[3], false) ||
      !CleanField(f[4], true) || f[5].empty() || f[5].size() > 19) {
    return bad();
  }
  for (char c : f[5]) {
    if (c < '0' || c > '9') return bad();
  }
  ExecTree tree;
  tree.container = f[1];
  tree.exec_id = f[2];
  tree.token = f[3];
  tree.user = f[4];
  tree.wrapped = v2 && f[6] == "1";
  tree.created_at =
      Deadline::Clock::time_point(std::chrono::duration_cast<Deadline::Clock::duration>(
          std::chrono::nanoseconds(std::stoll(f[5]))));
  return tree;
}

Result<std::unique_ptr<RunningProcess>> AdoptExec(std::shared_ptr<docker::Client> client,
                                                  const std::string& key, LiveSink sink,
                                                  int64_t timeout_ms) {
  (void)sink;  // nothing more arrives: the attach stream ended with the old server
  SANDRUN_ASSIGN_OR_RETURN(ExecTree tree, ParseExecAdoptionKey(key));
  auto info = client->InspectExec(tree.exec_id);
  if (!info) {
    if (info.error().code == ErrorCode::kNotFound) {
      return Error(ErrorCode::kNotFound, "the exec is gone");
    }
    return std::move(info).error();
  }
  if (info->container_id.empty() ||
      (info->container_id != tree.container && info->container_id.rfind(tree.container, 0) != 0)) {
    return Error(ErrorCode::kInvalidArgument, "the exec is not in the key's container");
  }
  if (!info->running) return Error(ErrorCode::kNotFound, "the exec has ended");
  return std::unique_ptr<RunningProcess>(std::make_unique<AdoptedExec>(
      std::move(client), std::move(tree), key, info->pid, timeout_ms));
}

}  // namespace sandrun::exec

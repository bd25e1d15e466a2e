#include "sandbox/os/spawner.h"

#include <signal.h>

#include <optional>
#include <utility>

namespace sandrun {

struct Spawner::Request {
  const SpawnOptions* options = nullptr;
  std::optional<Result<Subprocess>> result;
};

Spawner::~Spawner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<Subprocess> Spawner::Spawn(const SpawnOptions& options) {
  Request request;
  request.options = &options;
  std::unique_lock<std::mutex> lock(mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  queue_.push_back(&request);
  work_.notify_one();
  done_.wait(lock, [&] { return request.result.has_value(); });
  return std::move(*request.result);
}

void Spawner::Loop() {
  // Process-directed signals go to the runner's other threads (Subprocess::Spawn blocks them
  // around the clone anyway; the child starts with an empty mask).
  sigset_t all;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nobody waits
    Request* request = queue_.front();
    queue_.pop_front();
    lock.unlock();
    Result<Subprocess> spawned = Subprocess::Spawn(*request->options);
    lock.lock();
    request->result.emplace(std::move(spawned));
    done_.notify_all();
  }
}

}  // namespace sandrun

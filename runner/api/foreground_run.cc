#include "runner/api/foreground_run.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace sandrun::api {

Result<std::unique_ptr<ForegroundRun>> ForegroundRun::Start(exec::Executor& executor,
                                                            const exec::Plan& plan,
                                                            exec::LiveSink sink) {
  SANDRUN_ASSIGN_OR_RETURN(auto process, executor.Start(plan, std::move(sink)));
  return std::unique_ptr<ForegroundRun>(new ForegroundRun(std::move(process)));
}

ForegroundRun::ForegroundRun(std::unique_ptr<exec::RunningProcess> process)
    : process_(std::move(process)) {}

ForegroundRun::~ForegroundRun() {
  if (!waited_) {
    Cancel();
    (void)Wait();
  }
}

Status ForegroundRun::WriteStdin(std::string_view data) { return process_->WriteStdin(data); }
Status ForegroundRun::CloseStdin() { return process_->CloseStdin(); }

bool ForegroundRun::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

void ForegroundRun::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_ || ended_) return;
  cancelled_ = true;
  (void)process_->Kill(SIGTERM);
  killer_ = std::thread([this] {
    std::unique_lock<std::mutex> held(mu_);
    if (!ended_cv_.wait_for(held, kCancelGrace, [this] { return ended_; })) {
      (void)process_->Kill(SIGKILL);
    }
  });
}

exec::ExecOutcome ForegroundRun::Wait() {
  waited_ = true;
  exec::ExecOutcome outcome = process_->Wait();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
  }
  ended_cv_.notify_all();
  if (killer_.joinable()) killer_.join();
  return outcome;
}

Result<exec::ExecOutcome> RunInForeground(exec::Executor& executor, const exec::Plan& plan,
                                          const exec::LiveSink& sink, int stdin_fd,
                                          const CancelToken* cancel) {
  SANDRUN_ASSIGN_OR_RETURN(auto run, ForegroundRun::Start(executor, plan, sink));
  if (stdin_fd < 0) (void)run->CloseStdin();
  std::atomic<bool> done{false};
  // One helper thread: it feeds stdin while there is some and watches for the cancel flag.
  std::thread helper([&] {
    bool feeding = stdin_fd >= 0;
    char buf[65536];
    while (!done.load()) {
      if (cancel != nullptr && cancel->cancelled()) {
        run->Cancel();
        return;  // the grace timer of the run does the rest
      }
      if (!feeding) {
        ::poll(nullptr, 0, 50);
        continue;
      }
      pollfd p{stdin_fd, POLLIN, 0};
      int ready = ::poll(&p, 1, 50);
      if (ready <= 0) continue;
      ssize_t n = ::read(stdin_fd, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0 || !run->WriteStdin(std::string_view(buf, static_cast<size_t>(n)))) {
        (void)run->CloseStdin();  // EOF (or the command stopped reading): it reads EOF too
        feeding = false;
      }
    }
  });
  exec::ExecOutcome outcome = run->Wait();
  done = true;
  helper.join();
  return outcome;
}

}  // namespace sandrun::api

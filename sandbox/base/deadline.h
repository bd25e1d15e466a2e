// Deadlines and cancellation for blocking calls.
//
// Pattern of use:
//   CallOptions opts{Deadline::After(std::chrono::seconds(5)), &token};
//   ... elsewhere: token.Cancel();   // the call returns kCancelled soon after
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace sandrun {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline Never() { return Deadline(Clock::time_point::max()); }
  static Deadline After(std::chrono::milliseconds d) { return Deadline(Clock::now() + d); }
  static Deadline At(Clock::time_point t) { return Deadline(t); }

  bool is_never() const { return at_ == Clock::time_point::max(); }
  bool expired() const { return !is_never() && Clock::now() >= at_; }
  // Milliseconds left (0 when expired, INT64_MAX when never).
  int64_t remaining_ms() const {
    if (is_never()) return INT64_MAX;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    return left > 0 ? left : 0;
  }
  // The earlier of the two.
  Deadline Min(const Deadline& other) const { return at_ < other.at_ ? *this : other; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

// Thread-safe one-way flag: once cancelled, stays cancelled.
class CancelToken {
 public:
  void Cancel() { cancelled_.store(true, std::memory_order_release); }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> cancelled_{false};
};

struct CallOptions {
  Deadline deadline = Deadline::Never();
  const CancelToken* cancel = nullptr;  // optional, not owned

  bool cancelled() const { return cancel != nullptr && cancel->cancelled(); }
};

}  // namespace sandrun

// The bytes of request bodies the server holds at once, across connections (HttpServerLimits::
// max_buffered_bytes), for http_server.cc: a body reserves its share before it is read.
#pragma once

#include <atomic>
#include <cstddef>
#include <utility>

namespace sandrun::api {

// Bytes of request bodies being received, across connections.
class ByteBudget {
 public:
  explicit ByteBudget(size_t max) : max_(max) {}
  bool TryReserve(size_t n) {
    size_t used = used_.load();
    do {
      if (n > max_ || used > max_ - n) return false;
    } while (!used_.compare_exchange_weak(used, used + n));
    return true;
  }
  void Release(size_t n) { used_.fetch_sub(n); }

 private:
  const size_t max_;
  std::atomic<size_t> used_{0};
};

// A share of the budget, given back when the request is done.
class Reservation {
 public:
  Reservation() = default;
  Reservation(ByteBudget* budget, size_t n) : budget_(budget), n_(n) {}
  Reservation(Reservation&& other) noexcept
      : budget_(std::exchange(other.budget_, nullptr)), n_(other.n_) {}
  Reservation& operator=(Reservation&& other) noexcept {
    if (this != &other) {
      if (budget_ != nullptr) budget_->Release(n_);
      budget_ = std::exchange(other.budget_, nullptr);
      n_ = other.n_;
    }
    return *this;
  }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ~Reservation() {
    if (budget_ != nullptr) budget_->Release(n_);
  }

 private:
  ByteBudget* budget_ = nullptr;
  size_t n_ = 0;
};

}  // namespace sandrun::api

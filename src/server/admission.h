// Admission control: at most `capacity` sequences may be in the engine (running or
// waiting) at once; a request that would exceed it is answered 429 instead of queued.
// Capacity = the engine's running-sequence limit + --max-queued-requests.
#pragma once

#include <atomic>
#include <cstdint>

namespace strata::server {

class Admission {
 public:
  explicit Admission(int64_t capacity) : capacity_(capacity) {}

  bool try_acquire(int64_t n) {
    int64_t cur = in_use_.load();
    do {
      if (cur + n > capacity_) return false;
    } while (!in_use_.compare_exchange_weak(cur, cur + n));
    return true;
  }
  void release(int64_t n) { in_use_.fetch_sub(n); }
  int64_t in_use() const { return in_use_.load(); }
  int64_t capacity() const { return capacity_; }

 private:
  const int64_t capacity_;
  std::atomic<int64_t> in_use_{0};
};

}  // namespace strata::server

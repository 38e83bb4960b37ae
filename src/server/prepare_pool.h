// The CPU-heavy part of a request (JSON parsing, chat-template rendering, tokenization)
// runs here, on a small pool of its own threads, never on the HTTP I/O threads: an 8 MB
// prompt or a slow template must not stall /health or the token streams of others.
//
// Bounded: at most `threads` tasks run and `max_queued` wait; try_post refuses beyond
// that (the server answers 429). A task that waited longer than `queue_timeout_s` is run
// with expired = true (the server answers 503 without doing the work); at stop(), the
// tasks still queued are run with expired = true too, so every request is answered.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::server {

struct PreparePoolConfig {
  int threads = 2;
  size_t max_queued = 64;
  double queue_timeout_s = 30;
};

class PreparePool {
 public:
  // task(expired): expired is true when the task must only answer, not work.
  using Task = std::function<void(bool expired)>;

  explicit PreparePool(const PreparePoolConfig& config);
  ~PreparePool();  // stop()
  PreparePool(const PreparePool&) = delete;
  PreparePool& operator=(const PreparePool&) = delete;

  // False when max_queued tasks are already waiting (or the pool has stopped).
  bool try_post(Task task);
  // Tasks queued or running.
  size_t pending() const;
  // Blocks until nothing is queued or running, or `timeout_s` passes; true if idle.
  bool wait_idle(double timeout_s);
  // Runs the queued tasks as expired, waits for the running ones and joins; idempotent.
  void stop();

  const PreparePoolConfig& config() const { return config_; }

 private:
  struct Queued {
    Task task;
    double queued_s;
  };
  void run();

  PreparePoolConfig config_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Queued> queue_;
  size_t running_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace strata::server

#include "server/prepare_pool.h"

#include <chrono>
#include <cstdio>
#include <exception>

#include "core/clock.h"

namespace strata::server {
namespace {

// A task that throws must not end its thread; the task is its request's only answerer,
// so it catches its own errors and this is only the last line.
void run_task(const PreparePool::Task& task, bool expired) {
  try {
    task(expired);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata serve: request preparation failed: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "strata serve: request preparation failed\n");
  }
}

}  // namespace

PreparePool::PreparePool(const PreparePoolConfig& config) : config_(config) {
  const int n = config_.threads < 1 ? 1 : config_.threads;
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
}

PreparePool::~PreparePool() {
  stop();
}

bool PreparePool::try_post(Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_ || queue_.size() >= config_.max_queued) return false;
    queue_.push_back({std::move(task), steady_now_s()});
  }
  wake_.notify_one();
  return true;
}

size_t PreparePool::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + running_;
}

bool PreparePool::wait_idle(double timeout_s) {
  std::unique_lock<std::mutex> lock(mutex_);
  return idle_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                        [&] { return queue_.empty() && running_ == 0; });
}

void PreparePool::run() {
  for (;;) {
    Queued q;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      q = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
      stopping = stop_;
    }
    const bool expired = stopping || steady_now_s() - q.queued_s > config_.queue_timeout_s;
    run_task(q.task, expired);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
    }
    idle_.notify_all();
  }
}

void PreparePool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_ && threads_.empty()) return;
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace strata::server

#include "router/worker_pool.h"

#include <chrono>

#include "core/error.h"

namespace strata::router {

struct WorkerPool::Core {
  size_t max_workers = 0, max_queue = 0;
  mutable std::mutex mutex;
  std::condition_variable wake, done;
  std::deque<std::function<void()>> queue;
  std::vector<std::thread> threads;
  size_t idle = 0, busy = 0;
  uint64_t rejected = 0;
  bool stopping = false;

  // Jobs queued beyond the idle workers that will take them.
  size_t waiting() const { return queue.size() > idle ? queue.size() - idle : 0; }

  static void work(const std::shared_ptr<Core>& c) {
    std::unique_lock<std::mutex> lock(c->mutex);
    for (;;) {  // counted idle from its start (try_submit) and after each job
      c->wake.wait(lock, [&] { return c->stopping || !c->queue.empty(); });
      --c->idle;
      if (c->queue.empty()) return;  // stopping and nothing left
      std::function<void()> job = std::move(c->queue.front());
      c->queue.pop_front();
      ++c->busy;
      lock.unlock();
      job();
      job = nullptr;
      lock.lock();
      --c->busy;
      ++c->idle;
      c->done.notify_all();
    }
  }
};

WorkerPool::WorkerPool(size_t max_workers, size_t max_queue) : core_(std::make_shared<Core>()) {
  if (max_workers == 0) throw Error("--max-connections: must be at least 1");
  core_->max_workers = max_workers;
  core_->max_queue = max_queue;
}

WorkerPool::~WorkerPool() {
  stop();
}

bool WorkerPool::try_submit(std::function<void()> job) {
  Core& c = *core_;
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.stopping) return false;
  const bool must_wait = c.queue.size() + 1 > c.idle;  // no idle worker left for it
  const bool can_grow = c.threads.size() < c.max_workers;
  if (must_wait && !can_grow && c.waiting() >= c.max_queue) {
    ++c.rejected;
    return false;
  }
  c.queue.push_back(std::move(job));
  if (must_wait && can_grow) {
    ++c.idle;  // it takes a job as soon as it runs
    c.threads.emplace_back([core = core_] { Core::work(core); });
  } else {
    c.wake.notify_one();
  }
  return true;
}

void WorkerPool::stop(double timeout_s) {
  Core& c = *core_;
  std::vector<std::thread> threads;
  {
    std::unique_lock<std::mutex> lock(c.mutex);
    c.stopping = true;
    c.wake.notify_all();
    const bool drained = c.done.wait_for(lock, std::chrono::duration<double>(timeout_s),
                                         [&] { return c.queue.empty() && c.busy == 0; });
    threads.swap(c.threads);
    if (!drained) {
      for (std::thread& t : threads) t.detach();  // they hold the core
      return;
    }
  }
  for (std::thread& t : threads) t.join();
}

WorkerPool::Stats WorkerPool::stats() const {
  const Core& c = *core_;
  std::lock_guard<std::mutex> lock(c.mutex);
  return {c.threads.size(), c.busy, c.waiting(), c.rejected};
}

}  // namespace strata::router

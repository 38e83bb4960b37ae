// The router's relay workers: at most `max_workers` threads (started on demand, kept
// until the pool stops) run queued jobs in arrival order; at most `max_queue` jobs wait
// for a worker. try_submit refuses a job when the queue is full, so the caller answers
// 503 instead of growing threads or memory without bound.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::router {

class WorkerPool {
 public:
  WorkerPool(size_t max_workers, size_t max_queue);  // throws strata::Error on 0 workers
  ~WorkerPool();                                     // stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `job`; false (job not taken) when max_queue jobs already wait or the pool
  // has stopped.
  bool try_submit(std::function<void()> job);

  // Refuses new jobs, runs the queued ones, and joins the workers once every job has
  // ended or `timeout_s` has passed (jobs still running then are left to their threads,
  // which are detached). Idempotent.
  void stop(double timeout_s = 30);

  struct Stats {
    size_t workers = 0;  // threads started
    size_t busy = 0;     // running a job
    size_t queued = 0;   // waiting for a worker
    uint64_t rejected = 0;
  };
  Stats stats() const;

 private:
  struct Core;  // shared with the threads, so a detached one never outlives it
  std::shared_ptr<Core> core_;
};

}  // namespace strata::router

// A fixed pool of compute threads. `run(fn)` calls fn(thread_index, n_threads) on every
// thread (the caller is thread 0) and returns when all are done. Workers spin briefly
// after each job, because a decode step issues many small jobs back to back, and then
// sleep on a condition variable so an idle engine costs no CPU.
// run() does not allocate: the job is passed as a type-erased reference.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace strata {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  template <class Fn>
  void run(Fn&& fn) {
    auto trampoline = [](void* ctx, int tid, int n) { (*static_cast<Fn*>(ctx))(tid, n); };
    dispatch(trampoline, &fn);
  }

  // Splits [0, n) into contiguous chunks, one per thread: fn(begin, end).
  template <class Fn>
  void parallel_for(int64_t n, Fn&& fn) {
    run([&](int tid, int nt) {
      const int64_t begin = n * tid / nt;
      const int64_t end = n * (tid + 1) / nt;
      if (begin < end) fn(begin, end);
    });
  }

  // Like parallel_for, but threads take chunks of at least `grain` items from a shared
  // counter: large chunks first (a 1/(2 x threads) share of what is left), smaller ones
  // towards the end, so a thread that runs slower (a busier core, a smaller share of the
  // memory bandwidth) does not leave the others waiting. fn(begin, end) may be called
  // several times on one thread; which thread gets which range varies from run to run.
  template <class Fn>
  void parallel_for_guided(int64_t n, int64_t grain, Fn&& fn) {
    std::atomic<int64_t> next{0};
    const int64_t min_chunk = grain < 1 ? 1 : grain;
    run([&](int, int nt) {
      for (;;) {
        int64_t begin = next.load(std::memory_order_relaxed);
        int64_t take = 0;
        do {
          if (begin >= n) return;
          take = std::max(min_chunk, (n - begin) / (2 * static_cast<int64_t>(nt)));
        } while (!next.compare_exchange_weak(begin, begin + take, std::memory_order_relaxed));
        fn(begin, std::min(n, begin + take));
      }
    });
  }

  // Physical cores of this machine (falls back to hardware_concurrency).
  static int default_threads();

 private:
  using JobFn = void (*)(void*, int, int);
  void dispatch(JobFn fn, void* ctx);
  void worker_loop(int tid);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  JobFn job_fn_ = nullptr;
  void* job_ctx_ = nullptr;
};

}  // namespace strata

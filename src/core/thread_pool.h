// A fixed pool of compute threads. `run(fn)` calls fn(thread_index, n_threads) on every
// thread (the caller is thread 0) and returns when all are done. Workers spin briefly
// after each job, because a decode step issues many small jobs back to back, and then
// sleep on a condition variable so an idle engine costs no CPU.
// run() does not allocate: the job is passed as a type-erased reference.
//
// Waits for a thread that is working (the caller's wait for the workers at the end of a
// job, team_barrier, wait_until_set) spin briefly and then sleep (std::atomic::wait, a
// futex on Linux) until the thread they wait for wakes them: on an oversubscribed
// machine a thread that spins or yields keeps the core the awaited thread needs. The
// releasing side makes the notify call only when a waiter has gone to sleep.
//
// A job that throws on any thread does not take the process down: the first exception is
// kept, threads waiting for the failed one (team_barrier, wait_until_set) give up, and
// run() rethrows it on the caller once every thread has left the job.
#pragma once

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <exception>
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

  // Like parallel_for, but balanced at the end: [0, n) starts as one contiguous range per
  // thread, and each thread works through its own range front to back, `claim` items at a
  // time; a thread whose range is empty takes the back half of the fullest other range's
  // unclaimed part (while that holds two items or more) and goes on with it as its own.
  // Each thread's items stay one long run, split only a few times near the end (decode's
  // weight streams keep the hardware prefetchers going). Claims shrink to a quarter of
  // what is left of the range once fewer than 4 claims are left, down to a quarter claim
  // (at least one item), so threads finish within about that of each other: with whole
  // claims to the end, one thread waited for the other's last claim (a decode matmul's
  // threads ended 0.9 us apart, with 32 KiB claims); with claims down to one item, a
  // prefill matmul's last claims were row panels of 4-16 rows, each passing every token's
  // activations for a few rows (a 64-row floor: pp512 Q8_0 +1.7%). fn(begin, end) may be
  // called several times on one thread; which thread gets which range varies from run to
  // run.
  template <class Fn>
  void parallel_for_stealing(int64_t n, int64_t claim, Fn&& fn) {
    parallel_for_stealing(
        n, claim, [](int, int64_t, int64_t) {}, fn);
  }

  // The same, with start(tid, begin, end) called first on each thread with its initial
  // range (decode matmuls: the caller quantizes the activations while the other threads
  // start their weight streams).
  template <class Start, class Fn>
  void parallel_for_stealing(int64_t n, int64_t claim, Start&& start, Fn&& fn) {
    if (n <= 0) return;
    if (n > INT32_MAX) {  // ranges are packed as two 32-bit ints
      return run([&](int tid, int nt) {
        const int64_t begin = n * tid / nt, end = n * (tid + 1) / nt;
        start(tid, begin, end);
        if (begin < end) fn(begin, end);
      });
    }
    const int64_t step = claim < 1 ? 1 : claim;
    for (int t = 0; t < n_threads_; ++t)
      ranges_[static_cast<size_t>(t)].set(n * t / n_threads_, n * (t + 1) / n_threads_);
    run([&](int tid, int nt) {
      start(tid, n * tid / nt, n * (tid + 1) / nt);
      StealRange& own = ranges_[static_cast<size_t>(tid)];
      int64_t b = 0, e = 0;
      do {
        while (own.claim_front(step, b, e)) fn(b, e);
      } while (steal(tid));
    });
  }
  // For a run() job of several steps (Model::attention_by_head: RoPE and K/V writes by
  // head, then attention), where the threads meet between steps instead of returning to
  // the pool: called from inside a run() job by every thread of the pool, the same
  // number of times. Returns when every thread has reached it; writes made before it on
  // any thread are visible after it on all. Spins, then sleeps (the other thread may be
  // waiting for this core on an oversubscribed machine).
  void team_barrier();

  // Returns once `flag` is set (acquire). Spins, then sleeps, as team_barrier does: for a
  // thread of a job waiting on another's short step (a decode matmul's input), which may
  // have lost its core. Called from inside a run() job. The flag must be set with
  // set_flag() (a plain store does not wake a thread that has gone to sleep).
  void wait_until_set(const std::atomic<bool>& flag);

  // Sets `flag` (release, and seq_cst) and wakes the threads asleep in wait_until_set.
  void set_flag(std::atomic<bool>& flag);

  // Physical cores of this machine (falls back to hardware_concurrency).
  static int default_threads();

 private:
  using JobFn = void (*)(void*, int, int);
  void dispatch(JobFn fn, void* ctx);

  // One thread's share of a parallel_for_stealing: [begin, end) packed in one word, so a
  // claim from the front and a steal from the back cannot both take an item.
  struct alignas(64) StealRange {
    std::atomic<uint64_t> word{0};
    static uint64_t pack(int64_t b, int64_t e) {
      return static_cast<uint64_t>(b) << 32 | static_cast<uint64_t>(e);
    }
    void set(int64_t b, int64_t e) { word.store(pack(b, e), std::memory_order_relaxed); }
    // Takes [b, b + k) off the front, k = step, or a quarter of what is left (at least a
    // quarter step and one item, at most what is left) once that is under 4 steps; false
    // if the range is empty.
    bool claim_front(int64_t step, int64_t& b, int64_t& e) {
      uint64_t w = word.load(std::memory_order_relaxed);
      const int64_t floor = std::max<int64_t>(1, step / 4);
      for (;;) {
        const auto rb = static_cast<int64_t>(w >> 32), re = static_cast<int64_t>(w & 0xffffffffu);
        if (rb >= re) return false;
        const int64_t nb = std::min(re, rb + std::clamp<int64_t>((re - rb) / 4, floor, step));
        if (word.compare_exchange_weak(w, pack(nb, re), std::memory_order_relaxed)) {
          b = rb;
          e = nb;
          return true;
        }
      }
    }
  };
  // Moves the back half of the fullest other range (if it holds two items or more) to
  // thread tid's range; false when no range can be split.
  bool steal(int tid);

  void worker_loop(int tid);
  // Keeps the first exception of the current job and tells waiting threads, asleep or
  // not, to give up.
  void record_failure();
  // Thrown out of a wait whose awaited thread has failed; never escapes run().
  struct Abandoned {};
  void check_not_abandoned() const {
    if (job_failed_.load(std::memory_order_relaxed)) throw Abandoned{};
  }

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};        // workers still in the current job
  std::atomic<int> caller_asleep_{0};  // 1 while the caller sleeps on pending_
  std::atomic<bool> stop_{false};
  JobFn job_fn_ = nullptr;
  void* job_ctx_ = nullptr;
  std::vector<StealRange> ranges_;  // one per thread, for parallel_for_stealing
  std::atomic<bool> job_failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr job_error_;  // the current job's first exception
  // team_barrier(): arrivals at the current barrier, and how many barriers have released
  // (32 bits, the futex word size; only compared for equality, so wrapping is harmless;
  // a failed job bumps it too, to wake its sleepers), with the threads asleep on it.
  alignas(64) std::atomic<int> barrier_arrived_{0};
  alignas(64) std::atomic<uint32_t> barrier_released_{0};
  std::atomic<int> barrier_sleepers_{0};
  // wait_until_set(): a word bumped to wake its sleepers (set_flag, a failure), and them.
  alignas(64) std::atomic<uint32_t> flag_epoch_{0};
  std::atomic<int> flag_sleepers_{0};
};

}  // namespace strata

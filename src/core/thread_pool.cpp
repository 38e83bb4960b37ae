#include "core/thread_pool.h"

#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace strata {

namespace {
// An idle worker's spin before it sleeps on the condition variable (decode's next job
// comes within microseconds).
constexpr int kSpinIterations = 1 << 16;
// The waits for a thread that is working, not idle (team barriers, wait_until_set, the
// caller's wait at the end of a job): a few microseconds unless that thread lost its
// core, and then spinning for long only delays it (1 << 16 spins made 3 threads on 2
// cores take 1.2 ms per barrier); past this the waiter sleeps.
constexpr int kBarrierSpinIterations = 1 << 11;
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins while !done(), then sleeps on `word` until done(). Whoever makes done() true
// must then change `word` and notify it if `sleepers` is not zero (wake_sleepers).
//
// No wake-up is lost: the waiter announces itself (sleepers + 1), then reads `word`, then
// checks done(), then sleeps only while `word` still holds what it read (the futex
// compares in the kernel). The waker makes done() true, then reads `sleepers`, then
// changes `word` (unless making done() true changed it: a barrier's count) and notifies. All of
// these are seq_cst, so they fall in one total order (Dekker's argument; release/acquire alone
// would let each side miss the other's first store): either the waker's read of `sleepers` comes
// after the waiter's increment, and it changes `word` and notifies, which ends the sleep or makes
// it return at once (or the waiter's read of `word` already saw the change, and then done() is
// true, since the change follows done()'s store); or it comes before, and then done()'s store
// precedes the waiter's check, which sees it. done() must read with seq_cst.
template <class Done>
void spin_then_sleep(std::atomic<uint32_t>& word, std::atomic<int>& sleepers, Done done) {
  for (int spins = 0; spins < kBarrierSpinIterations; ++spins) {
    if (done()) return;
    cpu_relax();
  }
  sleepers.fetch_add(1, std::memory_order_seq_cst);
  for (;;) {
    const uint32_t seen = word.load(std::memory_order_seq_cst);
    if (done()) break;
    word.wait(seen, std::memory_order_seq_cst);
  }
  sleepers.fetch_sub(1, std::memory_order_relaxed);
}

// The waker's side, once done() has been made true (seq_cst): see spin_then_sleep.
// `bump` is false where making done() true already changed `word`.
void wake_sleepers(std::atomic<uint32_t>& word, std::atomic<int>& sleepers, bool bump) {
  if (sleepers.load(std::memory_order_seq_cst) == 0) return;
  if (bump) word.fetch_add(1, std::memory_order_seq_cst);
  word.notify_all();
}
}  // namespace

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : n_threads), ranges_(static_cast<size_t>(n_threads_)) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::dispatch(JobFn fn, void* ctx) {
  if (n_threads_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  // The job is published by the release increment of generation_: a spinning worker
  // sees it without touching the mutex. The mutex is only for sleeping workers (so a
  // worker between its last check and its wait cannot miss the increment); a worker
  // that took it on waking used to block on it while this thread still held it, and
  // each decode matmul then started one futex wake-up late on that worker.
  job_fn_ = fn;
  job_ctx_ = ctx;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  try {
    fn(ctx, 0, n_threads_);
  } catch (...) {
    record_failure();
  }
  // Spin briefly, then sleep until the last worker wakes us: on an oversubscribed machine
  // a worker may need our core. (No wake-up is lost, by the argument at spin_then_sleep:
  // caller_asleep_ is this wait's sleeper count, and the last worker's decrement of
  // pending_ both makes the wait's condition true and changes the word.)
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kBarrierSpinIterations) {
      cpu_relax();
      continue;
    }
    caller_asleep_.store(1, std::memory_order_seq_cst);
    for (int left; (left = pending_.load(std::memory_order_seq_cst)) != 0;)
      pending_.wait(left, std::memory_order_seq_cst);
    // A worker that still reads 1 afterwards makes a needless notify call, nothing worse.
    caller_asleep_.store(0, std::memory_order_relaxed);
    break;
  }
  if (job_failed_.load(std::memory_order_acquire)) {
    // Every thread has left the job: a barrier it abandoned may hold stale arrivals.
    barrier_arrived_.store(0, std::memory_order_relaxed);
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      error = std::exchange(job_error_, nullptr);
    }
    job_failed_.store(false, std::memory_order_release);
    std::rethrow_exception(error);
  }
}

void ThreadPool::record_failure() {
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!job_error_) job_error_ = std::current_exception();
  }
  // Waiters that gave up spinning sleep until their word changes: bump both words (a
  // barrier's waiters then see job_failed_ and give up rather than pass). No barrier of
  // this job can release after this thread has left it, and the next job starts only
  // after every thread has left this one, so the extra increment misleads nobody.
  job_failed_.store(true, std::memory_order_seq_cst);
  barrier_released_.fetch_add(1, std::memory_order_seq_cst);
  wake_sleepers(barrier_released_, barrier_sleepers_, false);
  wake_sleepers(flag_epoch_, flag_sleepers_, true);
}

void ThreadPool::worker_loop(int tid) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinIterations) {
      cpu_relax();
      ++spins;
    }
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    // Written before the increment we acquired, and not rewritten before this worker
    // decrements pending_ below (the caller waits for that).
    try {
      job_fn_(job_ctx_, tid, n_threads_);
    } catch (...) {
      record_failure();
    }
    // seq_cst, and the read of caller_asleep_ after it: see dispatch's wait.
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        caller_asleep_.load(std::memory_order_seq_cst) != 0) {
      pending_.notify_all();
    }
  }
}

void ThreadPool::team_barrier() {
  if (n_threads_ == 1) return;
  // Read before arriving: the count cannot move on until this thread has arrived.
  const uint32_t released = barrier_released_.load(std::memory_order_acquire);
  if (barrier_arrived_.fetch_add(1, std::memory_order_acq_rel) == n_threads_ - 1) {
    barrier_arrived_.store(0, std::memory_order_relaxed);
    barrier_released_.fetch_add(1, std::memory_order_seq_cst);
    wake_sleepers(barrier_released_, barrier_sleepers_, false);
    return;
  }
  spin_then_sleep(barrier_released_, barrier_sleepers_, [&] {
    return barrier_released_.load(std::memory_order_seq_cst) != released ||
           job_failed_.load(std::memory_order_relaxed);
  });
  // The count also moves when a thread of the job fails (record_failure).
  check_not_abandoned();
}

void ThreadPool::wait_until_set(const std::atomic<bool>& flag) {
  spin_then_sleep(flag_epoch_, flag_sleepers_, [&] {
    return flag.load(std::memory_order_seq_cst) || job_failed_.load(std::memory_order_seq_cst);
  });
  if (!flag.load(std::memory_order_acquire)) check_not_abandoned();
}

void ThreadPool::set_flag(std::atomic<bool>& flag) {
  flag.store(true, std::memory_order_seq_cst);
  wake_sleepers(flag_epoch_, flag_sleepers_, true);
}

bool ThreadPool::steal(int tid) {
  for (;;) {
    int victim = -1;
    uint64_t seen = 0;
    int64_t most = 1;  // only ranges of two items or more are split
    for (int t = 0; t < n_threads_; ++t) {
      if (t == tid) continue;
      const uint64_t w = ranges_[static_cast<size_t>(t)].word.load(std::memory_order_relaxed);
      const int64_t left = static_cast<int64_t>(w & 0xffffffffu) - static_cast<int64_t>(w >> 32);
      if (left > most) victim = t, seen = w, most = left;
    }
    if (victim < 0) return false;
    const auto b = static_cast<int64_t>(seen >> 32), e = static_cast<int64_t>(seen & 0xffffffffu);
    const int64_t mid = b + (e - b) / 2;
    if (ranges_[static_cast<size_t>(victim)].word.compare_exchange_strong(
            seen, StealRange::pack(b, mid), std::memory_order_relaxed)) {
      ranges_[static_cast<size_t>(tid)].set(mid, e);
      return true;
    }
  }
}

int ThreadPool::default_threads() {
  // Count distinct (physical id, core id) pairs; hyperthreads share a core and add
  // little to memory-bound decode.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, physical = "0";
  while (std::getline(cpuinfo, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "physical id") physical = value;
    if (key == "core id") cores.insert({physical, value});
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

}  // namespace strata

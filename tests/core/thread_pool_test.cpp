// ThreadPool: every job runs on every thread once, parallel_for covers [0, n) in
// contiguous per-thread ranges, and parallel_for_stealing hands out every index exactly
// once whatever the claim, size and thread count; team barriers order the steps of one
// job; waiters that went to sleep are woken, by the awaited thread or by its failure.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace strata {
namespace {

TEST(ThreadPool, RunCallsEveryThreadOnce) {
  for (int n : {1, 2, 3}) {
    ThreadPool pool(n);
    std::vector<std::atomic<int>> calls(static_cast<size_t>(n));
    pool.run([&](int tid, int nt) {
      EXPECT_EQ(nt, n);
      calls[static_cast<size_t>(tid)].fetch_add(1);
    });
    for (auto& c : calls) EXPECT_EQ(c.load(), 1);
  }
}

TEST(ThreadPool, ParallelForCoversTheRangeOnce) {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 2, 7, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, StealingParallelForCoversTheRangeOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 5, 64, 1001, 100000}) {
      for (int64_t claim : {0, 1, 8, 2000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for_stealing(n, claim, [&](int64_t b, int64_t e) {
          ASSERT_LT(b, e);
          ASSERT_LE(e - b, std::max<int64_t>(1, claim)) << "a call larger than the claim";
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        for (auto& h : hits)
          ASSERT_EQ(h.load(), 1) << n << " items, claim " << claim << ", threads " << threads;
      }
    }
  }
}

// The start hook sees each thread's initial range (contiguous, in thread order, covering
// [0, n)) once, before that thread's first claim.
TEST(ThreadPool, StealingStartHookSeesEachInitialRangeFirst) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    const int64_t n = 1000;
    std::vector<int64_t> begins(static_cast<size_t>(threads), -1),
        ends(static_cast<size_t>(threads), -1);
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<int> claims_before_start{0};
    std::mutex m;
    std::map<std::thread::id, int> started;
    pool.parallel_for_stealing(
        n, 16,
        [&](int tid, int64_t b, int64_t e) {
          std::lock_guard<std::mutex> lock(m);
          begins[static_cast<size_t>(tid)] = b;
          ends[static_cast<size_t>(tid)] = e;
          ++started[std::this_thread::get_id()];
        },
        [&](int64_t b, int64_t e) {
          {
            std::lock_guard<std::mutex> lock(m);
            if (started.count(std::this_thread::get_id()) == 0) claims_before_start.fetch_add(1);
          }
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
    EXPECT_EQ(claims_before_start.load(), 0);
    EXPECT_EQ(started.size(), static_cast<size_t>(threads));
    for (const auto& [id, count] : started) EXPECT_EQ(count, 1);
    for (int t = 0; t < threads; ++t) {
      EXPECT_EQ(begins[static_cast<size_t>(t)], n * t / threads);
      EXPECT_EQ(ends[static_cast<size_t>(t)], n * (t + 1) / threads);
    }
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

// Claims keep their size while 4 or more are left in the range, then shrink to a quarter
// of what is left, down to a quarter claim, the last taking what is left (one thread:
// nothing is stolen, so the calls show it); claims of 1-3 items shrink down to one.
TEST(ThreadPool, StealingClaimsShrinkAtTheEndOfARange) {
  ThreadPool pool(1);
  std::vector<int64_t> sizes;
  pool.parallel_for_stealing(1000, 100, [&](int64_t b, int64_t e) { sizes.push_back(e - b); });
  ASSERT_GE(sizes.size(), 8u);
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(sizes[i], 100) << i;  // 1000 .. 400 left
  for (size_t i = 1; i + 1 < sizes.size(); ++i) EXPECT_LE(sizes[i], sizes[i - 1]) << i;
  EXPECT_EQ(sizes[7], 75);  // a quarter of 300
  for (size_t i = 0; i + 1 < sizes.size(); ++i) EXPECT_GE(sizes[i], 25) << i;
  EXPECT_LE(sizes.back(), 25);
  EXPECT_EQ(sizes.back(), 21);  // 225 left: 56, 42, 31, 25, 25, 25, then 21
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  EXPECT_EQ(total, 1000);

  std::vector<int64_t> small;
  pool.parallel_for_stealing(20, 3, [&](int64_t b, int64_t e) { small.push_back(e - b); });
  EXPECT_EQ(small.back(), 1);
}

// A thread that is held up leaves its range to the others: while the thread that claimed
// item 0 is stalled, the other takes all but the last claim of the stalled range.
TEST(ThreadPool, StealingMovesWorkFromAStalledThread) {
  ThreadPool pool(2);
  const int64_t n = 1000, claim = 10;
  std::atomic<int64_t> done_by_other{0};
  pool.parallel_for_stealing(n, claim, [&](int64_t b, int64_t e) {
    if (b == 0) {  // stall until the other thread has done what it can (or 10 s pass)
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (done_by_other.load() < n - 2 * claim && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      return;
    }
    done_by_other.fetch_add(e - b);
  });
  // Everything but item 0's claim, less at most one claim left unsplit in its range.
  EXPECT_GE(done_by_other.load(), n - 2 * claim);
}

// Decode issues thousands of small jobs back to back; each must see its own function and
// context on every thread (the job is published by the generation counter alone).
// (Two threads: with more threads than cores every job waits for a descheduled one.)
TEST(ThreadPool, ManySmallJobsInARowEachRunOncePerThread) {
  constexpr int kThreads = 2, kJobs = 5000;
  ThreadPool pool(kThreads);
  std::vector<int> seen(kThreads * kJobs, 0);
  for (int j = 0; j < kJobs; ++j) {
    pool.run([&, j](int tid, int) { seen[static_cast<size_t>(j * kThreads + tid)] += j + 1; });
  }
  for (int j = 0; j < kJobs; ++j) {
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_EQ(seen[static_cast<size_t>(j * kThreads + t)], j + 1)
          << "job " << j << " thread " << t;
    }
  }
}

// Team barriers order the steps of one job: every thread's writes before a barrier are
// seen by every thread after it, for many barriers in a row.
TEST(ThreadPool, TeamBarrierSeparatesStepsOfOneJob) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    constexpr int kSteps = 2000;
    std::vector<int> slot(static_cast<size_t>(threads), 0);
    std::atomic<int> mismatches{0};
    pool.run([&](int tid, int nt) {
      for (int step = 1; step <= kSteps; ++step) {
        slot[static_cast<size_t>(tid)] = step;  // plain writes: the barrier orders them
        pool.team_barrier();
        for (int t = 0; t < nt; ++t) {
          if (slot[static_cast<size_t>(t)] != step) mismatches.fetch_add(1);
        }
        pool.team_barrier();  // nobody writes the next step's value before all have read
      }
    });
    EXPECT_EQ(mismatches.load(), 0) << threads << " threads";
  }
}

// A job that throws on any thread is rethrown on the caller once every thread has left
// it; threads waiting for the failed one give up instead of hanging; the pool goes on.
TEST(ThreadPool, AThrowOnAWorkerIsRethrownOnTheCaller) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.run([](int tid, int) {
    if (tid == 2) throw std::runtime_error("worker failed");
  }),
               std::runtime_error);
  std::atomic<int> calls{0};
  pool.run([&](int, int) { ++calls; });
  EXPECT_EQ(calls.load(), 3);
}

TEST(ThreadPool, ThreadsWaitingForAFailedOneGiveUp) {
  ThreadPool pool(2);
  // Thread 1 fails before a barrier thread 0 waits at.
  try {
    pool.run([&](int tid, int) {
      if (tid == 1) throw std::logic_error("before the barrier");
      pool.team_barrier();
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "before the barrier");
  }
  // Thread 0 fails before setting the flag thread 1 waits for.
  std::atomic<bool> ready{false};
  EXPECT_THROW(pool.run([&](int tid, int) {
    if (tid == 0) throw std::runtime_error("caller failed");
    pool.wait_until_set(ready);
  }),
               std::runtime_error);
  // Barriers work again afterwards.
  std::atomic<int> after{0};
  pool.run([&](int, int) {
    ++after;
    pool.team_barrier();
    EXPECT_EQ(after.load(), 2);
  });
}

// A thread that waits longer than its short spin goes to sleep (a futex) and is woken by
// the thread it waits for: at a team barrier, in wait_until_set, and the caller at the
// end of a job. Each late thread here sleeps 50 ms first, long past any spin.
TEST(ThreadPool, SleepingWaitersAreWokenByTheLateThread) {
  ThreadPool pool(3);
  const auto late = [] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); };
  std::vector<int> slot(3, 0);
  std::atomic<int> mismatches{0};
  pool.run([&](int tid, int) {
    if (tid == 2) late();
    slot[static_cast<size_t>(tid)] = tid + 1;
    pool.team_barrier();
    for (int t = 0; t < 3; ++t)
      if (slot[static_cast<size_t>(t)] != t + 1) mismatches.fetch_add(1);
  });
  EXPECT_EQ(mismatches.load(), 0);

  int value = 0;
  std::atomic<bool> ready{false};
  pool.run([&](int tid, int) {
    if (tid == 0) {
      late();
      value = 42;  // published by set_flag
      pool.set_flag(ready);
      return;
    }
    pool.wait_until_set(ready);
    if (value != 42) mismatches.fetch_add(1);
  });
  EXPECT_EQ(mismatches.load(), 0);

  int written = 0;
  pool.run([&](int tid, int) {
    if (tid != 1) return;
    late();
    written = 7;  // the caller, asleep by now, sees it once run() returns
  });
  EXPECT_EQ(written, 7);
}

// More threads than cores (the development machine has 2): every barrier and every job
// waits for descheduled threads, which must sleep rather than keep the cores the others
// need. Thousands of barriers, dispatches and flag hand-offs finish well within the bound
// and compute the right sums.
TEST(ThreadPool, MoreThreadsThanCoresFinishBarriersAndJobs) {
  constexpr int kThreads = 8, kJobs = 300, kSteps = 10;
  ThreadPool pool(kThreads);
  std::vector<int64_t> slot(kThreads, 0);
  std::atomic<int> mismatches{0};
  int64_t total = 0, expected = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int j = 0; j < kJobs; ++j) {
    int64_t base = 0;
    std::atomic<bool> ready{false};
    std::vector<int64_t> sums(kThreads, 0);
    pool.run([&](int tid, int nt) {
      if (tid == 0) {
        base = int64_t{j} * 1000;
        pool.set_flag(ready);
      } else {
        pool.wait_until_set(ready);
      }
      for (int step = 0; step < kSteps; ++step) {
        slot[static_cast<size_t>(tid)] = base + step * nt + tid;
        pool.team_barrier();
        int64_t sum = 0;
        for (int t = 0; t < nt; ++t) sum += slot[static_cast<size_t>(t)];
        if (sum != nt * (base + step * nt) + nt * (nt - 1) / 2) mismatches.fetch_add(1);
        sums[static_cast<size_t>(tid)] += sum;
        pool.team_barrier();
      }
    });
    for (int t = 0; t < kThreads; ++t) total += sums[static_cast<size_t>(t)];
    for (int step = 0; step < kSteps; ++step)
      expected += kThreads * (kThreads * (int64_t{j} * 1000 + step * kThreads) +
                              kThreads * (kThreads - 1) / 2);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(total, expected);
  EXPECT_LT(seconds, 60.0) << kJobs * kSteps * 2 << " barriers and " << kJobs << " jobs";
}

// A failed thread releases the threads that have gone to sleep waiting for it: it throws
// only after 50 ms, long past their spin.
TEST(ThreadPool, AFailedThreadWakesSleepingWaiters) {
  ThreadPool pool(3);
  const auto late = [] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); };
  const auto start = std::chrono::steady_clock::now();
  try {
    pool.run([&](int tid, int) {
      if (tid == 2) {
        late();
        throw std::logic_error("late, at the barrier");
      }
      pool.team_barrier();
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "late, at the barrier");
  }
  std::atomic<bool> ready{false};
  try {
    pool.run([&](int tid, int) {
      if (tid == 0) {
        late();
        throw std::runtime_error("late, before the flag");
      }
      pool.wait_until_set(ready);
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "late, before the flag");
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
  // The pool goes on: barriers and flags work again.
  std::atomic<int> after{0};
  std::atomic<bool> again{false};
  pool.run([&](int tid, int) {
    ++after;
    pool.team_barrier();
    EXPECT_EQ(after.load(), 3);
    if (tid == 1) pool.set_flag(again);
    pool.wait_until_set(again);
  });
}

}  // namespace
}  // namespace strata

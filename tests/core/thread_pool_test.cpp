// ThreadPool: every job runs on every thread once, parallel_for covers [0, n) in
// contiguous per-thread ranges, and parallel_for_guided hands out every index exactly
// once whatever the grain, size and thread count.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

TEST(ThreadPool, GuidedParallelForCoversTheRangeOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 5, 64, 1001}) {
      for (int64_t grain : {0, 1, 8, 2000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int64_t> chunks{0};
        pool.parallel_for_guided(n, grain, [&](int64_t b, int64_t e) {
          EXPECT_LT(b, e);
          EXPECT_TRUE(e - b >= grain || e == n) << "a chunk smaller than the grain before the end";
          chunks.fetch_add(1);
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        for (auto& h : hits) EXPECT_EQ(h.load(), 1) << n << " items, grain " << grain;
        if (n > 0) {
          EXPECT_GE(chunks.load(), 1);
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata

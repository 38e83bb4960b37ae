// run_in_thread_ranges: the ranges cover [0, n) once, start on multiples of align, hold at
// least min_range items (but the last), and there are never more than the machine's threads.
#include "core/thread_ranges.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace strata {
namespace {

TEST(ThreadRanges, CoverEveryItemOnceInAlignedRanges) {
  const int64_t hw = std::max(1u, std::thread::hardware_concurrency());
  for (const int64_t n : {0, 1, 7, 4096, 5000, 1 << 20}) {
    for (const int64_t min_range : {1, 100, 4096, 1 << 22}) {
      for (const int64_t align : {1, 64, 4096}) {
        std::mutex mutex;
        std::vector<std::pair<int64_t, int64_t>> ranges;
        run_in_thread_ranges(n, min_range, align, [&](int64_t begin, int64_t end) {
          const std::lock_guard<std::mutex> lock(mutex);
          ranges.emplace_back(begin, end);
        });
        std::sort(ranges.begin(), ranges.end());
        ASSERT_FALSE(ranges.empty());
        EXPECT_LE(static_cast<int64_t>(ranges.size()), hw);
        int64_t next = 0;
        for (size_t i = 0; i < ranges.size(); ++i) {
          const auto [begin, end] = ranges[i];
          EXPECT_EQ(begin, next) << n << " " << min_range << " " << align;
          EXPECT_EQ(begin % align, 0);
          EXPECT_LE(begin, end);
          if (i + 1 < ranges.size()) {
            EXPECT_GE(end - begin, std::min(n, min_range));
          }
          next = end;
        }
        EXPECT_EQ(next, n) << n << " " << min_range << " " << align;
      }
    }
  }
}

}  // namespace
}  // namespace strata

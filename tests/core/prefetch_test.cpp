// The page kick's arithmetic: which page starts a block loop prefetches, and that each
// page of a stream is kicked exactly once, kPageLeadBytes before the loop reaches it.
#include "core/prefetch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace strata {
namespace {

std::vector<uintptr_t> pages_in(uintptr_t lo, uintptr_t hi) {
  std::vector<uintptr_t> out;
  for_each_page_start(lo, hi, [&](uintptr_t page) { out.push_back(page); });
  return out;
}

TEST(PageKick, PageStartsInAHalfOpenRange) {
  EXPECT_TRUE(pages_in(100, 4095).empty());
  EXPECT_EQ(pages_in(100, 4096), (std::vector<uintptr_t>{4096}));
  EXPECT_TRUE(pages_in(4096, 4100).empty());  // the range's own start is excluded
  EXPECT_EQ(pages_in(4095, 12288), (std::vector<uintptr_t>{12288, 8192, 4096}));
}

// Walking a stream in blocks of any size, the kicks (the pages prefetch_page_ahead
// prefetches) cover every page after the first lead once, each issued while the loop is
// between kPageLeadBytes and kPageLeadBytes + block before the page.
TEST(PageKick, EveryPageOfAStreamOnceAtTheLead) {
  for (uintptr_t block :
       {uintptr_t{18}, uintptr_t{210}, uintptr_t{288}, uintptr_t{544}, uintptr_t{5984}}) {
    const uintptr_t base = 0x10000 + 3 * block;  // not page-aligned
    const uintptr_t end = base + 64 * kPageBytes;
    std::vector<uintptr_t> kicked;
    for (uintptr_t p = base; p < end; p += block) {
      for_each_page_ahead(reinterpret_cast<const void*>(p), block, [&](uintptr_t page) {
        EXPECT_GE(page - p, kPageLeadBytes) << block;
        EXPECT_LE(page - p, kPageLeadBytes + block) << block;
        kicked.push_back(page);
      });
    }
    ASSERT_FALSE(kicked.empty());
    std::sort(kicked.begin(), kicked.end());
    const uintptr_t first = (base + kPageLeadBytes + kPageBytes) & ~(kPageBytes - 1);
    for (size_t i = 0; i < kicked.size(); ++i)
      EXPECT_EQ(kicked[i], first + i * kPageBytes) << block;
    EXPECT_GE(kicked.back() + kPageBytes, end) << block;  // up to the stream's end
  }
}

}  // namespace
}  // namespace strata

// HugePageBuffer: zero-filled, writable, page-aligned, movable; empty when sized 0.
// HugePageVector: 2 MiB-aligned from 1 MiB on, keeps its elements as it grows.
// populate: backs exactly the pages asked for, keeps what they hold, refuses ranges outside.
#include "core/huge_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.h"
#include "support/resident.h"

namespace strata {
namespace {

using testing::page_resident;

TEST(HugePageBuffer, IsZeroFilledAlignedAndWritable) {
  const size_t n = (size_t{3} << 20) + 123;  // not a whole number of huge pages
  HugePageBuffer b(n);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), n);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 4096, 0u);
  for (size_t i = 0; i < n; i += 4093) EXPECT_EQ(b.data()[i], 0) << i;
  EXPECT_EQ(b.data()[n - 1], 0);
  b.data()[0] = 1;
  b.data()[n - 1] = 2;
  HugePageBuffer moved(std::move(b));
  EXPECT_EQ(b.data(),
            nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(moved.data()[0], 1);
  EXPECT_EQ(moved.data()[n - 1], 2);
  HugePageBuffer assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.size(), n);
  EXPECT_EQ(assigned.data()[n - 1], 2);
}

TEST(HugePageBuffer, ZeroBytesIsEmpty) {
  HugePageBuffer b(0);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.size(), 0u);
}

TEST(HugePageBuffer, PopulateBacksTheRangeAndKeepsItsBytes) {
  // Huge pages would back a whole 2 MiB around any touched byte, so this checks pages 16 MiB
  // apart: the populated ones are resident, one never touched is not (when THP is off or
  // not granted, every page is 4 KiB and the same holds).
  const size_t mib = size_t{1} << 20;
  HugePageBuffer b(64 * mib);
  b.data()[40 * mib] = 7;
  b.populate(8 * mib + 100, 3 * mib);
  b.populate(40 * mib, 1);
  EXPECT_TRUE(page_resident(b.data() + 8 * mib + 100));
  EXPECT_TRUE(page_resident(b.data() + 11 * mib));
  EXPECT_TRUE(page_resident(b.data() + 40 * mib));
  EXPECT_FALSE(page_resident(b.data() + 56 * mib));
  EXPECT_EQ(b.data()[40 * mib], 7);
  EXPECT_EQ(b.data()[8 * mib + 100], 0);
  b.populate(0, 0);
  b.populate(64 * mib, 0);
  EXPECT_THROW(b.populate(64 * mib, 1), Error);
  EXPECT_THROW(b.populate(1, SIZE_MAX), Error);
}

TEST(HugePageVector, LargeBuffersStartOnAHugePageAndKeepTheirElementsAsTheyGrow) {
  HugePageVector<float> v(100, 1.5f);  // 400 bytes: operator new
  EXPECT_EQ(v[99], 1.5f);
  for (const size_t n : {(size_t{1} << 18) + 7, (size_t{3} << 20) + 1}) {  // 1 MiB+, 12 MiB+
    v.resize(n, 2.5f);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % (size_t{2} << 20), 0u) << n;
    EXPECT_EQ(v[0], 1.5f);
    EXPECT_EQ(v[99], 1.5f);
    EXPECT_EQ(v[100], 2.5f);
    EXPECT_EQ(v[n - 1], 2.5f);
  }
  HugePageVector<float> copy = v;
  EXPECT_EQ(copy, v);
  v.clear();
  v.shrink_to_fit();  // frees (unmaps) the large buffer
  EXPECT_EQ(v.capacity(), 0u);
}

}  // namespace
}  // namespace strata

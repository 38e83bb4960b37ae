// HugePageBuffer: zero-filled, writable, page-aligned, movable; empty when sized 0.
// HugePageVector: 2 MiB-aligned from 1 MiB on, keeps its elements as it grows.
#include "core/huge_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace strata {
namespace {

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

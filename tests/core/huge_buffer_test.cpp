// HugePageBuffer: zero-filled, writable, page-aligned, movable; empty when sized 0.
#include "core/huge_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

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

}  // namespace
}  // namespace strata

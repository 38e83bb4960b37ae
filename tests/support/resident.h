// Whether memory is backed yet: for tests of pre-faulting (HugePageBuffer::populate,
// KvCache::populate).
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>

namespace strata::testing {

// Whether the 4 KiB page holding p is backed by memory (mincore).
inline bool page_resident(const void* p) {
  const auto page = reinterpret_cast<uintptr_t>(p) / 4096 * 4096;
  unsigned char in_core = 0;
  EXPECT_EQ(::mincore(reinterpret_cast<void*>(page), 4096, &in_core), 0);
  return (in_core & 1) != 0;
}

}  // namespace strata::testing

#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "kv/kv_cache.h"

namespace strata {
namespace {

TEST(BlockPool, HandsOutLowestIdsFirstAndRecyclesLastFreed) {
  BlockPool pool(4);
  EXPECT_EQ(*pool.allocate(), 0);
  EXPECT_EQ(*pool.allocate(), 1);
  EXPECT_EQ(*pool.allocate(), 2);
  pool.release(1);
  EXPECT_EQ(*pool.allocate(), 1);
  EXPECT_EQ(*pool.allocate(), 3);
  EXPECT_FALSE(pool.allocate().has_value());
  EXPECT_EQ(pool.n_free(), 0);
}

TEST(BlockPool, SharedBlockFreedOnlyWhenLastHolderReleases) {
  BlockPool pool(2);
  const int32_t b = *pool.allocate();
  pool.retain(b);
  EXPECT_EQ(pool.ref_count(b), 2);
  pool.release(b);
  EXPECT_EQ(pool.n_free(), 1);
  pool.release(b);
  EXPECT_EQ(pool.n_free(), 2);
}

TEST(BlockPool, MisuseThrows) {
  BlockPool pool(2);
  EXPECT_THROW(pool.release(0), Error);
  EXPECT_THROW(pool.retain(1), Error);
  EXPECT_THROW(pool.release(7), Error);
  EXPECT_THROW(BlockPool(0), Error);
}

TEST(KvCache, SizesAndRejectsBadConfig) {
  KvCache c({2, 4, 8, 16, 10, DType::F16, {}, 0});
  EXPECT_EQ(c.bytes_per_token(), 2u * 2 * 4 * 8 * 2);
  EXPECT_EQ(c.total_bytes(), 2u * 2 * 10 * 4 * 16 * 8 * 2);
  EXPECT_THROW(KvCache({2, 4, 8, 16, 10, DType::Q8_0, {}, 0}), Error);
  EXPECT_THROW(KvCache({0, 4, 8, 16, 10, DType::F32, {}, 0}), Error);
}

}  // namespace
}  // namespace strata

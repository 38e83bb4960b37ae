// KvCache::populate: backs the first blocks of every (layer, head) region, in the K and V
// pools, and no block far past them; the tiles still read as zero.
#include <gtest/gtest.h>

#include <cstdint>

#include "kv/kv_cache.h"
#include "support/resident.h"

namespace strata {
namespace {

using testing::page_resident;

TEST(KvCachePopulate, BacksTheFirstBlocksOfEveryLayerAndHead) {
  KvCacheConfig c;
  c.n_layers = 3;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.block_size = 16;
  c.n_blocks = 4096;  // 8 MiB per (layer, head) region in f32: regions on separate huge pages
  c.dtype = DType::F32;
  KvCache cache(c);
  cache.populate(3);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    for (int64_t h = 0; h < c.n_kv_heads; ++h) {
      for (int64_t b : {0, 2}) {
        EXPECT_TRUE(page_resident(cache.k_tile(l, b, h))) << l << " " << h << " " << b;
        EXPECT_TRUE(page_resident(cache.v_tile(l, b, h))) << l << " " << h << " " << b;
        EXPECT_EQ(cache.k_tile(l, b, h)[0], 0);
      }
      // 3 MiB past the region's start: beyond any huge page the first blocks share.
      EXPECT_FALSE(page_resident(cache.k_tile(l, 3 * 256, h))) << l << " " << h;
    }
  }
  cache.populate(-1);  // the whole pool
  EXPECT_TRUE(page_resident(cache.k_tile(2, 4095, 1)));
  EXPECT_TRUE(page_resident(cache.v_tile(1, 3000, 0)));
}

}  // namespace
}  // namespace strata

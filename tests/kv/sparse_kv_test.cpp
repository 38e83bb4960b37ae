// Sparse attention's KV bookkeeping: the KV manager's stream pool (bounded per sequence,
// released as blocks leave the window, prefix hits that need the sinks and the last
// window cached).
#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"
#include "kv/kv_manager.h"

namespace strata {
namespace {

// Block size 4, sink 4 (one block), window 8.
KvManager sparse_manager(int32_t blocks, int32_t stream_blocks, bool cache) {
  return KvManager({blocks, 4, cache, 7, stream_blocks, 4, 8});
}

std::vector<int32_t> iota_tokens(int n, int first = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(SparseKv, StreamBlocksStayBoundedWhileDecoding) {
  KvManager kv = sparse_manager(64, 8, false);
  SequenceKv seq;
  const std::vector<int32_t> tokens = iota_tokens(200);
  for (int64_t n = 1; n <= 200; ++n) {
    ASSERT_TRUE(kv.allocate(seq, n)) << n;
    kv.commit(seq, std::span<const int32_t>(tokens.data(), static_cast<size_t>(n)));
    // Held: the sink block plus the blocks covering positions (n - 8, n].
    int held = 0;
    for (int32_t b : seq.stream_table()) held += b >= 0;
    ASSERT_LE(held, 1 + 3) << n;
    // Every block the next query reads is held.
    const int64_t first = std::max<int64_t>(0, n + 1 - 8) / 4;
    for (int64_t bi = first; bi < static_cast<int64_t>(seq.stream_table().size()); ++bi) {
      ASSERT_GE(seq.stream_table()[static_cast<size_t>(bi)], 0) << n;
    }
    ASSERT_GE(seq.stream_table()[0], 0);
  }
  EXPECT_EQ(kv.usage().used, 50);  // full heads: every block
  EXPECT_LE(kv.stream_usage().used, 4);
  kv.free(seq);
  EXPECT_EQ(kv.usage().used, 0);
  EXPECT_EQ(kv.stream_usage().used, 0);
  EXPECT_EQ(kv.stream_usage().free, 8);
}

TEST(SparseKv, AllocationFailsWhenEitherPoolRunsOut) {
  KvManager kv = sparse_manager(64, 3, false);
  SequenceKv seq;
  EXPECT_FALSE(kv.allocate(seq, 16));  // a 16-token chunk needs 4 stream blocks at once
  EXPECT_TRUE(seq.block_table().empty());
  EXPECT_TRUE(seq.stream_table().empty());
  EXPECT_TRUE(kv.allocate(seq, 12));
  EXPECT_EQ(kv.usage().used, 3);
}

TEST(SparseKv, PrefixHitNeedsSinksAndWindowCached) {
  KvManager kv = sparse_manager(64, 32, true);
  const std::vector<int32_t> tokens = iota_tokens(41);
  SequenceKv a;
  ASSERT_TRUE(kv.allocate(a, 41));
  kv.commit(a, tokens);
  kv.free(a);  // every full block of both pools stays cached
  SequenceKv b;
  EXPECT_EQ(kv.match_prefix(b, tokens), 40);
  // Holds the sink block and the window blocks of position 40: keys >= 33, blocks 8, 9.
  EXPECT_GE(b.stream_table()[0], 0);
  EXPECT_EQ(b.stream_table()[1], -1);
  EXPECT_GE(b.stream_table()[8], 0);
  EXPECT_GE(b.stream_table()[9], 0);
  kv.free(b);

  // Evict the cached stream blocks of the window: the hit shrinks to where a window is cached.
  KvManager kv2 = sparse_manager(64, 32, true);
  SequenceKv c;
  ASSERT_TRUE(kv2.allocate(c, 41));
  // Decoding to 41 released blocks 1..7 into the cache as they left the window.
  for (int n = 1; n <= 41; ++n)
    kv2.commit(c, std::span<const int32_t>(tokens.data(), static_cast<size_t>(n)));
  EXPECT_EQ(kv2.stream_usage().cached, 7);
  kv2.free(c);
  SequenceKv d;
  EXPECT_EQ(kv2.match_prefix(d, tokens), 40);
  kv2.free(d);
  kv2.clear_cache();
  SequenceKv e;
  EXPECT_EQ(kv2.match_prefix(e, tokens), 0);
}

TEST(SparseKv, DenseManagerHasNoStreamPool) {
  KvManager kv({16, 4, true, 7});
  SequenceKv seq;
  ASSERT_TRUE(kv.allocate(seq, 30));
  EXPECT_TRUE(seq.stream_table().empty());
  EXPECT_FALSE(kv.sparse());
}

}  // namespace
}  // namespace strata

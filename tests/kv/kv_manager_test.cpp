// Model-free tests of block allocation and prefix caching: exact block ids, hit lengths
// and eviction order.
#include "kv/kv_manager.h"

#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"

namespace strata {
namespace {

std::vector<int32_t> iota_tokens(int32_t n, int32_t start = 100) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

KvManager make(int32_t blocks, bool cache = true) {
  return KvManager({blocks, 4, cache, 42});
}

TEST(KvManager, AllocatesLowestIdsAndFailsWithoutPartialAllocation) {
  auto kv = make(4);
  SequenceKv a, b;
  ASSERT_TRUE(kv.allocate(a, 6));  // 2 blocks
  EXPECT_EQ(a.block_table(), (std::vector<int32_t>{0, 1}));
  ASSERT_TRUE(kv.allocate(a, 8));  // still 2 blocks
  EXPECT_EQ(a.block_table().size(), 2u);
  EXPECT_FALSE(kv.allocate(b, 12));  // needs 3, only 2 left
  EXPECT_TRUE(b.block_table().empty());
  ASSERT_TRUE(kv.allocate(b, 5));
  EXPECT_EQ(b.block_table(), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(kv.usage().used, 4);
  kv.free(a);
  kv.free(b);
  EXPECT_EQ(kv.usage().free, 4);
}

TEST(KvManager, TruncateFreesTheTailOfARejectedDraft) {
  auto kv = make(8);
  const auto tokens = iota_tokens(6);
  SequenceKv a;
  ASSERT_TRUE(kv.allocate(a, 5));
  kv.commit(a, std::span<const int32_t>(tokens.data(), 4));  // block 0 registered
  ASSERT_TRUE(kv.allocate(a, 5 + 8));                        // room for an 8-token draft
  EXPECT_EQ(a.block_table(), (std::vector<int32_t>{0, 1, 2, 3}));
  kv.truncate(a, 6);  // 1 of the draft accepted: positions 0..5 stay
  EXPECT_EQ(a.block_table(), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(kv.usage().used, 2);
  EXPECT_EQ(kv.usage().free, 6);  // the rejected blocks were never registered
  kv.truncate(a, 6);              // idempotent
  EXPECT_EQ(a.block_table().size(), 2u);
  EXPECT_THROW(kv.truncate(a, 0), Error);  // below a registered block
  kv.free(a);
  EXPECT_EQ(kv.usage().free + kv.usage().cached, 8);
}

TEST(KvManager, PrefixHitReusesFullBlocksButNeverTheLastToken) {
  auto kv = make(8);
  const auto tokens = iota_tokens(10);  // blocks [0..3] [4..7] and a partial [8..9]
  SequenceKv a;
  EXPECT_EQ(kv.match_prefix(a, tokens), 0);
  ASSERT_TRUE(kv.allocate(a, 10));
  kv.commit(a, tokens);
  EXPECT_EQ(a.block_keys.size(), 2u);

  SequenceKv b;
  EXPECT_EQ(kv.match_prefix(b, tokens), 8);
  EXPECT_EQ(b.block_table(), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(kv.ref_count(0), 2);

  // A prompt of exactly 8 tokens may reuse only the first block: its last token must run.
  SequenceKv c;
  EXPECT_EQ(kv.match_prefix(c, std::span<const int32_t>(tokens.data(), 8)), 4);
  EXPECT_EQ(kv.prefix_hits(), 12);
  EXPECT_EQ(kv.prefix_queries(), 10 + 10 + 8);
  kv.free(a);
  kv.free(b);
  kv.free(c);
}

TEST(KvManager, DifferentPrefixDiverges) {
  auto kv = make(8);
  auto t1 = iota_tokens(12);
  SequenceKv a;
  ASSERT_TRUE(kv.allocate(a, 12));
  kv.commit(a, t1);
  auto t2 = t1;
  t2[5] = 999;  // second block differs: only the first is shared
  SequenceKv b;
  EXPECT_EQ(kv.match_prefix(b, t2), 4);
  t2[0] = 998;  // first block differs: chained keys make every later block differ too
  SequenceKv c;
  EXPECT_EQ(kv.match_prefix(c, t2), 0);
  kv.free(a);
  kv.free(b);
}

TEST(KvManager, FreedCachedBlocksAreEvictedLruTailFirst) {
  auto kv = make(4);
  const auto tokens = iota_tokens(13);  // 3 full blocks + 1 token
  SequenceKv a;
  ASSERT_TRUE(kv.allocate(a, 13));
  EXPECT_EQ(a.block_table(), (std::vector<int32_t>{0, 1, 2, 3}));
  kv.commit(a, tokens);
  kv.free(a);
  // Blocks 0..2 are cached, block 3 (partial) is free.
  EXPECT_EQ(kv.usage().cached, 3);
  EXPECT_EQ(kv.usage().free, 1);
  EXPECT_EQ(kv.n_available(), 4);

  // New unrelated sequence of 3 blocks: takes the free block 3, then evicts the cached
  // tail first (block 2, then 1), keeping the head of the prefix longest.
  SequenceKv b;
  ASSERT_TRUE(kv.allocate(b, 12));
  EXPECT_EQ(b.block_table(), (std::vector<int32_t>{3, 2, 1}));
  EXPECT_EQ(kv.evictions(), 2);
  SequenceKv c;
  EXPECT_EQ(kv.match_prefix(c, tokens), 4);  // block 0 survived
  EXPECT_EQ(c.block_table(), (std::vector<int32_t>{0}));
  kv.free(b);
  kv.free(c);
  kv.clear_cache();
  EXPECT_EQ(kv.usage().free, 4);
}

TEST(KvManager, HitOnCachedBlockRemovesItFromLru) {
  auto kv = make(3);
  const auto tokens = iota_tokens(9);
  SequenceKv a;
  ASSERT_TRUE(kv.allocate(a, 9));
  kv.commit(a, tokens);
  kv.free(a);
  SequenceKv b;
  EXPECT_EQ(kv.match_prefix(b, tokens), 8);
  EXPECT_EQ(kv.usage().used, 2);
  EXPECT_EQ(kv.n_available(), 1);  // the two hit blocks are pinned, not evictable
  kv.free(b);
}

TEST(KvManager, SaltIsolatesAndSameSaltShares) {
  auto kv = make(8);
  const auto tokens = iota_tokens(9);
  SequenceKv a;
  a.salt = "tenant-a";
  ASSERT_TRUE(kv.allocate(a, 9));
  kv.commit(a, tokens);
  SequenceKv b;
  b.salt = "tenant-b";
  EXPECT_EQ(kv.match_prefix(b, tokens), 0);
  SequenceKv c;
  EXPECT_EQ(kv.match_prefix(c, tokens), 0);  // no salt is a different salt too
  SequenceKv d;
  d.salt = "tenant-a";
  EXPECT_EQ(kv.match_prefix(d, tokens), 8);
  kv.free(a);
  kv.free(d);
}

TEST(KvManager, DisabledCacheNeverHits) {
  auto kv = make(8, false);
  const auto tokens = iota_tokens(9);
  SequenceKv a;
  ASSERT_TRUE(kv.allocate(a, 9));
  kv.commit(a, tokens);
  kv.free(a);
  EXPECT_EQ(kv.usage().free, 8);
  SequenceKv b;
  EXPECT_EQ(kv.match_prefix(b, tokens), 0);
}

TEST(KvManager, KeysChainParentSaltAndModel) {
  const auto t = iota_tokens(4);
  const auto k1 = chain_block_key(std::nullopt, t, "", 1);
  EXPECT_EQ(k1, chain_block_key(std::nullopt, t, "", 1));
  EXPECT_NE(k1, chain_block_key(std::nullopt, t, "", 2));
  EXPECT_NE(k1, chain_block_key(std::nullopt, t, "x", 1));
  EXPECT_NE(chain_block_key(k1, t, "", 1), k1);
}

TEST(KvManager, DoubleFreeThrows) {
  auto kv = make(2);
  SequenceKv a;
  ASSERT_TRUE(kv.allocate(a, 4));
  SequenceKv copy = a;
  kv.free(a);
  EXPECT_THROW(kv.free(copy), Error);
}

}  // namespace
}  // namespace strata

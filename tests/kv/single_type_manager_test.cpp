// Model-free tests of each attention type's KV manager on its own: exact block ids,
// which blocks it releases as a sequence grows, and which prefixes it can serve.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/error.h"
#include "kv/full_attention_manager.h"
#include "kv/streaming_manager.h"

namespace strata {
namespace {

std::vector<int32_t> iota_tokens(int n, int first = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Chained keys of the full blocks of `tokens` (block size 4).
std::vector<BlockKey> keys_of(const std::vector<int32_t>& tokens) {
  std::vector<BlockKey> keys;
  for (size_t i = 0; i + 4 <= tokens.size(); i += 4) {
    keys.push_back(
        chain_block_key(keys.empty() ? std::nullopt : std::optional<BlockKey>(keys.back()),
                        std::span<const int32_t>(tokens).subspan(i, 4), "", 1));
  }
  return keys;
}

TEST(BlockPool, CachedBlocksAreRevivedOrEvictedLeastRecentFirst) {
  BlockPool pool(3);
  const auto t = iota_tokens(8);
  const auto keys = keys_of(t);
  const int32_t a = *pool.allocate(), b = *pool.allocate();
  pool.register_block(a, keys[0], std::span<const int32_t>(t).subspan(0, 4));
  pool.register_block(b, keys[1], std::span<const int32_t>(t).subspan(4, 4));
  pool.release(b);  // cached first, so evicted first
  pool.release(a);
  EXPECT_EQ(pool.usage().cached, 2);
  EXPECT_EQ(pool.n_free(), 1);
  EXPECT_EQ(pool.n_available(), 3);
  EXPECT_EQ(pool.find(keys[0], std::span<const int32_t>(t).subspan(0, 4)), a);
  EXPECT_EQ(pool.find(keys[0], std::span<const int32_t>(t).subspan(4, 4)),
            -1);                   // same key, other tokens
  EXPECT_EQ(*pool.allocate(), 2);  // the empty block before any cached one
  EXPECT_EQ(*pool.allocate(), b);  // then the least recently cached
  EXPECT_EQ(pool.evictions(), 1);
  EXPECT_EQ(pool.find(keys[1], std::span<const int32_t>(t).subspan(4, 4)), -1);
  pool.retain(a);  // a prefix hit revives the cached block
  EXPECT_EQ(pool.ref_count(a), 1);
  EXPECT_FALSE(pool.allocate().has_value());
}

TEST(FullAttentionManager, HoldsEveryBlockAndHitsTheLongestCachedRun) {
  FullAttentionManager m(8, 4);
  const auto t = iota_tokens(14);
  const auto keys = keys_of(t);  // 3 full blocks
  BlockTable a;
  ASSERT_EQ(m.blocks_needed(a, 14), 4);
  m.allocate(a, 14);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{0, 1, 2, 3}));
  m.release_unneeded(a, 14);  // full attention never releases early
  EXPECT_EQ(a.ids, (std::vector<int32_t>{0, 1, 2, 3}));
  m.register_full(a, std::span<const BlockKey>(keys).first(2), t);
  EXPECT_EQ(a.n_registered, 2u);
  EXPECT_EQ(m.find_hit(keys, t, 3), 2u);  // block 2 is not registered yet
  m.register_full(a, keys, t);
  EXPECT_EQ(m.find_hit(keys, t, 3), 3u);
  EXPECT_EQ(m.find_hit(keys, t, 1), 1u);  // never more than asked
  BlockTable b;
  m.take_hit(b, keys, t, 2);
  EXPECT_EQ(b.ids, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(m.pool().ref_count(0), 2);
  m.free(a);
  EXPECT_TRUE(a.ids.empty());
  EXPECT_EQ(m.pool().usage().used, 2);    // b's blocks
  EXPECT_EQ(m.pool().usage().cached, 1);  // block 2 keeps its content
  EXPECT_EQ(m.pool().usage().free, 5);    // block 3 was partial: freed, not cached
  m.free(b);
}

TEST(StreamingManager, ReleasesBlocksAsTheyLeaveTheWindowButKeepsSinks) {
  StreamingManager m(16, 4, /*sink=*/4, /*window=*/8);
  BlockTable a;
  m.allocate(a, 20);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  // The next query at position 20 reads the sink block 0 and positions [13, 20]: blocks
  // 3 and 4. Blocks 1 and 2 are released.
  m.release_unneeded(a, 20);
  EXPECT_EQ(a.ids, (std::vector<int32_t>{0, -1, -1, 3, 4}));
  EXPECT_EQ(a.n_released, 3u);
  EXPECT_EQ(m.pool().usage().used, 3);
  m.allocate(a, 24);
  m.release_unneeded(a, 24);  // window [17, 24]: block 3 goes
  EXPECT_EQ(a.ids, (std::vector<int32_t>{0, -1, -1, -1, 4, 2}));
  m.free(a);
  EXPECT_EQ(m.pool().usage().used, 0);
}

TEST(StreamingManager, AHitNeedsTheSinksAndTheLastWindowCached) {
  StreamingManager m(16, 4, 4, 8);
  const auto t = iota_tokens(41);
  const auto keys = keys_of(t);  // 10 full blocks
  BlockTable a;
  // Grow one token at a time, as decode does: blocks 1..7 are released on the way.
  for (int64_t n = 1; n <= 40; ++n) {
    m.allocate(a, n);
    m.register_full(a, std::span<const BlockKey>(keys).first(static_cast<size_t>(n / 4)), t);
    m.release_unneeded(a, n);
  }
  m.free(a);
  // 10 blocks: the hit of 10 needs block 0 (sink) and blocks 8, 9 (window of position 40).
  EXPECT_EQ(m.find_hit(keys, t, 10), 10u);
  // 9 blocks need block 7 too (the window of position 36 is [29, 36]): released on the
  // way, but still cached.
  EXPECT_EQ(m.find_hit(keys, t, 9), 9u);
  BlockTable b;
  m.take_hit(b, keys, t, 10);
  ASSERT_EQ(b.ids.size(), 10u);
  EXPECT_GE(b.ids[0], 0);
  for (size_t i = 1; i < 8; ++i) EXPECT_EQ(b.ids[i], -1) << i;
  EXPECT_GE(b.ids[8], 0);
  EXPECT_GE(b.ids[9], 0);
  EXPECT_EQ(b.n_released, 8u);
  m.free(b);
  // With the cached blocks gone, no prefix is servable.
  m.pool().clear_cache();
  EXPECT_EQ(m.find_hit(keys, t, 10), 0u);
}

TEST(StreamingManager, RejectsBadWindow) {
  EXPECT_THROW(StreamingManager(4, 4, 0, 0), Error);
  EXPECT_THROW(StreamingManager(4, 4, -1, 8), Error);
  EXPECT_THROW(FullAttentionManager(4, 0), Error);
}

}  // namespace
}  // namespace strata

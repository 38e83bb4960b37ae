// One attention type's KV blocks for every sequence, above its own BlockPool (vLLM v1's
// SingleTypeKVCacheManager): which blocks a sequence of n tokens holds, which it may
// release as it grows, and which cached blocks a prefix hit may reuse. KvManager owns
// one per attention type of the model and keeps them in step; a new kind of cache (a
// latent MLA cache, a quantized one, a tier that spills) is a new subclass.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/block_key.h"
#include "kv/block_pool.h"

namespace strata {

// What one sequence holds under one manager.
struct BlockTable {
  std::vector<int32_t> ids;  // [block index] -> block id; -1 where a block was released
  size_t n_registered = 0;   // leading blocks already offered to the prefix cache
  size_t n_released = 0;     // manager-specific release cursor (StreamingManager)
};

class SingleTypeManager {
 public:
  SingleTypeManager(int32_t n_blocks, int32_t block_size);
  virtual ~SingleTypeManager() = default;
  SingleTypeManager(const SingleTypeManager&) = delete;
  SingleTypeManager& operator=(const SingleTypeManager&) = delete;

  // Of the first `max_blocks` full blocks of a prompt (keys[i] is block i's key, `tokens`
  // the prompt), the largest count k <= max_blocks whose prefix this manager can serve
  // from cached blocks. KvManager asks every manager in turn until they agree.
  virtual size_t find_hit(std::span<const BlockKey> keys, std::span<const int32_t> tokens,
                          size_t max_blocks) const = 0;
  // Fills an empty table with the cached blocks of a hit of `k` blocks (find_hit said
  // k is servable).
  virtual void take_hit(BlockTable& table, std::span<const BlockKey> keys,
                        std::span<const int32_t> tokens, size_t k) = 0;
  // Offers the table's blocks that `tokens` (the computed tokens) fill and that have a key
  // to the prefix cache.
  virtual void register_full(BlockTable& table, std::span<const BlockKey> keys,
                             std::span<const int32_t> tokens) = 0;
  // Releases the blocks no query at a position >= n_computed will read again.
  virtual void release_unneeded(BlockTable& table, int64_t n_computed) = 0;

  // Blocks to add for the table to cover `n_tokens` positions.
  int32_t blocks_needed(const BlockTable& table, int64_t n_tokens) const;
  // Adds them; the caller checked blocks_needed() <= pool().n_available().
  void allocate(BlockTable& table, int64_t n_tokens);
  // Releases every block (tail first, so the tail is evicted first) and clears the table.
  void free(BlockTable& table);
  // Releases the blocks past those `n_tokens` positions need (tail first) and drops
  // them from the table: a speculative step's rejected draft positions.
  void truncate(BlockTable& table, int64_t n_tokens);

  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }
  int32_t block_size() const { return block_size_; }

 protected:
  void release_at(BlockTable& table, size_t index);
  std::span<const int32_t> block_tokens(std::span<const int32_t> tokens, size_t index) const {
    return tokens.subspan(index * static_cast<size_t>(block_size_),
                          static_cast<size_t>(block_size_));
  }

  BlockPool pool_;
  int32_t block_size_;
};

}  // namespace strata

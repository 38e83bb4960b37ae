// The only owner of KV block ids: reference counts, a free list, and the prefix cache's
// hash table with an LRU of cached, unreferenced blocks. Every KV manager allocates,
// shares and releases blocks through one of these; none keeps ids of its own.
//
// A full block can be registered under a chained content key (kv/block_key.h); when its
// last holder releases it, it stays cached (LRU order, front evicted first) until an
// allocation needs the space. A lookup compares the block's token ids as well as the key,
// so a hash collision can never hand one request another's KV.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_key.h"
#include "strata/types.h"

namespace strata {

class BlockPool {
 public:
  explicit BlockPool(int32_t n_blocks);

  int32_t n_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  // Empty blocks (never cached, or evicted).
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }
  // Blocks an allocation may take: empty plus evictable cached ones.
  int32_t n_available() const { return static_cast<int32_t>(free_.size() + lru_.size()); }

  // Takes an empty block, else evicts the least recently used cached one; its ref count
  // becomes 1. nullopt when every block is held.
  std::optional<int32_t> allocate();
  // Adds a holder to a held block, or revives a cached one (a prefix hit).
  void retain(int32_t block);
  // Drops one holder; with none left a registered block is cached, another one freed.
  void release(int32_t block);
  int32_t ref_count(int32_t block) const;

  // The cached or held block registered under `key` whose tokens equal `tokens`, or -1.
  int32_t find(const BlockKey& key, std::span<const int32_t> tokens) const;
  // Registers a held block under `key` unless that content is registered already (then
  // this block stays unregistered and is freed normally when its holders are done).
  void register_block(int32_t block, const BlockKey& key, std::span<const int32_t> tokens);

  KvUsage usage() const;
  // Drops every cached (unreferenced) block.
  void clear_cache();
  int64_t evictions() const { return evictions_; }

 private:
  struct Block {
    int32_t ref_count = 0;
    std::optional<BlockKey> key;  // set while registered
    std::vector<int32_t> tokens;  // the block's tokens, compared on a hit
    std::list<int32_t>::iterator lru_pos;
    bool in_lru = false;
  };
  Block& at(int32_t block);
  const Block& at(int32_t block) const;
  void evict(int32_t block);

  std::vector<Block> blocks_;
  std::vector<int32_t> free_;  // empty blocks (a stack: lowest id on top)
  std::list<int32_t> lru_;     // cached, unreferenced blocks; front = evicted first
  std::unordered_map<BlockKey, int32_t, BlockKeyHash> cached_;
  int64_t evictions_ = 0;
};

}  // namespace strata

// Block-level KV management for many sequences over one BlockPool-like set of ids:
// allocation with reference counts, per-sequence block tables, and automatic prefix
// caching. With sparse attention a second set of ids (the stream pool) holds the
// streaming heads' K/V: a sequence keeps only its sink blocks and the blocks that cover
// its attention window there, releasing each block as it leaves the window. A full block is keyed by a chained hash of (parent block's key, its token
// ids, the request's cache salt, the model identity); on a hash hit the token ids are
// compared too, so a collision can never hand one request another's KV. Blocks whose
// reference count drops to zero stay cached in LRU order and are evicted only when an
// allocation needs them.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace strata {

struct BlockKey {
  uint64_t lo = 0, hi = 0;  // 128-bit XXH3
  bool operator==(const BlockKey&) const = default;
};

struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const { return static_cast<size_t>(k.lo ^ (k.hi * 31)); }
};

// Key of a full block given its parent's key (nullopt for the first block).
BlockKey chain_block_key(const std::optional<BlockKey>& parent, std::span<const int32_t> tokens,
                         const std::string& salt, uint64_t model_id);

// What one sequence holds.
struct SequenceKv {
  std::vector<int32_t> block_table;
  std::vector<BlockKey> block_keys;  // keys of the leading full blocks already registered
  std::string salt;
  // Sparse attention: stream-pool blocks, indexed like block_table; -1 once released.
  std::vector<int32_t> stream_table;
  size_t stream_registered = 0;  // leading stream blocks considered for the cache
  size_t stream_released = 0;    // blocks before this (past the sinks) were released
};

struct KvManagerConfig {
  int32_t n_blocks = 0;
  int32_t block_size = 16;
  bool prefix_cache = true;
  uint64_t model_id = 0;  // distinguishes models sharing nothing
  // Sparse attention (n_stream_blocks > 0): the stream pool and what each sequence
  // keeps in it — positions [0, sink) and the last `window` positions.
  int32_t n_stream_blocks = 0;
  int32_t sink = 0;
  int32_t window = 0;
};

struct KvUsage {
  int32_t n_blocks = 0;
  int32_t used = 0;    // held by at least one sequence
  int32_t cached = 0;  // free to reuse but still holding a cached prefix
  int32_t free = 0;    // empty
  double usage_ratio() const { return n_blocks ? static_cast<double>(used) / n_blocks : 0.0; }
};

class KvManager {
 public:
  explicit KvManager(const KvManagerConfig& config);

  int32_t block_size() const { return config_.block_size; }
  bool prefix_cache_enabled() const { return config_.prefix_cache; }
  bool sparse() const { return config_.n_stream_blocks > 0; }

  // Finds the longest cached prefix of `tokens` (whole blocks only, and never the last
  // token, which must be computed to produce logits), adds those blocks to `seq` (which
  // must be empty) and returns how many tokens they cover. With sparse attention a
  // prefix also needs its sink blocks and the blocks of its last window still cached
  // in the stream pool.
  int32_t match_prefix(SequenceKv& seq, std::span<const int32_t> tokens);

  // Blocks needed for `seq` to hold `n_tokens` tokens, beyond what it has (paged pool).
  int32_t blocks_needed(const SequenceKv& seq, int64_t n_tokens) const;
  // Blocks available to allocation in the paged pool: empty plus evictable cached ones.
  int32_t n_available() const { return full_.n_available(); }

  // Grows `seq` to hold `n_tokens` tokens; false (and no change) when blocks run out.
  bool allocate(SequenceKv& seq, int64_t n_tokens);

  // Registers every block of `seq` that `tokens` (the sequence's computed tokens) fills
  // completely and that is not registered yet, so later requests can share it. With
  // sparse attention it then releases the stream blocks that have left the window of
  // the next position (len(tokens)); they stay cached while nothing needs the space.
  void commit(SequenceKv& seq, std::span<const int32_t> tokens);

  // Sparse attention: releases the stream blocks that no query at position >= n_computed
  // reads (past the sinks and before that position's window). commit() calls it.
  void release_out_of_window(SequenceKv& seq, int64_t n_computed);

  // Releases all of `seq`'s blocks (tail first, so the tail is evicted first) and clears it.
  void free(SequenceKv& seq);

  KvUsage usage() const { return full_.usage(); }
  KvUsage stream_usage() const { return stream_.usage(); }
  int32_t ref_count(int32_t block) const { return full_.ref_count(block); }
  int32_t stream_ref_count(int32_t block) const { return stream_.ref_count(block); }
  // Drops every cached (unreferenced) block; used by tests and on cache resets.
  void clear_cache() {
    full_.clear_cache();
    stream_.clear_cache();
  }

  // Statistics for metrics: tokens looked up and tokens found in the prefix cache.
  int64_t prefix_queries() const { return prefix_queries_; }
  int64_t prefix_hits() const { return prefix_hits_; }
  int64_t evictions() const { return full_.evictions() + stream_.evictions(); }

 private:
  // One pool of block ids with reference counts, a free list and an LRU of cached,
  // unreferenced blocks keyed by content.
  class BlockSet {
   public:
    explicit BlockSet(int32_t n_blocks);
    int32_t n_available() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
    std::optional<int32_t> take();  // ref count 1
    // The cached block with this key and tokens, or -1.
    int32_t find(const BlockKey& key, std::span<const int32_t> tokens) const;
    void acquire(int32_t block);  // adds a holder to a found block
    void release(int32_t block);  // drops a holder
    // Registers a held block under `key` unless that content is cached already.
    void register_block(int32_t block, const BlockKey& key, std::span<const int32_t> tokens);
    KvUsage usage() const;
    int32_t ref_count(int32_t block) const { return blocks_[static_cast<size_t>(block)].ref_count; }
    void clear_cache();
    int64_t evictions() const { return evictions_; }

   private:
    struct Block {
      int32_t ref_count = 0;
      std::optional<BlockKey> key;  // set while the block is registered in the cache
      std::vector<int32_t> tokens;  // the block's tokens, compared on a hit
      std::list<int32_t>::iterator lru_pos;
      bool in_lru = false;
    };
    void evict(int32_t block);

    std::vector<Block> blocks_;
    std::vector<int32_t> free_;  // empty blocks (stack: lowest id on top)
    std::list<int32_t> lru_;     // cached, unreferenced blocks; front = evicted first
    std::unordered_map<BlockKey, int32_t, BlockKeyHash> cached_;
    int64_t evictions_ = 0;
  };

  // Stream blocks a sequence must hold to attend from position `pos` on: [0, first)
  // are sinks, [keep_from, ...) the window.
  int64_t sink_blocks() const;
  int64_t window_first_block(int64_t pos) const;
  int32_t stream_blocks_needed(const SequenceKv& seq, int64_t n_tokens) const;
  void release_stream(SequenceKv& seq, size_t index);

  KvManagerConfig config_;
  BlockSet full_;
  BlockSet stream_;
  int64_t prefix_queries_ = 0, prefix_hits_ = 0;
};

}  // namespace strata

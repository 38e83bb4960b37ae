// Block-level KV management for many sequences: one SingleTypeManager per attention type
// of the model (full attention always; the streaming heads' manager with sparse
// attention), each above its own BlockPool, kept in step for every sequence. It
// computes the chained block keys once and shares them with every manager, asks each
// which prefix it can serve from cache until they agree, and grows a sequence in all of
// them or in none.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/block_key.h"
#include "kv/single_type_manager.h"
#include "strata/types.h"

namespace strata {

// What one sequence holds: a block table per manager, and the keys of its leading full
// blocks (shared by all managers: a key names content, not storage).
struct SequenceKv {
  std::vector<BlockTable> tables;    // [KvManager group]; sized on first use
  std::vector<BlockKey> block_keys;  // keys of the leading full blocks already registered
  std::string salt;

  const std::vector<int32_t>& table(size_t group) const {
    static const std::vector<int32_t> kNone;
    return group < tables.size() ? tables[group].ids : kNone;
  }
  // The full-attention table (every position), and the streaming heads' (sparse only).
  const std::vector<int32_t>& block_table() const { return table(0); }
  const std::vector<int32_t>& stream_table() const { return table(1); }
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

class KvManager {
 public:
  explicit KvManager(const KvManagerConfig& config);

  int32_t block_size() const { return config_.block_size; }
  bool prefix_cache_enabled() const { return config_.prefix_cache; }
  bool sparse() const { return managers_.size() > 1; }

  // Finds the longest cached prefix of `tokens` (whole blocks only, and never the last
  // token, which must be computed to produce logits) that every manager can serve, adds
  // those blocks to `seq` (which must be empty) and returns how many tokens they cover.
  // `max_tokens` caps the hit (a request that wants logits of its prompt tail).
  int32_t match_prefix(SequenceKv& seq, std::span<const int32_t> tokens,
                       int64_t max_tokens = INT64_MAX);

  // Blocks needed for `seq` to hold `n_tokens` tokens, beyond what it has (paged pool).
  int32_t blocks_needed(const SequenceKv& seq, int64_t n_tokens) const;
  // Blocks available to allocation in the paged pool: empty plus evictable cached ones.
  int32_t n_available() const { return managers_[0]->pool().n_available(); }

  // Grows `seq` to hold `n_tokens` tokens in every manager; false (and no change) when
  // one of them runs out of blocks.
  bool allocate(SequenceKv& seq, int64_t n_tokens);

  // Registers every block of `seq` that `tokens` (the sequence's computed tokens) fills
  // completely and that is not registered yet, so later requests can share it; then
  // each manager releases what the next position (len(tokens)) no longer reads.
  void commit(SequenceKv& seq, std::span<const int32_t> tokens);

  // Releases what no query at a position >= n_computed reads. commit() calls it.
  void release_out_of_window(SequenceKv& seq, int64_t n_computed);

  // Shrinks `seq` to the blocks its first `n_tokens` positions need, in every manager:
  // the rollback of a speculative step's rejected tokens. Only committed tokens are ever
  // registered, so no cached block is touched.
  void truncate(SequenceKv& seq, int64_t n_tokens);

  // Releases all of `seq`'s blocks and clears it.
  void free(SequenceKv& seq);

  KvUsage usage() const { return managers_[0]->pool().usage(); }
  KvUsage stream_usage() const { return sparse() ? managers_[1]->pool().usage() : KvUsage{}; }
  int32_t ref_count(int32_t block) const { return managers_[0]->pool().ref_count(block); }
  int32_t stream_ref_count(int32_t block) const { return managers_.at(1)->pool().ref_count(block); }
  // Drops every cached (unreferenced) block; used by tests and on cache resets.
  void clear_cache();

  // Whole prefix blocks of the paged pool moved between engines (prefill/decode
  // disaggregation, engine/kv_transfer.cpp); full attention only (the caller refuses
  // sparse caches). The block registered under `key` with `tokens` (held or cached), or -1.
  int32_t find_block(const BlockKey& key, std::span<const int32_t> tokens) const {
    return managers_[0]->pool().find(key, tokens);
  }
  // `n` blocks of the paged pool (ref count 1 each), all or none: empty when fewer than
  // `n` are available, and then nothing changed.
  std::vector<int32_t> allocate_blocks(int32_t n);
  // Adds a holder to a held or cached block (so no allocation evicts it) / drops one.
  void retain_block(int32_t block) { managers_[0]->pool().retain(block); }
  void release_block(int32_t block) { managers_[0]->pool().release(block); }
  // Registers a held block in the prefix cache (a no-op when that content is registered).
  void register_block(int32_t block, const BlockKey& key, std::span<const int32_t> tokens) {
    managers_[0]->pool().register_block(block, key, tokens);
  }

  // Statistics for metrics: tokens looked up and tokens found in the prefix cache.
  int64_t prefix_queries() const { return prefix_queries_; }
  int64_t prefix_hits() const { return prefix_hits_; }
  int64_t evictions() const;

 private:
  void ensure_tables(SequenceKv& seq) const;

  KvManagerConfig config_;
  std::vector<std::unique_ptr<SingleTypeManager>> managers_;  // [0] full attention
  std::vector<BlockKey> keys_;                                // match_prefix scratch
  int64_t prefix_queries_ = 0, prefix_hits_ = 0;
};

}  // namespace strata

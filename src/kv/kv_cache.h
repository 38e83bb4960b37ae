// The paged KV cache storage: one preallocated pool of fixed-size blocks per layer.
// Which sequence owns which block is decided elsewhere (BlockPool, the scheduler); this
// class only holds the bytes and knows the layout. Attention reads K/V only through
// block tables that name blocks of this pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/huge_buffer.h"
#include "kv/head_modes.h"

namespace strata {

struct KvCacheConfig {
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;  // tokens per block
  int64_t n_blocks = 0;
  DType dtype = DType::F32;  // F32, F16, BF16 (even head_dim and block_size), Q8_0 or
                             // Q4_0 (head_dim % 16 == 0, not latent, Q4_0 an even
                             // block_size; kv/kv_quant.h)
  // Sparse attention: streaming heads' K/V live in a second pool of n_stream_blocks
  // blocks (addressed through a sequence's stream table), full heads' in the first.
  // Dense modes (the default) leave the second pool empty and the layout unchanged.
  HeadModes modes;
  int64_t n_stream_blocks = 0;
  // Multi-latent attention: each layer caches one row per token (n_kv_heads = 1, head_dim
  // = kv_lora_rank + rope dims) in the K tiles, which serve as keys and (their first
  // kv_lora_rank dims) as values; there is no V pool. Needs dense modes.
  bool latent = false;
};

class KvCache {
 public:
  explicit KvCache(const KvCacheConfig& config);

  const KvCacheConfig& config() const { return config_; }
  // Bytes of one stored element (1 for q8_0 and q4_0, whose scales are extra and whose
  // nibbles are half a byte: use tile_bytes()).
  size_t element_size() const { return element_size_; }
  // Bytes of one (block, head) tile of keys or of values, scales included.
  size_t tile_bytes() const { return tile_bytes_; }
  // Bytes of K plus V (the latent row with MLA) for one token across all layers and heads
  // (dense).
  size_t bytes_per_token() const;
  // Backs the memory of blocks [0, n_blocks) of every layer and head now (all of them when
  // n_blocks < 0 or more than a pool holds): the pool hands out low blocks first, and each
  // (layer, head) region starts on its own huge pages, so without this a server's first
  // request zero-fills one 2 MiB page per region (352 MiB for a 22-layer, 4-KV-head
  // model) inside its first forward.
  void populate(int64_t n_blocks);
  // Bytes of K plus V for one token in each pool (full heads; streaming heads).
  size_t full_bytes_per_token() const { return pool_bytes_per_token(kFull); }
  size_t stream_bytes_per_token() const { return pool_bytes_per_token(kStream); }
  size_t total_bytes() const { return k_[0].size() + v_[0].size() + k_[1].size() + v_[1].size(); }
  bool streaming(int64_t layer, int64_t head) const {
    return config_.modes.is_streaming(layer, head);
  }
  // Blocks in the pool that holds (layer, head): n_blocks or n_stream_blocks.
  int64_t pool_blocks(int64_t layer, int64_t head) const {
    return streaming(layer, head) ? config_.n_stream_blocks : config_.n_blocks;
  }

  // Layout of each pool: [layer][head of that mode in the layer][block][tile]; a tile is
  // the block's keys or its values, laid out as kv/tile_layout.h says.
  // A (block, head) tile is contiguous, so attention for one KV head streams each block
  // once for all the query heads that share it. `block` indexes the pool that holds
  // (layer, head): the paged pool for full heads, the stream pool for streaming heads.
  uint8_t* k_tile(int64_t layer, int64_t block, int64_t head) {
    return k_[pool(layer, head)].data() + offset(layer, block, head);
  }
  // Not for a latent cache, which has no V tiles.
  uint8_t* v_tile(int64_t layer, int64_t block, int64_t head) {
    return v_[pool(layer, head)].data() + offset(layer, block, head);
  }
  const uint8_t* k_tile(int64_t layer, int64_t block, int64_t head) const {
    return k_[pool(layer, head)].data() + offset(layer, block, head);
  }
  const uint8_t* v_tile(int64_t layer, int64_t block, int64_t head) const {
    return v_[pool(layer, head)].data() + offset(layer, block, head);
  }

 private:
  static constexpr int kFull = 0, kStream = 1;
  int pool(int64_t layer, int64_t head) const { return streaming(layer, head) ? kStream : kFull; }
  size_t offset(int64_t layer, int64_t block, int64_t head) const {
    const size_t lh = static_cast<size_t>(layer * config_.n_kv_heads + head);
    const int p = pool(layer, head);
    const auto l = static_cast<size_t>(layer);
    // [layer][head][block]: the blocks of one (layer, head) are adjacent, so a sequence
    // whose blocks were allocated in order is read as one stream (a block-major layout put
    // a head's consecutive tiles n_kv_heads tiles apart, and decode attention at 4K context
    // ran at half the speed).
    const int64_t n_blocks = p == kFull ? config_.n_blocks : config_.n_stream_blocks;
    return static_cast<size_t>(layer_base_[p][l] + head_index_[lh] * n_blocks + block) *
           tile_bytes_;
  }
  size_t pool_bytes_per_token(int p) const;

  KvCacheConfig config_;
  size_t element_size_;
  int64_t tile_elems_;               // block_size * head_dim
  size_t tile_bytes_;                // bytes of one tile
  std::vector<int64_t> head_index_;  // [layer * n_kv_heads + head]: index among its mode's heads
  std::vector<int64_t> layer_heads_[2];  // [pool][layer]: heads of that mode in the layer
  std::vector<int64_t> layer_base_[2];   // [pool][layer]: first tile of the layer in the pool
  HugePageBuffer k_[2], v_[2];
};

}  // namespace strata

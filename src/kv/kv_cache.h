// The paged KV cache storage: one preallocated pool of fixed-size blocks per layer.
// Which sequence owns which block is decided elsewhere (BlockPool, the scheduler); this
// class only holds the bytes and knows the layout. Attention reads K/V only through
// block tables that name blocks of this pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace strata {

struct KvCacheConfig {
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;  // tokens per block
  int64_t n_blocks = 0;
  DType dtype = DType::F32;  // F32 or F16
};

class KvCache {
 public:
  explicit KvCache(const KvCacheConfig& config);

  const KvCacheConfig& config() const { return config_; }
  size_t element_size() const { return element_size_; }
  // Bytes of K plus V for one token across all layers and heads.
  size_t bytes_per_token() const;
  size_t total_bytes() const { return k_.size() + v_.size(); }

  // Layout: [layer][block][kv_head][slot in block][head_dim]. A (block, head) tile is
  // contiguous, so attention for one KV head streams each block once for all the query
  // heads that share it.
  uint8_t* k_tile(int64_t layer, int64_t block, int64_t head) { return k_.data() + offset(layer, block, head); }
  uint8_t* v_tile(int64_t layer, int64_t block, int64_t head) { return v_.data() + offset(layer, block, head); }
  const uint8_t* k_tile(int64_t layer, int64_t block, int64_t head) const {
    return k_.data() + offset(layer, block, head);
  }
  const uint8_t* v_tile(int64_t layer, int64_t block, int64_t head) const {
    return v_.data() + offset(layer, block, head);
  }

 private:
  size_t offset(int64_t layer, int64_t block, int64_t head) const {
    return static_cast<size_t>(((layer * config_.n_blocks + block) * config_.n_kv_heads + head) *
                               tile_elems_) *
           element_size_;
  }

  KvCacheConfig config_;
  size_t element_size_;
  int64_t tile_elems_;  // block_size * head_dim
  std::vector<uint8_t> k_, v_;
};

}  // namespace strata

// Attention over the paged KV cache: K/V are written into the blocks a sequence's block
// table names and read back only through it. Tiled by KV block with an online softmax,
// so no score matrix is materialised however long the context; all query heads that
// share a KV head (GQA) are processed together so each K/V tile is read once per token.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/forward_batch.h"

namespace strata {

struct AttentionShape {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
};

// Per-thread scratch for attention; sized once, reused every call.
class AttentionScratch {
 public:
  void reserve(int n_threads, const AttentionShape& shape, int64_t block_size);
  float* thread_buffer(int tid) { return buffer_.data() + static_cast<size_t>(tid) * per_thread_; }
  // The first batch token of each query group of a call (reused, so it allocates only
  // until it has grown to the largest batch).
  std::vector<int32_t>& group_starts() { return group_starts_; }

 private:
  std::vector<float> buffer_;
  std::vector<int32_t> group_starts_;
  size_t per_thread_ = 0;
};

// Stores each batch token's K and V rows ([n_tokens][n_kv_heads*head_dim]) at its
// position in its sequence's blocks. Throws if a position falls outside the block table.
void write_kv(KvCache& cache, int64_t layer, const ForwardBatch& batch, const float* k,
              const float* v);

// out[t] = softmax(q[t] . K[0..pos(t)] * scale) V for every batch token (causal within
// its own sequence). q and out are [n_tokens][n_heads*head_dim].
void paged_attention(const KvCache& cache, int64_t layer, const ForwardBatch& batch,
                     const AttentionShape& shape, const float* q, float* out, ThreadPool& pool,
                     AttentionScratch& scratch);

}  // namespace strata

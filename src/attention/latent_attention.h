// Attention over a latent (MLA) KV cache in the absorbed form: each cached row is a
// token's normed latent c_kv (kv_lora_rank) followed by its RoPE key (rope_dim); a query
// row per head is the latent query q_nope W_kb (kv_lora_rank) followed by its RoPE query.
// Scores are q . row, and the values are the rows' latent part, so the output per head is
// a latent vector that the model maps through W_vb afterwards. No per-head K or V is ever
// formed, and all heads share each row, so a block's tile is widened once for every head.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/paged_attention.h"
#include "core/thread_pool.h"
#include "kv/forward_batch.h"
#include "kv/kv_cache.h"

namespace strata {

struct LatentShape {
  int64_t n_heads = 0;
  int64_t kv_lora_rank = 0;
  int64_t rope_dim = 0;
  float scale = 1.0f;  // applied to q . row
  int64_t row() const { return kv_lora_rank + rope_dim; }
};

// Stores one token's row (row() floats) at a resolved slot (KvSlot::full_block). Cannot
// throw.
void write_latent_row(KvCache& cache, int64_t layer, const KvSlot& at, const float* row);

// Per-thread buffers and the partial softmax states of a pass; grown, never shrunk.
class LatentScratch {
 public:
  std::vector<float> thread_;         // (n_threads, per-thread floats)
  std::vector<float> partial_;        // (chunks, n_heads*(kv_lora_rank+2))
  std::vector<int64_t> chunk_begin_;  // (n_tokens + 1) first chunk of each token
};

// out[t][h] (kv_lora_rank floats) = sum_j softmax_j(scale * q[t][h] . row_j) c_j over the
// positions j <= pos(t) of token t's sequence, read through its block table. q is
// [n_tokens][n_heads][row()], out [n_tokens][n_heads][kv_lora_rank].
// A token's positions are taken in chunks of a fixed number of blocks, each folded
// with its own online softmax and merged in chunk order, so each output is the same bits
// whether a batch's chunks are spread over threads (few tokens) or one thread takes a
// whole token (many), and whatever else is in the batch.
void latent_attention(const KvCache& cache, int64_t layer, const ForwardBatch& batch,
                      const LatentShape& shape, const float* q, float* out, ThreadPool& pool,
                      LatentScratch& scratch);

namespace attention {
// The block fold of one ISA level (latent_fold.h). T: the block's rows widened to float,
// dimension-major (T[d * block_size + j]); valid slots [0, n_valid).
struct LatentFoldArgs {
  const float* tile;
  int64_t block_size, n_valid;
  int64_t n_heads, kv_lora_rank, row;
  const float* q_t;  // (row, n_heads) the scaled query, dimension-major
  float* scores;     // (block_size, n_heads) scratch
  float* m;          // (n_heads) running max
  float* l;          // (n_heads) running sum
  float* o_t;        // (kv_lora_rank, n_heads) running output, dimension-major
};
using LatentFoldFn = void (*)(const LatentFoldArgs&);
using WidenF16Fn = void (*)(const uint16_t* src, float* dst, int64_t n);
namespace latent_ref {
void fold(const LatentFoldArgs& a);
void widen_f16(const uint16_t* src, float* dst, int64_t n);
}  // namespace latent_ref
namespace latent_avx2 {
void fold(const LatentFoldArgs& a);
void widen_f16(const uint16_t* src, float* dst, int64_t n);
}  // namespace latent_avx2
}  // namespace attention

}  // namespace strata

#include "attention/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "attention/tile_kernels.h"
#include "kernels/quant/traits.h"

namespace strata {
namespace {

// Scratch layout per thread: K tile, V tile (block_size*head_dim each, as f32), scores
// (n_rep*block_size), accumulators (n_rep*head_dim), running max and sum (n_rep each).
struct ScratchLayout {
  size_t k, v, scores, acc, max, sum, total;
};

ScratchLayout layout(const AttentionShape& s, int64_t bs) {
  const auto rep = static_cast<size_t>(s.n_heads / s.n_kv_heads);
  const auto tile = static_cast<size_t>(bs * s.head_dim);
  ScratchLayout l{};
  l.k = 0;
  l.v = l.k + tile;
  l.scores = l.v + tile;
  l.acc = l.scores + rep * static_cast<size_t>(bs);
  l.max = l.acc + rep * static_cast<size_t>(s.head_dim);
  l.sum = l.max + rep;
  l.total = l.sum + rep;
  return l;
}

// Returns a pointer to `n` floats of the tile, converting f16 storage into `tmp`.
const float* tile_as_f32(const uint8_t* tile, DType dtype, int64_t n, float* tmp) {
  if (dtype == DType::F32) return reinterpret_cast<const float*>(tile);
  kernels::type_traits(DType::F16).to_float(tile, tmp, n);
  return tmp;
}

void store_row(uint8_t* dst, DType dtype, const float* src, int64_t n) {
  if (dtype == DType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else {
    auto* h = reinterpret_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
  }
}

}  // namespace

void AttentionScratch::reserve(int n_threads, const AttentionShape& shape, int64_t block_size) {
  per_thread_ = layout(shape, block_size).total;
  const size_t need = per_thread_ * static_cast<size_t>(n_threads);
  if (buffer_.size() < need) buffer_.resize(need);
}

void write_kv(KvCache& cache, int64_t layer, const ForwardBatch& batch, const float* k,
              const float* v) {
  const auto& cfg = cache.config();
  const int64_t row = cfg.n_kv_heads * cfg.head_dim;
  const size_t esz = cache.element_size();
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    const auto& seq = batch.seqs[static_cast<size_t>(batch.seq_index[static_cast<size_t>(t)])];
    const int64_t pos = batch.positions[static_cast<size_t>(t)];
    const int64_t bi = pos / cfg.block_size;
    if (pos < 0 || bi >= static_cast<int64_t>(seq.block_table.size())) {
      throw Error("write_kv: position " + std::to_string(pos) + " outside the block table");
    }
    const int32_t block = seq.block_table[static_cast<size_t>(bi)];
    if (block < 0 || block >= cfg.n_blocks) throw Error("write_kv: block id out of range");
    const int64_t slot = pos % cfg.block_size;
    for (int64_t h = 0; h < cfg.n_kv_heads; ++h) {
      const size_t off = static_cast<size_t>(slot * cfg.head_dim) * esz;
      store_row(cache.k_tile(layer, block, h) + off, cfg.dtype, k + t * row + h * cfg.head_dim,
                cfg.head_dim);
      store_row(cache.v_tile(layer, block, h) + off, cfg.dtype, v + t * row + h * cfg.head_dim,
                cfg.head_dim);
    }
  }
}

void paged_attention(const KvCache& cache, int64_t layer, const ForwardBatch& batch,
                     const AttentionShape& shape, const float* q, float* out, ThreadPool& pool,
                     AttentionScratch& scratch) {
  const auto& cfg = cache.config();
  const int64_t hd = shape.head_dim;
  const int64_t bs = cfg.block_size;
  const int64_t n_rep = shape.n_heads / shape.n_kv_heads;
  const int64_t q_row = shape.n_heads * hd;
  const ScratchLayout lay = layout(shape, bs);
  const int64_t n_items = batch.n_tokens() * shape.n_kv_heads;
  const attention::TileKernels& tk = attention::tile_kernels();

  pool.run([&](int tid, int nt) {
    float* buf = scratch.thread_buffer(tid);
    float* ktmp = buf + lay.k;
    float* vtmp = buf + lay.v;
    float* scores = buf + lay.scores;
    float* acc = buf + lay.acc;
    float* mx = buf + lay.max;
    float* sum = buf + lay.sum;
    for (int64_t item = n_items * tid / nt; item < n_items * (tid + 1) / nt; ++item) {
      const int64_t t = item / shape.n_kv_heads;
      const int64_t g = item % shape.n_kv_heads;
      const auto& seq = batch.seqs[static_cast<size_t>(batch.seq_index[static_cast<size_t>(t)])];
      const int64_t n_ctx = batch.positions[static_cast<size_t>(t)] + 1;  // causal
      const float* qg = q + t * q_row + g * n_rep * hd;
      std::fill(acc, acc + n_rep * hd, 0.0f);
      std::fill(mx, mx + n_rep, -std::numeric_limits<float>::infinity());
      std::fill(sum, sum + n_rep, 0.0f);
      const int64_t n_blocks = (n_ctx + bs - 1) / bs;
      for (int64_t bi = 0; bi < n_blocks; ++bi) {
        const int32_t block = seq.block_table[static_cast<size_t>(bi)];
        const int64_t n_valid = std::min(bs, n_ctx - bi * bs);
        const float* kt = tile_as_f32(cache.k_tile(layer, block, g), cfg.dtype, n_valid * hd, ktmp);
        const float* vt = tile_as_f32(cache.v_tile(layer, block, g), cfg.dtype, n_valid * hd, vtmp);
        for (int64_t r = 0; r < n_rep; ++r) {
          float* sc = scores + r * bs;
          const float block_max = tk.scores(qg + r * hd, kt, n_valid, hd, shape.scale, sc);
          // Online softmax: rescale what was accumulated under the old running max.
          const float new_max = std::max(mx[r], block_max);
          const float correction = std::exp(mx[r] - new_max);
          sum[r] *= correction;
          for (int64_t j = 0; j < n_valid; ++j) {
            sc[j] = std::exp(sc[j] - new_max);
            sum[r] += sc[j];
          }
          tk.accumulate(sc, vt, n_valid, hd, correction, acc + r * hd);
          mx[r] = new_max;
        }
      }
      for (int64_t r = 0; r < n_rep; ++r) {
        float* o = out + t * q_row + (g * n_rep + r) * hd;
        const float inv = 1.0f / sum[r];
        for (int64_t d = 0; d < hd; ++d) o[d] = acc[r * hd + d] * inv;
      }
    }
  });
}

}  // namespace strata

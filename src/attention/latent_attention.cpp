#include "attention/latent_attention.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/quant/traits.h"
#include "kv/tile_layout.h"

#define LATENT_NS latent_ref
#include "attention/latent_fold.h"

namespace strata {

namespace attention::latent_ref {
void widen_f16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}
}  // namespace attention::latent_ref

namespace {

// Blocks per chunk: 256 positions at 16-token blocks, so a 4K-context decode step has 16
// chunks to spread over the threads, and a chunk's states are small beside its reads.
constexpr int64_t kChunkBlocks = 16;
constexpr int64_t kMaxHeads = 512;

struct Kernels {
  attention::LatentFoldFn fold;
  attention::WidenF16Fn widen_f16;
};

Kernels latent_kernels() {
  if (kernels::cpu_kernel_isa() >= kernels::KernelIsa::avx2)
    return {attention::latent_avx2::fold, attention::latent_avx2::widen_f16};
  return {attention::latent_ref::fold, attention::latent_ref::widen_f16};
}

// A block's rows as floats, dimension-major (the f32/f16 tile order, tile_layout.h).
const float* widen_tile(const KvCache& cache, int64_t layer, int32_t block, float* buf,
                        const Kernels& k) {
  const auto& c = cache.config();
  const uint8_t* tile = cache.k_tile(layer, block, 0);
  const int64_t n = c.block_size * c.head_dim;
  switch (c.dtype) {
    case DType::F32:
      return reinterpret_cast<const float*>(tile);
    case DType::F16:
      k.widen_f16(reinterpret_cast<const uint16_t*>(tile), buf, n);
      return buf;
    default: {
      const auto* h = reinterpret_cast<const uint16_t*>(tile);
      for (int64_t d = 0; d < c.head_dim; ++d) {
        for (int64_t j = 0; j < c.block_size; ++j)
          buf[d * c.block_size + j] =
              bf16_to_fp32(h[kv_layout::bf16_key_index(d, j, c.block_size)]);
      }
      return buf;
    }
  }
}

// What one thread needs: a widened tile, the transposed query and the block's scores.
struct ThreadBuffers {
  float* tile;
  float* q_t;
  float* scores;
};

size_t per_thread_floats(const KvCacheConfig& c, const LatentShape& s) {
  const auto H = static_cast<size_t>(s.n_heads);
  return static_cast<size_t>(c.block_size * c.head_dim) + static_cast<size_t>(s.row()) * H +
         static_cast<size_t>(c.block_size) * H;
}

ThreadBuffers thread_buffers(LatentScratch& scratch, const KvCacheConfig& c, const LatentShape& s,
                             int tid) {
  const auto H = static_cast<size_t>(s.n_heads);
  float* p = scratch.thread_.data() + static_cast<size_t>(tid) * per_thread_floats(c, s);
  ThreadBuffers b;
  b.tile = p;
  b.q_t = b.tile + c.block_size * c.head_dim;
  b.scores = b.q_t + static_cast<size_t>(s.row()) * H;
  return b;
}

void transpose_query(const float* q, const LatentShape& s, float* q_t) {
  for (int64_t h = 0; h < s.n_heads; ++h)
    for (int64_t d = 0; d < s.row(); ++d) q_t[d * s.n_heads + h] = q[h * s.row() + d] * s.scale;
}

// Folds chunk `chunk` of the positions [0, pos] of one sequence into a fresh state.
void fold_chunk(const KvCache& cache, int64_t layer, const SequenceView& seq, int64_t pos,
                int64_t chunk, const LatentShape& s, const ThreadBuffers& b, float* state,
                const Kernels& k) {
  const int64_t bs = cache.config().block_size, H = s.n_heads;
  float* m = state;
  float* l = state + H;
  float* o_t = state + 2 * H;
  std::fill(m, m + H, -std::numeric_limits<float>::infinity());
  std::fill(l, l + H, 0.0f);
  std::fill(o_t, o_t + s.kv_lora_rank * H, 0.0f);
  const int64_t last_block = pos / bs;
  const int64_t end = std::min(last_block + 1, (chunk + 1) * kChunkBlocks);
  for (int64_t bi = chunk * kChunkBlocks; bi < end; ++bi) {
    const int32_t block = seq.block_table[static_cast<size_t>(bi)];
    attention::LatentFoldArgs a;
    a.tile = widen_tile(cache, layer, block, b.tile, k);
    a.block_size = bs;
    a.n_valid = bi == last_block ? pos % bs + 1 : bs;
    a.n_heads = H;
    a.kv_lora_rank = s.kv_lora_rank;
    a.row = s.row();
    a.q_t = b.q_t;
    a.scores = b.scores;
    a.m = m;
    a.l = l;
    a.o_t = o_t;
    k.fold(a);
  }
}

// running <- merge(running, chunk state), the first chunk copied. The same arithmetic
// whichever thread folded the chunk.
void merge_state(float* run, const float* add, const LatentShape& s, bool first) {
  const int64_t H = s.n_heads, n = H * (s.kv_lora_rank + 2);
  if (first) {
    std::copy_n(add, n, run);
    return;
  }
  for (int64_t h = 0; h < H; ++h) {
    const float m = std::max(run[h], add[h]);
    const float a = std::exp(run[h] - m), b = std::exp(add[h] - m);
    run[h] = m;
    run[H + h] = a * run[H + h] + b * add[H + h];
    for (int64_t d = 0; d < s.kv_lora_rank; ++d) {
      float& o = run[2 * H + d * H + h];
      o = a * o + b * add[2 * H + d * H + h];
    }
  }
}

void write_output(const float* state, const LatentShape& s, float* out) {
  const int64_t H = s.n_heads;
  for (int64_t h = 0; h < H; ++h) {
    const float inv = 1.0f / state[H + h];
    for (int64_t d = 0; d < s.kv_lora_rank; ++d)
      out[h * s.kv_lora_rank + d] = state[2 * H + d * H + h] * inv;
  }
}

}  // namespace

void write_latent_row(KvCache& cache, int64_t layer, const KvSlot& at, const float* row) {
  const auto& c = cache.config();
  uint8_t* tile = cache.k_tile(layer, at.full_block, 0);
  for (int64_t d = 0; d < c.head_dim; ++d) {
    switch (c.dtype) {
      case DType::F32:
        reinterpret_cast<float*>(tile)[kv_layout::key_index(d, at.slot, c.block_size)] = row[d];
        break;
      case DType::F16:
        reinterpret_cast<uint16_t*>(tile)[kv_layout::key_index(d, at.slot, c.block_size)] =
            fp32_to_fp16(row[d]);
        break;
      default:
        reinterpret_cast<uint16_t*>(tile)[kv_layout::bf16_key_index(d, at.slot, c.block_size)] =
            fp32_to_bf16(row[d]);
    }
  }
}

void latent_attention(const KvCache& cache, int64_t layer, const ForwardBatch& b,
                      const LatentShape& s, const float* q, float* out, ThreadPool& pool,
                      LatentScratch& scratch) {
  const auto& c = cache.config();
  if (!c.latent || c.head_dim != s.row() || s.n_heads <= 0 || s.n_heads > kMaxHeads) {
    throw Error("latent_attention: the cache is not a latent cache of this shape (row " +
                std::to_string(s.row()) + ", at most " + std::to_string(kMaxHeads) + " heads)");
  }
  const int64_t T = b.n_tokens(), H = s.n_heads;
  const Kernels k = latent_kernels();
  const size_t per_thread = per_thread_floats(c, s);
  if (scratch.thread_.size() < per_thread * static_cast<size_t>(pool.size()))
    scratch.thread_.resize(per_thread * static_cast<size_t>(pool.size()));
  const auto state_floats = static_cast<size_t>(H * (s.kv_lora_rank + 2));
  const auto seq_of = [&](int64_t t) -> const SequenceView& {
    return b.seqs[static_cast<size_t>(b.seq_index[static_cast<size_t>(t)])];
  };
  const auto pos_of = [&](int64_t t) {
    return static_cast<int64_t>(b.positions[static_cast<size_t>(t)]);
  };

  if (T >= pool.size()) {
    // Many tokens: one thread per token, its chunks folded and merged in order.
    if (scratch.partial_.size() < 2 * state_floats * static_cast<size_t>(pool.size()))
      scratch.partial_.resize(2 * state_floats * static_cast<size_t>(pool.size()));
    pool.run([&](int tid, int nt) {
      const ThreadBuffers tb = thread_buffers(scratch, c, s, tid);
      for (int64_t t = T * tid / nt; t < T * (tid + 1) / nt; ++t) {
        transpose_query(q + t * H * s.row(), s, tb.q_t);
        const int64_t n_chunks = pos_of(t) / c.block_size / kChunkBlocks + 1;
        float* run = scratch.partial_.data() + static_cast<size_t>(tid) * 2 * state_floats;
        float* chunk_state = run + state_floats;
        for (int64_t ch = 0; ch < n_chunks; ++ch) {
          fold_chunk(cache, layer, seq_of(t), pos_of(t), ch, s, tb, chunk_state, k);
          merge_state(run, chunk_state, s, ch == 0);
        }
        write_output(run, s, out + t * H * s.kv_lora_rank);
      }
    });
    return;
  }
  // Few tokens (decode): every (token, chunk) is an item, folded by any thread into its
  // own state; then each token merges its chunks in order.
  scratch.chunk_begin_.resize(static_cast<size_t>(T + 1));
  scratch.chunk_begin_[0] = 0;
  for (int64_t t = 0; t < T; ++t) {
    scratch.chunk_begin_[static_cast<size_t>(t + 1)] =
        scratch.chunk_begin_[static_cast<size_t>(t)] + pos_of(t) / c.block_size / kChunkBlocks + 1;
  }
  const int64_t n_items = scratch.chunk_begin_.back();
  if (scratch.partial_.size() < static_cast<size_t>(n_items + T) * state_floats)
    scratch.partial_.resize(static_cast<size_t>(n_items + T) * state_floats);
  std::atomic<int64_t> next{0};
  pool.run([&](int tid, int) {
    const ThreadBuffers tb = thread_buffers(scratch, c, s, tid);
    int64_t query_of = -1;
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n_items;) {
      int64_t t = 0;
      while (scratch.chunk_begin_[static_cast<size_t>(t + 1)] <= i) ++t;
      if (t != query_of) {
        transpose_query(q + t * H * s.row(), s, tb.q_t);
        query_of = t;
      }
      const int64_t ch = i - scratch.chunk_begin_[static_cast<size_t>(t)];
      fold_chunk(cache, layer, seq_of(t), pos_of(t), ch, s, tb,
                 scratch.partial_.data() + static_cast<size_t>(i) * state_floats, k);
    }
  });
  for (int64_t t = 0; t < T; ++t) {
    float* run = scratch.partial_.data() + static_cast<size_t>(n_items + t) * state_floats;
    for (int64_t i = scratch.chunk_begin_[static_cast<size_t>(t)];
         i < scratch.chunk_begin_[static_cast<size_t>(t + 1)]; ++i) {
      merge_state(run, scratch.partial_.data() + static_cast<size_t>(i) * state_floats, s,
                  i == scratch.chunk_begin_[static_cast<size_t>(t)]);
    }
    write_output(run, s, out + t * H * s.kv_lora_rank);
  }
}

}  // namespace strata

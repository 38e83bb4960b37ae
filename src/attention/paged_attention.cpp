#include "attention/paged_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "attention/kv_dequant.h"
#include "attention/kv_quantize.h"
#include "core/error.h"
#include "core/fp16.h"
#include "core/prefetch.h"
#include "kernels/cpu/ops.h"
#include "kv/kv_quant.h"
#include "kv/tile_layout.h"

namespace strata {
namespace {

// Up to this many consecutive query tokens of one sequence share a pass over the K/V
// tiles (prefill), so each tile is read once per group instead of once per token: at 4K
// context a KV head's keys and values (2 MiB in f32) no longer fit in L2, and reading them
// per token made prefill attention bound by L3 bandwidth. At 4K context, 8 tokens (64
// rows at llama-1b) measured 3-4% faster than 4, and 16 another 1.5-2.5%.
constexpr int64_t kQueryTile = 16;

// Scratch layout per thread, for a group of kQueryTile tokens x n_rep query heads (rows):
// the group's query rows copied contiguous, scores (rows*fold_scratch_row(block_size)),
// accumulators (rows*head_dim), running max and sum (one per row) of the chunk being
// folded, the same three for the chunks merged so far (kChunkSegments), room for one fold's V
// tiles in bf16 (kMaxFoldBlocks, dequant_tile_elems apiece), where a quantized cache's
// values are dequantized before each fold, and the query rows quantized for its keys
// (QueryQ8: int8 rows, then a scale and a sum per row and group). f32/f16/bf16 tiles and
// quantized keys are read in place.
struct ScratchLayout {
  size_t q, scores, acc, max, sum, merged_acc, merged_max, merged_sum, tiles, q8, q8_scale, q8_sum,
      total;
};

ScratchLayout layout(const AttentionShape& s, int64_t bs) {
  const auto rows = static_cast<size_t>(kQueryTile * (s.n_heads / s.n_kv_heads));
  ScratchLayout l{};
  l.q = 0;
  l.scores = l.q + rows * static_cast<size_t>(s.head_dim);
  l.acc = l.scores + rows * static_cast<size_t>(attention::fold_scratch_row(bs));
  l.max = l.acc + rows * static_cast<size_t>(s.head_dim);
  l.sum = l.max + rows;
  l.merged_acc = l.sum + rows;
  l.merged_max = l.merged_acc + rows * static_cast<size_t>(s.head_dim);
  l.merged_sum = l.merged_max + rows;
  l.tiles = l.merged_sum + rows;
  // Two bf16 elements per float.
  l.q8 = l.tiles + static_cast<size_t>(attention::kMaxFoldBlocks *
                                       attention::dequant_tile_elems(bs, s.head_dim) / 2);
  const int64_t group = kv_quant::group_size(s.head_dim);
  const size_t groups = group > 0 ? rows * static_cast<size_t>(s.head_dim / group) : 0;
  l.q8_scale = l.q8 + (rows * static_cast<size_t>(s.head_dim) + 3) / 4;  // 4 int8 per float
  l.q8_sum = l.q8_scale + groups;
  l.total = l.q8_sum + groups;
  return l;
}

// Stores one slot's key (keys = true) or value, head_dim elements, into a tile of the
// cache's element type at the places kv/tile_layout.h gives them.
void store_slot(uint8_t* tile, DType dtype, bool keys, const float* src, int64_t slot, int64_t bs,
                int64_t hd) {
  if (kv_quant::quantized(dtype))  // the SIMD quantize-on-write (same bytes as the reference)
    return attention::kv_quantize().of(dtype)(tile, keys, src, slot, bs, hd);
  auto index = [&](int64_t d) {
    if (dtype == DType::BF16) {
      return keys ? kv_layout::bf16_key_index(d, slot, bs)
                  : kv_layout::bf16_value_index(slot, d, hd);
    }
    return keys ? kv_layout::key_index(d, slot, bs) : kv_layout::value_index(slot, d, hd);
  };
  if (dtype == DType::F32) {
    auto* f = reinterpret_cast<float*>(tile);
    for (int64_t d = 0; d < hd; ++d) f[index(d)] = src[d];
  } else if (dtype == DType::F16) {
    auto* h = reinterpret_cast<uint16_t*>(tile);
    for (int64_t d = 0; d < hd; ++d) h[index(d)] = fp32_to_fp16(src[d]);
  } else {
    auto* h = reinterpret_cast<uint16_t*>(tile);
    for (int64_t d = 0; d < hd; ++d) h[index(d)] = fp32_to_bf16(src[d]);
  }
}

}  // namespace

void AttentionScratch::reserve(int n_threads, const AttentionShape& shape, int64_t block_size) {
  per_thread_ = layout(shape, block_size).total;
  const size_t need = per_thread_ * static_cast<size_t>(n_threads);
  if (buffer_.size() < need) buffer_.resize(need);
  chunk_keys_ = block_size * attention::tile_kernels().fold_blocks * kChunkSegments;
  n_kv_heads_ = shape.n_kv_heads;
  head_state_floats_ = static_cast<size_t>(shape.n_heads / shape.n_kv_heads * (2 + shape.head_dim));
}

namespace {

// The fold state of query rows: running maxima, sums of exp(score - max) and head_dim
// accumulators of exp(score - max) v per row.
struct RowStates {
  float* max;
  float* sum;
  float* acc;
};

void clear_rows(const RowStates& s, int64_t rows, int64_t hd) {
  std::fill(s.acc, s.acc + rows * hd, 0.0f);
  std::fill(s.max, s.max + rows, -std::numeric_limits<float>::infinity());
  std::fill(s.sum, s.sum + rows, 0.0f);
}

// a = a * x + c * y, element by element, each product and the sum rounded: in blocks of
// 16 with a constant trip count, which GCC vectorizes at -O2 (a merge runs per row and
// chunk, so three kernels:: calls through their dispatch per row were not worth it).
// x == 1, the running max standing (the usual case), leaves a's elements as they are.
void blend_rows(float* __restrict a, float x, const float* __restrict c, float y, int64_t n) {
  int64_t d = 0;
  if (x == 1.0f) {
    for (; d + 16 <= n; d += 16)
      for (int i = 0; i < 16; ++i) a[d + i] += c[d + i] * y;
    for (; d < n; ++d) a[d] += c[d] * y;
    return;
  }
  for (; d + 16 <= n; d += 16)
    for (int i = 0; i < 16; ++i) a[d + i] = a[d + i] * x + c[d + i] * y;
  for (; d < n; ++d) a[d] = a[d] * x + c[d] * y;
}

// Merges a chunk's fold states of `rows` rows into the running ones, both rescaled to the
// larger max. A row the chunk did not reach (max -inf) is left as it is; a row with nothing merged
// yet takes the chunk's state as it is. The split-K merge (AttentionPass::merge_item) and the merge
// inside a pass (run_item) both come here, so they round alike.
void merge_rows(const RowStates& into, const float* max, const float* sum, const float* acc,
                int64_t rows, int64_t hd) {
  constexpr float kEmpty = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    const float cm = max[r];
    if (cm == kEmpty) continue;
    float* a = into.acc + r * hd;
    const float* c = acc + r * hd;
    if (into.max[r] == kEmpty) {
      into.max[r] = cm;
      into.sum[r] = sum[r];
      std::copy(c, c + hd, a);
      continue;
    }
    const float m = std::max(into.max[r], cm);
    const float old_scale = std::exp(into.max[r] - m), chunk_scale = std::exp(cm - m);
    into.max[r] = m;
    into.sum[r] = into.sum[r] * old_scale + sum[r] * chunk_scale;
    blend_rows(a, old_scale, c, chunk_scale, hd);
  }
}

// The block of the pool that holds (layer, head) for position `pos`, or throws.
int32_t block_for(const KvCache& cache, const SequenceView& seq, bool streaming, int64_t pos) {
  const int64_t bi = pos / cache.config().block_size;
  const std::span<const int32_t> table = streaming ? seq.stream_table : seq.block_table;
  if (pos < 0 || bi >= static_cast<int64_t>(table.size())) {
    throw Error("write_kv: position " + std::to_string(pos) + " outside the " +
                (streaming ? "stream" : "block") + " table");
  }
  const int32_t block = table[static_cast<size_t>(bi)];
  const int64_t limit = streaming ? cache.config().n_stream_blocks : cache.config().n_blocks;
  if (block < 0 || block >= limit) throw Error("write_kv: block id out of range");
  return block;
}

}  // namespace

KvSlot resolve_kv_slot(const KvCache& cache, int64_t layer, const SequenceView& seq, int64_t pos) {
  const auto& cfg = cache.config();
  const int64_t n_streaming = cfg.modes.n_streaming_in_layer(layer);
  KvSlot s;
  if (n_streaming < cfg.n_kv_heads) s.full_block = block_for(cache, seq, false, pos);
  if (n_streaming > 0) s.stream_block = block_for(cache, seq, true, pos);
  s.slot = pos % cfg.block_size;
  return s;
}

void write_kv_heads(KvCache& cache, int64_t layer, const KvSlot& at, const float* k, const float* v,
                    int64_t h0, int64_t h1) {
  const auto& cfg = cache.config();
  for (int64_t h = h0; h < h1; ++h) {
    const int32_t block = cache.streaming(layer, h) ? at.stream_block : at.full_block;
    store_slot(cache.k_tile(layer, block, h), cfg.dtype, true, k + h * cfg.head_dim, at.slot,
               cfg.block_size, cfg.head_dim);
    store_slot(cache.v_tile(layer, block, h), cfg.dtype, false, v + h * cfg.head_dim, at.slot,
               cfg.block_size, cfg.head_dim);
  }
}

void write_kv(KvCache& cache, int64_t layer, const ForwardBatch& batch, const float* k,
              const float* v) {
  const auto& cfg = cache.config();
  const int64_t row = cfg.n_kv_heads * cfg.head_dim;
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    const auto& seq = batch.seqs[static_cast<size_t>(batch.seq_index[static_cast<size_t>(t)])];
    const KvSlot at = resolve_kv_slot(cache, layer, seq, batch.positions[static_cast<size_t>(t)]);
    write_kv_heads(cache, layer, at, k + t * row, v + t * row, 0, cfg.n_kv_heads);
  }
}

void AttentionScratch::plan_groups(const ForwardBatch& batch) {
  // Query tokens form groups: up to kQueryTile consecutive batch tokens of one sequence at
  // consecutive positions (a prefill chunk); decode tokens are groups of one.
  group_starts_.clear();
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    const auto ts = static_cast<size_t>(t);
    const bool extends = t > 0 && t - group_starts_.back() < kQueryTile &&
                         batch.seq_index[ts] == batch.seq_index[ts - 1] &&
                         batch.positions[ts] == batch.positions[ts - 1] + 1;
    if (!extends) group_starts_.push_back(static_cast<int32_t>(t));
  }
  group_starts_.push_back(static_cast<int32_t>(batch.n_tokens()));
  if (batch.n_tokens() == 1 && chunk_keys_ > 0 && batch.positions[0] >= 0) {
    const int64_t n_chunks = batch.positions[0] / chunk_keys_ + 1;
    if (!holds_chunks(n_chunks))
      chunk_states_.resize(static_cast<size_t>(n_chunks * n_kv_heads_) * head_state_floats_);
  }
}

AttentionPass::AttentionPass(const KvCache& cache, int64_t layer, const ForwardBatch& batch,
                             const AttentionShape& shape, const float* q, float* out, int n_threads,
                             AttentionScratch& scratch)
    : cache_(cache),
      layer_(layer),
      batch_(batch),
      shape_(shape),
      q_(q),
      out_(out),
      scratch_(scratch),
      groups_(scratch.group_starts()),
      tk_(attention::tile_kernels()) {
  const auto& cfg = cache.config();
  n_groups_ = static_cast<int64_t>(groups_.size()) - 1;
  // Work items are (KV head, group, slice of its query heads). With few groups (decode)
  // there are fewer (group, KV head) pairs than threads can share evenly — and with
  // sparse attention one full head costs as much as all streaming ones together — so
  // the query heads of a KV head are split across threads. Each query row is computed
  // exactly as without the split or the grouping (same blocks, same key segments, same
  // order; the fold's rows are independent), so results do not change. Splitting makes
  // every thread read the KV head's tiles, so it is done only when needed: fewer pairs
  // than threads, or a sparse layer decoding a few tokens. A one-token decode over dense
  // heads splits the keys instead where its context spans several chunks (split-K,
  // kChunkSegments): (KV head, chunk) items, each KV head read once, merged per head by
  // merge_item with the bits of an unsplit pass. (Used in place of a static split by KV
  // head too, on 2 threads and 4 KV heads it was 15-30% slower from memory: the static
  // split stays where every thread has a head of its own.)
  const int64_t n_pairs = n_groups_ * shape.n_kv_heads;
  const int64_t n_rep = shape.n_heads / shape.n_kv_heads;
  const bool sparse_layer = cfg.modes.n_streaming_in_layer(layer) > 0;
  n_split_ = (n_pairs < n_threads || (sparse_layer && batch.n_tokens() < 4 * n_threads))
                 ? std::min<int64_t>(n_rep, n_threads)
                 : 1;
  n_items_ = n_pairs * n_split_;
  const int64_t chunk_keys = scratch.chunk_keys();
  if (n_split_ > 1 && n_groups_ == 1 && batch.n_tokens() == 1 && !sparse_layer &&
      chunk_keys == cfg.block_size * tk_.fold_blocks * kChunkSegments) {
    const int64_t n_chunks = batch.positions[0] / chunk_keys + 1;
    if (n_chunks > 1 && scratch.holds_chunks(n_chunks)) {
      n_chunk_split_ = n_chunks;
      n_split_ = 1;
      n_items_ = shape.n_kv_heads * n_chunks;
    }
  }
}

void AttentionPass::run_item(int64_t item, int tid) const {
  const KvCache& cache = cache_;
  const auto& cfg = cache.config();
  const int64_t layer = layer_;
  const ForwardBatch& batch = batch_;
  const AttentionShape& shape = shape_;
  const float* q = q_;
  float* out = out_;
  const std::vector<int32_t>& groups = groups_;
  const int64_t n_groups = n_groups_, n_split = n_split_;
  const int64_t hd = shape.head_dim;
  const int64_t bs = cfg.block_size;
  const int64_t n_rep = shape.n_heads / shape.n_kv_heads;
  const int64_t q_row = shape.n_heads * hd;
  const ScratchLayout lay = layout(shape, bs);
  const attention::TileKernels& tk = tk_;
  const int64_t fold_blocks = tk.fold_blocks;
  // A quantized cache's keys are folded as stored (int8 scores against the query quantized
  // once per item), its values as bf16 tiles once dequantized.
  const bool quantized = kv_quant::quantized(cfg.dtype);
  const attention::TileElem elem = cfg.dtype == DType::F16    ? attention::TileElem::f16
                                   : cfg.dtype == DType::BF16 ? attention::TileElem::bf16
                                   : cfg.dtype == DType::Q8_0 ? attention::TileElem::q8_keys
                                   : cfg.dtype == DType::Q4_0 ? attention::TileElem::q4_keys
                                                              : attention::TileElem::f32;
  const size_t tile_bytes = cache.tile_bytes();
  const attention::DequantTile dequant =
      quantized ? attention::kv_dequant().of(cfg.dtype) : nullptr;
  float* buf = scratch_.thread_buffer(tid);
  const int64_t dq_elems = attention::dequant_tile_elems(bs, hd);
  auto* vtiles = reinterpret_cast<uint16_t*>(buf + lay.tiles);
  float* qbuf = buf + lay.q;
  float* scores = buf + lay.scores;
  float* acc = buf + lay.acc;
  float* mx = buf + lay.max;
  float* sum = buf + lay.sum;
  auto* q8 = reinterpret_cast<int8_t*>(buf + lay.q8);
  float* q8_scale = buf + lay.q8_scale;
  auto* q8_sum = reinterpret_cast<int32_t*>(buf + lay.q8_sum);
  const int64_t n_q8_groups = quantized ? hd / kv_quant::group_size(hd) : 0;
  int64_t nr = n_rep;  // query rows per token in the current item (its slice)
  auto fold = [&](std::span<const int32_t> table, int64_t g, int64_t bi0, int64_t j0, int64_t j1,
                  int64_t i0, int64_t i1, int64_t first_keys = 0, int64_t next0 = 0,
                  int64_t next1 = 0) {
    attention::FoldTile tile;
    // The next fold's tiles: a tile is one 4 KiB page or less at the default shape,
    // where the hardware prefetcher stops, so without a prefetch every tile starts with a
    // full memory latency (decode attention at 4K context took twice as long). Spread
    // through the fold's loads (FoldTile::next) rather than issued in a burst before it,
    // the prefetches overlap its arithmetic: a decode fold streaming bf16 tiles from
    // memory ran 100-110 -> 142-147 GFLOP/s (attention_fold_bench, blocks:16384 rows:8).
    for (int64_t bi = next0; bi < next1; ++bi) {
      const int32_t block = table[static_cast<size_t>(bi)];
      tile.next[tile.n_next++] = cache.k_tile(layer, block, g);
      tile.next[tile.n_next++] = cache.v_tile(layer, block, g);
    }
    tile.next_bytes = static_cast<int64_t>(tile_bytes);
    tile.n_blocks = static_cast<int>((j1 + bs - 1) / bs);
    for (int b = 0; b < tile.n_blocks; ++b) {
      const int32_t block = table[static_cast<size_t>(bi0 + b)];
      tile.kt[b] = cache.k_tile(layer, block, g);
      tile.v[b] = cache.v_tile(layer, block, g);
      if (quantized) {
        // Values dequantized here, one fold's tiles at a time, into this thread's scratch.
        uint16_t* vd = vtiles + b * dq_elems;
        dequant(static_cast<const uint8_t*>(tile.v[b]), false, bs, hd, vd);
        tile.v[b] = vd;
      }
    }
    tile.q = qbuf + i0 * nr * hd;
    if (quantized)
      tile.q8 = attention::QueryQ8{q8, q8_scale, q8_sum}.rows_from(i0 * nr, hd, n_q8_groups);
    tile.n_q = (i1 - i0) * nr;
    tile.elem = elem;
    tile.block_size = bs;
    tile.head_dim = hd;
    tile.j0 = j0;
    tile.j1 = j1;
    if (first_keys > 0 && first_keys < j1 - j0) {
      tile.rows_per_token = nr;
      tile.first_row_keys = first_keys;
    }
    tile.scale = shape.scale;
    tile.max = mx + i0 * nr;
    tile.sum = sum + i0 * nr;
    tile.acc = acc + i0 * nr * hd;
    tile.p = scores;
    tk.fold(tile);
  };
  // Split-K items are (KV head, chunk) of the one group; others (KV head, group, slice).
  const int64_t n_chunk_split = n_chunk_split_;
  const int64_t split_chunk = n_chunk_split > 0 ? item % n_chunk_split : 0;
  const int64_t pair = n_chunk_split > 0 ? item / n_chunk_split : item / n_split;
  const int64_t slice = n_chunk_split > 0 ? 0 : item % n_split;
  const int64_t grp = pair % n_groups;
  const int64_t g = pair / n_groups;
  const int64_t r0 = n_rep * slice / n_split, r1 = n_rep * (slice + 1) / n_split;
  nr = r1 - r0;
  const int64_t t0 = groups[static_cast<size_t>(grp)], t1 = groups[static_cast<size_t>(grp) + 1];
  const int64_t n_group = t1 - t0;
  const auto& seq = batch.seqs[static_cast<size_t>(batch.seq_index[static_cast<size_t>(t0)])];
  for (int64_t i = 0; i < n_group; ++i) {
    std::memcpy(qbuf + i * nr * hd, q + (t0 + i) * q_row + (g * n_rep + r0) * hd,
                static_cast<size_t>(nr * hd) * sizeof(float));
  }
  if (quantized) attention::quantize_query_q8(qbuf, n_group * nr, hd, q8, q8_scale, q8_sum);
  const int64_t rows = n_group * nr;
  const RowStates chunk{mx, sum, acc};
  clear_rows(chunk, rows, hd);
  RowStates result = chunk;  // what the output is read from: the merged states if any
  const int64_t pos0 = batch.positions[static_cast<size_t>(t0)];
  if (!cache.streaming(layer, g)) {
    // Keys are folded in segments of fold_blocks blocks from position 0, the same
    // segments for every token however tokens are grouped, so a token's result does
    // not depend on its group. Segments the group's first token sees whole are
    // folded for all its tokens; in the rest, each token sees keys up to its own
    // position (causal), and tokens that see none of a segment sit it out.
    const int64_t seg = bs * fold_blocks;
    const int64_t ctx_first = pos0 + 1, ctx_last = pos0 + n_group;
    const int64_t n_segs = (ctx_last + seg - 1) / seg;
    const int64_t last_block = (ctx_last - 1) / bs;
    // Chunks of kChunkSegments segments, each folded from a clear state and merged in
    // order; a split-K item folds one chunk and leaves its state for merge_item.
    const int64_t n_chunks = (n_segs + kChunkSegments - 1) / kChunkSegments;
    const RowStates merged{buf + lay.merged_max, buf + lay.merged_sum, buf + lay.merged_acc};
    if (n_chunks > 1 && n_chunk_split == 0) {
      clear_rows(merged, rows, hd);
      result = merged;
    }
    const int64_t c0 = n_chunk_split > 0 ? split_chunk : 0;
    const int64_t c1 = n_chunk_split > 0 ? split_chunk + 1 : n_chunks;
    for (int64_t ci = c0; ci < c1; ++ci) {
      if (ci > c0) clear_rows(chunk, rows, hd);
      const int64_t si_end = std::min(n_segs, (ci + 1) * kChunkSegments);
      for (int64_t si = ci * kChunkSegments; si < si_end; ++si) {
        const int64_t s0 = si * seg, s1 = std::min(s0 + seg, ctx_last);
        const int64_t next0 = (si + 1) * fold_blocks;
        const int64_t next1 = std::min(last_block + 1, next0 + fold_blocks);
        const int64_t i0 = std::max<int64_t>(0, s0 - pos0);  // first token with pos >= s0
        const int64_t first_keys = std::min(s1, pos0 + i0 + 1) - s0;
        fold(seq.block_table, g, s0 / bs, 0, s1 - s0, i0, n_group, s1 <= ctx_first ? 0 : first_keys,
             next0, std::max(next0, next1));
      }
      if (n_chunk_split > 0) {
        float* st = scratch_.chunk_state(g, ci, n_chunk_split);
        std::copy(mx, mx + rows, st);
        std::copy(sum, sum + rows, st + rows);
        std::copy(acc, acc + rows * hd, st + 2 * rows);
        return;  // merge_item writes the output
      }
      if (n_chunks > 1) merge_rows(merged, mx, sum, acc, rows, hd);
    }
  } else {
    // Keys [0, sink_end) and [window_begin, pos], segment by segment in position
    // order (the full heads' segments). A segment's keys from both ranges form one
    // fold when the ranges touch, so with the window reaching back to the sinks this
    // is exactly the full loop.
    const int64_t seg = bs * fold_blocks;
    for (int64_t i = 0; i < n_group; ++i) {
      const int64_t pos = pos0 + i, n_ctx = pos + 1;
      const StreamingRange r = streaming_range(pos, cfg.modes.sink, cfg.modes.window);
      auto fold_keys = [&](int64_t a, int64_t b) {  // keys [a, b) of one segment
        const int64_t bi0 = a / bs;
        fold(seq.stream_table, g, bi0, a - bi0 * bs, b - bi0 * bs, i, i + 1);
      };
      const int64_t n_segs = (n_ctx + seg - 1) / seg;
      for (int64_t si = 0; si < n_segs; ++si) {
        const int64_t b0 = si * seg, b1 = std::min(n_ctx, b0 + seg);
        if (b1 <= r.window_begin && b0 >= r.sink_end) {
          si = r.window_begin / seg - 1;  // jump to the window's first segment
          continue;
        }
        const int64_t s1 = std::min(b1, r.sink_end);      // sink part: [b0, s1)
        const int64_t w0 = std::max(b0, r.window_begin);  // window part: [w0, b1)
        if (s1 > b0 && w0 <= s1) {
          fold_keys(b0, b1);
        } else {
          if (s1 > b0) fold_keys(b0, s1);
          if (w0 < b1) fold_keys(w0, b1);
        }
      }
    }
  }
  for (int64_t i = 0; i < n_group; ++i) {
    for (int64_t r = 0; r < nr; ++r) {
      float* o = out + (t0 + i) * q_row + (g * n_rep + r0 + r) * hd;
      const int64_t row = i * nr + r;
      kernels::scale(o, result.acc + row * hd, 1.0f / result.sum[row], hd);
    }
  }
}

void AttentionPass::merge_item(int64_t g, int tid) const {
  const int64_t hd = shape_.head_dim, rows = shape_.n_heads / shape_.n_kv_heads;
  const ScratchLayout lay = layout(shape_, cache_.config().block_size);
  float* buf = scratch_.thread_buffer(tid);
  const RowStates merged{buf + lay.merged_max, buf + lay.merged_sum, buf + lay.merged_acc};
  clear_rows(merged, rows, hd);
  for (int64_t ci = 0; ci < n_chunk_split_; ++ci) {
    const float* st = scratch_.chunk_state(g, ci, n_chunk_split_);
    merge_rows(merged, st, st + rows, st + 2 * rows, rows, hd);
  }
  const int64_t q_row = shape_.n_heads * hd;
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out_ + groups_[0] * q_row + (g * rows + r) * hd;
    kernels::scale(o, merged.acc + r * hd, 1.0f / merged.sum[r], hd);
  }
}

void AttentionPass::prefetch_decode_tiles(int64_t g0, int64_t g1) const {
  const auto& seq = batch_.seqs[static_cast<size_t>(batch_.seq_index[0])];
  const int64_t bs = cache_.config().block_size;
  const int64_t n_blocks = batch_.positions[0] / bs + 1;
  const int64_t first = std::min<int64_t>(n_blocks, tk_.fold_blocks);
  const size_t tile_bytes = cache_.tile_bytes();
  auto tile = [&](int64_t bi, int64_t g) {
    const int32_t block = seq.block_table[static_cast<size_t>(bi)];
    const uint8_t* k = cache_.k_tile(layer_, block, g);
    const uint8_t* v = cache_.v_tile(layer_, block, g);
    for (size_t off = 0; off < tile_bytes; off += 64) {
      prefetch_l1(k + off);
      prefetch_l1(v + off);
    }
  };
  for (int64_t g = g0; g < g1; ++g) {
    for (int64_t bi = 0; bi < first; ++bi) tile(bi, g);
    if (n_blocks > first) tile(n_blocks - 1, g);
  }
}

void paged_attention(const KvCache& cache, int64_t layer, const ForwardBatch& batch,
                     const AttentionShape& shape, const float* q, float* out, ThreadPool& pool,
                     AttentionScratch& scratch) {
  scratch.plan_groups(batch);
  const AttentionPass pass(cache, layer, batch, shape, q, out, pool.size(), scratch);
  // Items are ordered KV head first, then group, then slice, and each thread takes the
  // next one from a shared counter: causal prefill makes later tokens dearer and sparse
  // attention makes full heads dearer, so fixed ranges would be uneven, and a thread
  // that loses its core for a while (a shared machine) leaves its items to the others
  // instead of the others waiting. Consecutive items mostly share a KV head, so its
  // tiles stay in cache.
  std::atomic<int64_t> next_item{0};
  pool.run([&](int tid, int nt) {
    for (int64_t item;
         (item = next_item.fetch_add(1, std::memory_order_relaxed)) < pass.n_items();) {
      pass.run_item(item, tid);
    }
    if (pass.n_merge_items() == 0) return;
    pool.team_barrier();  // every chunk of a split-K decode is folded
    for (int64_t g = tid; g < pass.n_merge_items(); g += nt) pass.merge_item(g, tid);
  });
}

}  // namespace strata

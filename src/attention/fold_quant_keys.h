// The scores of a fold over q8_keys or q4_keys tiles (tile_kernels.h: a q8_0 or q4_0
// cache's keys as stored, in int8 or nibble dimension quads), written once over
// fold_simd.h's vector type V, which adds
//   I, Quads                       W int32 lanes; W keys' quads as dot4 takes them
//   load_q8_quads(p, mask, n)      the quads of W q8_0 keys at p (lanes outside mask: any
//   load_q4_quads(p, mask, n)      value), or of W q4_0 keys (nibbles k + 8, unsigned)
//   dot4(acc, quads, q4)           acc + each lane's four byte products with q4's bytes
//   kQ8KeyOffset                   what load_q8_quads adds to each key (128 where dot4
//                                  multiplies unsigned bytes: vpdpbusd), which the
//                                  group's query sum times it takes out again
//   iset1, to_float, kQuantScoreRows (rows per score pass; 2 key columns each)
// and the folds that use them: the AVX-512 BF16 fold pairs them with its bf16 value passes
// (tile_kernels_avx512bf16.cpp); fold_quant_keys_widened pairs them with fold_simd.h's
// f32 value passes over the values widened to float (AVX-512 without BF16, AVX2).
//
// Per row and key the arithmetic is the reference's (tile_kernels.cpp quant_key_dot):
// each group's dot product is exact in int32 and in float (|sum| <= 32 x 127 x 128 <
// 2^24), and the group sums are scaled and added by the same fma in the same order, so
// the scores are the reference's bits. Include only from an ISA's .cpp file (after V's
// header).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "attention/fold_simd.h"
#include "attention/tile_kernels.h"
#include "kv/kv_quant.h"

namespace strata::attention::simd {
namespace {

constexpr int kQuantScoreColumns = 2;

// How a quantized cache holds its keys: Elem and kSlotBytes (one key's quad), the offset
// each loaded key carries, and the load.
struct Q8Keys {
  using Elem = int8_t;
  static constexpr DType kType = DType::Q8_0;
  static constexpr int kSlotBytes = 4;
  template <class V>
  static constexpr int32_t kOffset = V::kQ8KeyOffset;
  template <class V>
  static auto load(const Elem* p, typename V::Mask m, int64_t n) {
    return V::load_q8_quads(p, m, n);
  }
};
struct Q4Keys {
  using Elem = uint8_t;
  static constexpr DType kType = DType::Q4_0;
  static constexpr int kSlotBytes = 2;
  template <class V>
  static constexpr int32_t kOffset = 8;
  template <class V>
  static auto load(const Elem* p, typename V::Mask m, int64_t n) {
    return V::load_q4_quads(p, m, n);
  }
};

inline int32_t load_quad(const int8_t* p) {
  int32_t x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

// Folds of a longer head_dim go to the reference (the model's shape: every fold alike).
constexpr int64_t kMaxQuantHeadDim = 256;

// The query rows of one score pass (up to R), laid out for it: quad i of row r at
// quads[i * R + r], group g's scale and starting sum (the key offset times the query sum,
// negated) at [g * R + r], so the pass addresses every row from one pointer.
template <int R>
struct QueryPass {
  alignas(64) int32_t quads[kMaxQuantHeadDim / 4 * R];
  float scale[kMaxQuantHeadDim / 16 * R];
  int32_t start[kMaxQuantHeadDim / 16 * R];

  QueryPass(const QueryQ8& q, int64_t n_rows, int64_t hd, int64_t n_groups, int32_t key_offset) {
    for (int64_t r = 0; r < n_rows; ++r) {
      for (int64_t i = 0; i < hd / 4; ++i) quads[i * R + r] = load_quad(q.q + r * hd + 4 * i);
      for (int64_t g = 0; g < n_groups; ++g) {
        scale[g * R + r] = q.scale[r * n_groups + g];
        start[g * R + r] = -key_offset * q.sum[r * n_groups + g];
      }
    }
  }
};

// Scores of the pass's first RR rows against C key columns: per group of the keys'
// scales, one int32 chain per (row, column) over the group's dimension quads, then
// s = fma(float(sum), query scale x key scale, s) through the score rows (masked: a short
// column's spare lanes are the next column's keys), times f.scale after the last group.
template <class V, class Keys, int R, int RR, int C>
inline void quant_scores_tile(const FoldTile& f, const QueryPass<R>& q,
                              const KeyColumn<typename Keys::Elem>* col, float* p, int64_t ldp,
                              LinePrefetcher& shared_pf) {
  LinePrefetchPass pf(shared_pf);
  const int64_t hd = f.head_dim, bs = f.block_size;
  const int64_t group = kv_quant::group_size(hd), n_groups = hd / group;
  const size_t scales_at = kv_quant::scale_offset(Keys::kType, bs, hd);
  const int64_t quad_row = bs * Keys::kSlotBytes;  // bytes per 4 dimensions of bs keys
  typename V::Mask m[C];
  const uint16_t* ks[C];  // the column's first key's scale of group 0
#pragma GCC unroll 2
  for (int c = 0; c < C; ++c) {
    m[c] = V::first(col[c].n_valid);
    const int64_t slot = (f.j0 + col[c].p_off) % bs;
    const auto* tile = reinterpret_cast<const uint8_t*>(col[c].k - Keys::kSlotBytes * slot);
    ks[c] = reinterpret_cast<const uint16_t*>(tile + scales_at) + slot;
  }
  const int32_t* quads = q.quads;
  for (int64_t g = 0; g < n_groups; ++g) {
    typename V::I a[RR][C];
#pragma GCC unroll 8
    for (int r = 0; r < RR; ++r) {
      const auto start = V::iset1(q.start[g * R + r]);
#pragma GCC unroll 2
      for (int c = 0; c < C; ++c) a[r][c] = start;
    }
    for (int64_t d = g * group; d < (g + 1) * group; d += 4, quads += R) {
      pf.step();
      typename V::Quads k[C];
#pragma GCC unroll 2
      for (int c = 0; c < C; ++c)
        k[c] = Keys::template load<V>(col[c].k + d / 4 * quad_row, m[c], col[c].n_valid);
#pragma GCC unroll 8
      for (int r = 0; r < RR; ++r) {
#pragma GCC unroll 2
        for (int c = 0; c < C; ++c) a[r][c] = V::dot4(a[r][c], k[c], quads[r]);
      }
    }
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c) {
      const auto kscale = V::load_elems(ks[c] + g * bs, m[c], col[c].n_valid);
#pragma GCC unroll 8
      for (int r = 0; r < RR; ++r) {
        const auto w = V::mul(kscale, V::set1(q.scale[g * R + r]));
        float* dst = p + r * ldp + col[c].p_off;
        const auto dot = V::to_float(a[r][c]);
        auto s = g == 0 ? V::mul(dot, w) : V::fma(dot, w, V::maskz_load(dst, m[c]));
        if (g == n_groups - 1) s = V::mul(s, V::set1(f.scale));
        store_first<V>(dst, col[c].n_valid, s);
      }
    }
  }
}

// One pass's rr rows (1..R) against C columns.
template <class V, class Keys, int R, int C, int RR = R>
inline void quant_scores_pass(int64_t rr, const FoldTile& f, const QueryPass<R>& q,
                              const KeyColumn<typename Keys::Elem>* col, float* p, int64_t ldp,
                              LinePrefetcher& pf) {
  if (rr == RR) return quant_scores_tile<V, Keys, R, RR, C>(f, q, col, p, ldp, pf);
  if constexpr (RR > 1) quant_scores_pass<V, Keys, R, C, RR - 1>(rr, f, q, col, p, ldp, pf);
}

// The prefetcher's steps in the score passes: one per dimension quad of each pass.
template <class V>
inline int64_t quant_score_steps(const FoldTile& f) {
  const int64_t keys = f.j1 - f.j0, strip = kQuantScoreColumns * V::W;
  return (f.n_q + V::kQuantScoreRows - 1) / V::kQuantScoreRows * ((keys + strip - 1) / strip) *
         (f.head_dim / 4);
}

// kQuantScoreRows rows per pass (the last pass the rest), each against all the fold's
// keys, kQuantScoreColumns key columns at a time. Needs head_dim <= kMaxQuantHeadDim.
template <class V, class Keys>
inline void quant_scores(const FoldTile& f, int64_t ldp, LinePrefetcher& pf) {
  constexpr int R = V::kQuantScoreRows;
  const int64_t hd = f.head_dim, n_groups = hd / kv_quant::group_size(hd);
  for (int64_t r0 = 0; r0 < f.n_q; r0 += R) {
    const int64_t rr = std::min<int64_t>(R, f.n_q - r0);
    const QueryPass<R> q(f.q8.rows_from(r0, hd, n_groups), rr, hd, n_groups,
                         Keys::template kOffset<V>);
    float* p = f.p + r0 * ldp;
    KeyColumns<V, typename Keys::Elem, Keys::kSlotBytes> columns(f);
    KeyColumn<typename Keys::Elem> col[kQuantScoreColumns];
    for (int nc; (nc = columns.next(col, kQuantScoreColumns)) > 0;) {
      if (nc == 2) {
        quant_scores_pass<V, Keys, R, 2>(rr, f, q, col, p, ldp, pf);
      } else {
        quant_scores_pass<V, Keys, R, 1>(rr, f, q, col, p, ldp, pf);
      }
    }
  }
}

// A fold's multiplications with quantized-key scores and Base's softmax and value passes.
template <class V, class Keys, class Base>
struct QuantKeyDots : Base {
  static int64_t prefetch_steps(const FoldTile& f) {
    return quant_score_steps<V>(f) + Base::value_prefetch_steps(f);
  }
  void scores(const FoldTile& f, int64_t ldp, LinePrefetcher& pf) const {
    quant_scores<V, Keys>(f, ldp, pf);
  }
};

// Quantized-key tiles where the values are folded in f32: the fold's bf16 value tiles widened
// to float (exact) in the f32 layout, then fold_elems with bf16-rounded weights, as
// fold_bf16_widened. Shapes beyond its buffer go to the reference (the model's shape:
// every fold alike).
template <class V, class Keys>
void fold_quant_keys_widened(const FoldTile& f) {
  const int64_t hd = f.head_dim, bs = f.block_size, tile = hd * bs;
  // (An odd block size's last pair widens one slot past its block: room for it.)
  if (kMaxFoldBlocks * tile + hd > kMaxWidenedBf16) return reference_tile_kernels().fold(f);
  if (hd > kMaxQuantHeadDim) return reference_tile_kernels().fold(f);
  alignas(64) float buf[kMaxWidenedBf16];
  FoldTile wide = f;
  for (int b = 0; b < f.n_blocks; ++b) {
    const auto* vp = static_cast<const uint16_t*>(f.v[b]);
    float* vb = buf + b * tile;
    // Pair row m holds slots 2m and 2m + 1; only the fold's slots are widened.
    const int64_t lo = std::clamp<int64_t>(f.j0 - b * bs, 0, bs),
                  hi = std::clamp<int64_t>(f.j1 - b * bs, 0, bs);
    for (int64_t m = lo / 2; m < (hi + 1) / 2; ++m)
      split_pairs<V>(vp + m * hd * 2, vb + 2 * m * hd, vb + (2 * m + 1) * hd, hd);
    wide.v[b] = vb;
  }
  fold_elems<V>(wide, QuantKeyDots<V, Keys, FmaDots<V, float, true>>{});
}

// The fold of q8_keys or q4_keys tiles with f32 value passes.
template <class V>
void fold_quant_keys_widened(const FoldTile& f) {
  if (f.elem == TileElem::q4_keys) return fold_quant_keys_widened<V, Q4Keys>(f);
  fold_quant_keys_widened<V, Q8Keys>(f);
}

}  // namespace
}  // namespace strata::attention::simd

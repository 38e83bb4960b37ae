// The AVX-512 VNNI row tile and 2 x 4 register block shared by the 512-element group
// layouts against Q8_0_X16A activations (blocks.h): Q4_0_X16 and Q8_0_X16
// (interleaved_avx512.cpp), Q4_1_X16, Q5_0_X16, Q5_1_X16, IQ4_NL_X16 and the K pairs
// Q4_K_X16P, Q5_K_X16P, IQ4_XS_X16P (legacy_x16_avx512.cpp). A layout supplies W:
//   using Group;                              // one group of 16 blocks of one row
//   static constexpr int kOffsetShift;        // unsigned quants are q + (1 << shift); -1: none
//   static constexpr bool kHasMin;            // the group has fp16 offsets m[b] (Q4_1, Q5_1)
//   static constexpr bool kSplitChains;       // gemm_block: two vpdpbusd chains per output
//   static void quants(const Group&, __m512i (&q)[8]);   // the 8 quant vectors
//   static void vec_pair(const Group&, int c, __m512i low4, __m512i& lo, __m512i& hi);
//                                             // nibble layouts: vectors c and c + 4 (c < 4),
//                                             // the low and high nibbles of one load; or
//   static __m512i vec(const Group&, int k, __m512i low4);  // quant vector k alone (Q8_0:
//                                             // vec_pair's 8 activation registers would spill)
//   static void factors(const Group&, __m512& d, __m512& m);  // optional: the lanes' scales
//                                             // (and offsets); default: fp16 d[16] (and m[16])
// Per group and (row, token): 8 vpdpbusd accumulate all 16 blocks at once into one int32
// lane per block, starting from -offset x the activation's block sums (which cancels the
// unsigned offset), then one convert, one scale multiply and one fma, and with offsets one
// more fma of m_w by d_a x the activation's block sum (that product is per token, so a
// GEMM block computes it once for its rows). The integer lanes are exact and the
// float steps follow the layouts' scalar models in order (ref::*_x16_vec_dot), so every
// output is bit-identical to them, whatever the tile, batch or thread split.
// Included by kernel files compiled for AVX-512, so it has internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/prefetch.h"
#include "kernels/quant/avx512_util.h"
#include "kernels/quant/blocks.h"

namespace strata::kernels::avx512 {
namespace {

// One group's weights: q[k] pairs with activation vector k (elements 4k..4k+3 of each block).
struct GroupWeights {
  __m512i q[8];
  __m512 d;
  __m512 m;  // kHasMin layouts only
};

// 64 bytes as two 32-byte halves, for the GEMVs of the nibble layouts: groups of 288
// bytes (Q4_0) put half the groups' vectors across two cache lines, and from DRAM 64-byte
// loads that straddle halved a thread's GEMV speed (13 vs 27 GB/s, kernels_matmul_bench
// matmul_dram). With the tensor data 32-byte aligned (GGUF's default alignment; files may
// choose less) and every group size and quant offset a multiple of 32, the halves never
// straddle; otherwise they are still correct (unaligned loads), only slower. (Q8_0_X16
// instead places its quants on a line, blocks.h.)
inline __m512i load64(const uint8_t* p) {
  const auto* h = reinterpret_cast<const __m256i*>(p);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(h)),
                            _mm256_loadu_si256(h + 1), 1);
}

// The low and high nibbles of the 64 bytes at qs + 64c: quant vectors c and c + 4 of the
// nibble layouts, from one load (vec loads them once for each).
inline void nibble_pair(const uint8_t* qs, int c, __m512i low4, __m512i& lo, __m512i& hi) {
  const __m512i v = load_in_register(qs + 64 * c);
  lo = _mm512_and_si512(v, low4);
  hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
}

// Cache line `line` of the group after g, into L1. A block's weight rows come from L2
// (the caller sizes row panels for it), and with two rows interleaved the L1 prefetcher
// leaves the block waiting on them: one line per vector pair of the next group measured
// +1-3% on the nibble layouts' GEMMs and +4% on a Q4_0 prefill. Q8_0's block (a line per
// vector, twice the lines) gained 3-5% alone but lost 1.6% in a two-thread prefill, so
// it does not prefetch.
template <class Group>
inline void prefetch_next_group_line(const Group* g, int line) {
  _mm_prefetch(reinterpret_cast<const char*>(g + 1) + 64 * line, _MM_HINT_T0);
}

// A group's lane factors as a GEMM may keep them: d, then m, 16 floats each.
constexpr int64_t kLaneFactorFloats = 32;

// A group's 16 lane scales d (and offsets m): W::factors, or the group's fp16 d and m.
template <class W>
inline void group_factors(const typename W::Group& g, __m512& d, __m512& m) {
  if constexpr (requires { W::factors(g, d, m); }) {
    W::factors(g, d, m);
  } else {
    d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.d)));
    if constexpr (W::kHasMin)
      m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.m)));
  }
}

// The lanes' starting values: -offset x the activation's block sums, or zero.
template <class W>
inline __m512i group_start(const BlockQ8_0x16A& a) {
  if constexpr (W::kOffsetShift < 0) {
    return _mm512_setzero_si512();
  } else {
    return _mm512_sub_epi32(_mm512_setzero_si512(),
                            _mm512_slli_epi32(_mm512_loadu_si512(a.sum), W::kOffsetShift));
  }
}

// acc += (d_w * d_a) * (exact integer dot of each block) [+ m_w * (d_a * activation sum)],
// lane b = block b.
template <class W>
inline __m512 fold_group(const GroupWeights& w, const BlockQ8_0x16A& a, __m512 acc) {
  // Two chains of 4 dpbusd (integer sums, so the split cannot change the result).
  __m512i lanes = group_start<W>(a), odd = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int k = 0; k < 8; k += 2) {
    lanes = _mm512_dpbusd_epi32(lanes, w.q[k], _mm512_loadu_si512(a.qs + 64 * k));
    odd = _mm512_dpbusd_epi32(odd, w.q[k + 1], _mm512_loadu_si512(a.qs + 64 * (k + 1)));
  }
  lanes = _mm512_add_epi32(lanes, odd);
  const __m512 ad = _mm512_loadu_ps(a.d);
  acc = _mm512_fmadd_ps(_mm512_mul_ps(w.d, ad), _mm512_cvtepi32_ps(lanes), acc);
  if constexpr (W::kHasMin) {
    acc =
        _mm512_fmadd_ps(w.m, _mm512_mul_ps(ad, _mm512_cvtepi32_ps(_mm512_loadu_si512(a.sum))), acc);
  }
  return acc;
}

// One row x T tokens: each group's weights are unpacked once and used for T tokens. With
// kPageKick, each group also starts the hardware prefetcher on the page ahead
// (core/prefetch.h).
template <class W, int T, bool kPageKick>
void gemm_tile(int64_t ng, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  __m512 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    if constexpr (kPageKick)
      prefetch_page_ahead(w + g * sizeof(typename W::Group), sizeof(typename W::Group));
    const auto& group = reinterpret_cast<const typename W::Group*>(w)[g];
    GroupWeights wg;
    W::quants(group, wg.q);
    group_factors<W>(group, wg.d, wg.m);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      acc[t] =
          fold_group<W>(wg, reinterpret_cast<const BlockQ8_0x16A*>(a + t * a_stride)[g], acc[t]);
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = hsum16(acc[t]);
}

// kRows rows x 4 tokens (the prefill GEMM's register block): per group and weight vector
// k, the 4 tokens' activation vectors are loaded once and each row's weight vector is
// unpacked once, feeding 4 x kRows independent vpdpbusd chains (one int32 accumulator per
// row and token, started from that token's offset term), then each (row, token) gets its
// convert, scale multiply and fma. Per 8 vpdpbusd that leaves ~2.5 other vector
// instructions (the row tile: ~8, and a load per vpdpbusd). The integer sums and the float
// steps are gemm_tile's, so every output is its bits. With kGivenFactors each row's lane
// factors come from `factors` (kLaneFactorFloats per group, rows span.n groups apart), unpacked
// by the caller once for all token tiles (FactorGroupRows).
template <class W, int kRows, bool kGivenFactors>
[[gnu::noinline]] void gemm_block(const BlockSpan& span, const uint8_t* w, int64_t w_stride,
                                  const float* factors, const uint8_t* a, int64_t a_stride,
                                  float* y, int64_t ldy) {
  using Group = typename W::Group;
  constexpr int T = 4;
  constexpr bool kSplit = W::kSplitChains;
  const __m512i mask = _mm512_set1_epi8(0x0f);
  __m512 acc[kRows][T];
  start_block(span, acc);
  // The span's first group at offset 0: the loop as over a whole row.
  w += span.begin * static_cast<int64_t>(sizeof(Group));
  a += span.begin * static_cast<int64_t>(sizeof(BlockQ8_0x16A));
  const int64_t n_groups = span.end - span.begin;
  for (int64_t g = 0; g < n_groups; ++g) {
    const BlockQ8_0x16A* ag[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      ag[t] = reinterpret_cast<const BlockQ8_0x16A*>(a + t * a_stride) + g;
    const Group* wg[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) wg[r] = reinterpret_cast<const Group*>(w + r * w_stride) + g;
    __m512i lanes[kRows][T], odd[kRows][T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m512i start = group_start<W>(*ag[t]);
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) lanes[r][t] = start, odd[r][t] = _mm512_setzero_si512();
    }
    if constexpr (requires(__m512i v) { W::vec_pair(*wg[0], 0, mask, v, v); }) {
      // Vectors c and c + 4 together, so each row's weight bytes are loaded once (two
      // loads per pair through vec).
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        __m512i av[2][T];
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
          for (int t = 0; t < T; ++t) {
            av[h][t] = _mm512_loadu_si512(ag[t]->qs + 64 * (c + 4 * h));
            __asm__("" : "+v"(av[h][t]));  // see below
          }
        }
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
          prefetch_next_group_line(wg[r], c);
          __m512i wv[2];
          W::vec_pair(*wg[r], c, mask, wv[0], wv[1]);
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) {
              if (kSplit && h == 1)
                odd[r][t] = _mm512_dpbusd_epi32(odd[r][t], wv[h], av[h][t]);
              else
                lanes[r][t] = _mm512_dpbusd_epi32(lanes[r][t], wv[h], av[h][t]);
            }
          }
        }
      }
    } else {
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        __m512i av[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          av[t] = _mm512_loadu_si512(ag[t]->qs + 64 * k);
          // In a register: folded into each vpdpbusd as a memory operand (GCC's choice),
          // the vector is loaded once per row, and the loads, not the vpdpbusd, set the pace.
          __asm__("" : "+v"(av[t]));
        }
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
          const __m512i wv = W::vec(*wg[r], k, mask);
#pragma GCC unroll 4
          for (int t = 0; t < T; ++t) {
            if (kSplit && k % 2 == 1)
              odd[r][t] = _mm512_dpbusd_epi32(odd[r][t], wv, av[t]);
            else
              lanes[r][t] = _mm512_dpbusd_epi32(lanes[r][t], wv, av[t]);
          }
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t)
        if (kSplit) lanes[r][t] = _mm512_add_epi32(lanes[r][t], odd[r][t]);
    }
    __m512 ad[T], ad_sum[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      ad[t] = _mm512_loadu_ps(ag[t]->d);
      if constexpr (W::kHasMin)
        ad_sum[t] = _mm512_mul_ps(ad[t], _mm512_cvtepi32_ps(_mm512_loadu_si512(ag[t]->sum)));
    }
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      __m512 dw, mw;
      if constexpr (kGivenFactors) {
        const float* f = factors + (r * span.n + span.begin + g) * kLaneFactorFloats;
        dw = _mm512_load_ps(f);
        if constexpr (W::kHasMin) mw = _mm512_load_ps(f + 16);
      } else {
        group_factors<W>(*wg[r], dw, mw);
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        acc[r][t] =
            _mm512_fmadd_ps(_mm512_mul_ps(dw, ad[t]), _mm512_cvtepi32_ps(lanes[r][t]), acc[r][t]);
      }
      if constexpr (W::kHasMin) {
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(mw, ad_sum[t], acc[r][t]);
      }
    }
  }
  finish_block(span, acc, y, ldy);
}

// The row kernel for gemm_rows_by_token_tiles and gemm_by_row_blocks (token_tiles.h).
template <class W>
struct GroupRows {
  // 2 rows x 4 tokens: 8 (Q8_0: 16) int32 and 8 float accumulators, 4 activation vectors.
  // 3 and 4 rows measured no faster (4 spills float accumulators).
  static constexpr int kBlockRows = 2;
  static constexpr bool kSplitLongRows = true;  // token_tiles.h
  template <int T, bool kPageKick>
  static void tile(int64_t ng, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
                   int64_t ldy) {
    gemm_tile<W, T, kPageKick>(ng, w, a, a_stride, y, ldy);
  }
  static void block(const BlockSpan& span, const uint8_t* w, int64_t w_stride, const uint8_t* a,
                    int64_t a_stride, float* y, int64_t ldy) {
    gemm_block<W, kBlockRows, false>(span, w, w_stride, nullptr, a, a_stride, y, ldy);
  }
};

// GroupRows for layouts whose lane factors take unpacking (W::factors: the K pairs'
// six-bit scales and mins times d and dmin), which a GEMM then does once per row and group
// (row_factors, into gemm_by_row_blocks' buffer), not once per 4-token tile: that unpacking
// was 9-14% of the Q4_K pair's GEMM block (25% of its GEMV, which keeps it: one token).
template <class W>
struct FactorGroupRows : GroupRows<W> {
  static constexpr int64_t kFactorFloats = kLaneFactorFloats;
  static void row_factors(int64_t ng, const uint8_t* w, int64_t w_stride, int64_t nr, float* out) {
    for (int64_t r = 0; r < nr; ++r) {
      const auto* groups = reinterpret_cast<const typename W::Group*>(w + r * w_stride);
      for (int64_t g = 0; g < ng; ++g) {
        __m512 d, m = _mm512_setzero_ps();
        group_factors<W>(groups[g], d, m);
        _mm512_store_ps(out + (r * ng + g) * kLaneFactorFloats, d);
        _mm512_store_ps(out + (r * ng + g) * kLaneFactorFloats + 16, m);
      }
    }
  }
  static void block_with(const BlockSpan& span, const uint8_t* w, int64_t w_stride,
                         const float* factors, const uint8_t* a, int64_t a_stride, float* y,
                         int64_t ldy) {
    gemm_block<W, GroupRows<W>::kBlockRows, true>(span, w, w_stride, factors, a, a_stride, y, ldy);
  }
};

}  // namespace
}  // namespace strata::kernels::avx512

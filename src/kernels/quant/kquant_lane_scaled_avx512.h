// The AVX-512 VNNI row tile and 2 x 4 register block shared by the repacked K-type layouts
// whose 16-element lanes carry one integer scale and at most one min (Q3_K_X16,
// IQ4_XS_X16; Q2_K_X16 with mins) against Q8_K_X16A activations. A layout supplies W:
//   using Block;                                          // one super-block of one row
//   static constexpr bool kHasMin;                        // lanes have mins (value - dmin x m)
//   static __m512i lane_scales(const Block&);             // int32 scale per lane, or with
//   static __m512i scale_min_words(const Block&);         // kHasMin: int16 words 4k, 4k + 1
//                                                         // sc_2k, sc_2k+1; 4k + 2, 4k + 3
//                                                         // m_2k, m_2k+1
//   static __m512i lane_starts(const BlockQ8_Kx16A&);     // cancels the quants' offset
//   static __m512i vec(const Block&, int k);              // quant vector k (unsigned)
//   static void vecs(const Block&, __m512i (&q)[4]);      // all four, each byte loaded once
//   static constexpr bool kOddTimes4;                     // vecs gives vectors 1, 3 times 4
// and the block's fp16 d (and dmin). Per super-block and (row, token): 4 vpdpbusd from the
// start; without mins one vpmulld by the scales, one convert and one fma by d_w x d_a; with
// mins (lane sums below 2^15) one byte shuffle of the sums' low words beside the
// activation's neg_sums and one vpmaddwd by the scale/min words, which gives lane 2k
// its scale pair and lane 2k + 1 its min pair, then one convert and one fma by d_w x d_a
// (even lanes) and dmin_w x d_a (odd lanes). Every integer step is exact and the float
// steps follow the layout's scalar model in the same order, so each output is its bits
// whatever the tile, batch or thread split.
// Included by kernel files compiled for AVX-512, so it has internal linkage.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/prefetch.h"
#include "kernels/quant/avx512_util.h"
#include "kernels/quant/blocks.h"

namespace strata::kernels::avx512 {
namespace {

// A block's fp16 d and dmin in the even and odd float lanes: the factors of
// scale_min_pairs' lanes, one conversion per block.
template <class W>
inline __m512 block_d_dmin_lanes(const typename W::Block& wb) {
  using Block = typename W::Block;
  static_assert(offsetof(Block, dmin) == offsetof(Block, d) + 2);
  int32_t both;
  std::memcpy(&both, &wb.d, 4);
  return _mm512_cvtph_ps(_mm256_set1_epi32(both));
}

// Lane 2k: sc_2k x sums_2k + sc_2k+1 x sums_2k+1; lane 2k + 1: m_2k x ns_2k + m_2k+1 x
// ns_2k+1. The sums' low words (exact: every lane sum is below 2^15 in magnitude) go to
// the low dword of qword k of the activation's last line (d, neg_sums), whose high dword
// holds ns_2k, ns_2k+1.
inline __m512i scale_min_pairs(__m512i sums, const BlockQ8_Kx16A& ab, __m512i words) {
  const __m512i low_words =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 4, 5, 0, 0, 0, 0, 8, 9, 12, 13, 0, 0, 0, 0));
  const __m512i pairs =
      _mm512_mask_shuffle_epi8(_mm512_loadu_si512(&ab.d), 0x0F0F0F0F0F0F0F0FULL, sums, low_words);
  return _mm512_madd_epi16(pairs, words);
}

// One token's lane sums from a block's quant vectors (W::vecs): one chain of 4 vpdpbusd
// from the lane starts. A layout with kOddTimes4 gives its odd vectors times 4 (2-bit
// fields masked in place: one shift for the four vectors instead of three); their sums
// start from 4 x the starts and are shifted right by 2 before the even vectors add theirs,
// exact since that sum is a multiple of 4. Integer sums, so the order cannot change the
// result.
template <class W>
inline __m512i lane_sums(const __m512i (&q)[4], const BlockQ8_Kx16A& ab) {
  if constexpr (W::kOddTimes4) {
    __m512i s = _mm512_slli_epi32(W::lane_starts(ab), 2);
    s = _mm512_dpbusd_epi32(s, q[1], _mm512_loadu_si512(ab.qs + 64));
    s = _mm512_dpbusd_epi32(s, q[3], _mm512_loadu_si512(ab.qs + 192));
    s = _mm512_srai_epi32(s, 2);
    s = _mm512_dpbusd_epi32(s, q[0], _mm512_loadu_si512(ab.qs));
    return _mm512_dpbusd_epi32(s, q[2], _mm512_loadu_si512(ab.qs + 128));
  } else {
    __m512i s = W::lane_starts(ab);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
      s = _mm512_dpbusd_epi32(s, q[k], _mm512_loadu_si512(ab.qs + 64 * k));
    return s;
  }
}

// One row x T tokens: each super-block's quant vectors and scales are unpacked once for
// T tokens.
template <class W, int T, bool kPageKick>
void lane_scaled_tile(int64_t nb, const typename W::Block* w, const uint8_t* a, int64_t a_stride,
                      float* y, int64_t ldy) {
  __m512 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const typename W::Block& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(wb));
    __m512i q[4];
    W::vecs(wb, q);
    if constexpr (!W::kHasMin) {
      const __m512i scales = W::lane_scales(wb);
      const __m512 dw = _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(wb.d)));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const BlockQ8_Kx16A& ab = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride)[b];
        const __m512i scaled = _mm512_mullo_epi32(lane_sums<W>(q, ab), scales);
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(ab.d)),
                                 _mm512_cvtepi32_ps(scaled), acc[t]);
      }
    } else {
      const __m512i words = W::scale_min_words(wb);
      const __m512 dd = block_d_dmin_lanes<W>(wb);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const BlockQ8_Kx16A& ab = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride)[b];
        const __m512i pairs = scale_min_pairs(lane_sums<W>(q, ab), ab, words);
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dd, _mm512_set1_ps(ab.d)), _mm512_cvtepi32_ps(pairs),
                                 acc[t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = hsum16(acc[t]);
}

// kRows rows x 4 tokens (the prefill GEMM's register block): per super-block and quant
// vector k, the 4 tokens' activation vectors are loaded once and each row's vector is
// unpacked once, feeding 4 x kRows independent vpdpbusd chains. The integer and float
// steps (and their order) are lane_scaled_tile's, so every output is its bits.
template <class W, int kRows>
[[gnu::noinline]] void lane_scaled_block(const BlockSpan& span, const uint8_t* w, int64_t w_stride,
                                         const uint8_t* a, int64_t a_stride, float* y,
                                         int64_t ldy) {
  using Block = typename W::Block;
  constexpr int T = 4;
  __m512 acc[kRows][T];
  start_block(span, acc);
  // The span's first group at offset 0: the loop as over a whole row.
  w += span.begin * static_cast<int64_t>(sizeof(Block));
  a += span.begin * static_cast<int64_t>(sizeof(BlockQ8_Kx16A));
  const int64_t n_groups = span.end - span.begin;
  for (int64_t b = 0; b < n_groups; ++b) {
    const BlockQ8_Kx16A* ab[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      ab[t] = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride) + b;
    const Block* wb[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) wb[r] = reinterpret_cast<const Block*>(w + r * w_stride) + b;
    __m512i lanes[kRows][T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m512i start = W::lane_starts(*ab[t]);
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) lanes[r][t] = start;
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      __m512i av[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        av[t] = _mm512_loadu_si512(ab[t]->qs + 64 * k);
        __asm__("" : "+v"(av[t]));  // see interleaved_avx512.cpp's gemm_block
      }
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        const __m512i q = W::vec(*wb[r], k);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) lanes[r][t] = _mm512_dpbusd_epi32(lanes[r][t], q, av[t]);
      }
    }
    __m512 ad[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) ad[t] = _mm512_set1_ps(ab[t]->d);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      if constexpr (!W::kHasMin) {
        const __m512i scales = W::lane_scales(*wb[r]);
        const __m512 dw = _mm512_set1_ps(_cvtsh_ss(wb[r]->d));
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const __m512i scaled = _mm512_mullo_epi32(lanes[r][t], scales);
          acc[r][t] =
              _mm512_fmadd_ps(_mm512_mul_ps(dw, ad[t]), _mm512_cvtepi32_ps(scaled), acc[r][t]);
        }
      } else {
        const __m512i words = W::scale_min_words(*wb[r]);
        const __m512 dd = block_d_dmin_lanes<W>(*wb[r]);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const __m512i pairs = scale_min_pairs(lanes[r][t], *ab[t], words);
          acc[r][t] =
              _mm512_fmadd_ps(_mm512_mul_ps(dd, ad[t]), _mm512_cvtepi32_ps(pairs), acc[r][t]);
        }
      }
    }
  }
  finish_block(span, acc, y, ldy);
}

// The row kernel for gemm_by_row_blocks and vec_dot_by_row_tile (token_tiles.h).
template <class W>
struct LaneScaledRows {
  static constexpr int kBlockRows = 2;
  static void block(const BlockSpan& span, const uint8_t* w, int64_t w_stride, const uint8_t* a,
                    int64_t a_stride, float* y, int64_t ldy) {
    lane_scaled_block<W, kBlockRows>(span, w, w_stride, a, a_stride, y, ldy);
  }
  template <int T, bool kPageKick>
  static void tile(int64_t nb, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
                   int64_t ldy) {
    lane_scaled_tile<W, T, kPageKick>(nb, reinterpret_cast<const typename W::Block*>(w), a,
                                      a_stride, y, ldy);
  }
};

}  // namespace
}  // namespace strata::kernels::avx512

// The AVX2 row tile shared by the 512-element group layouts (Q4_0_X16, Q8_0_X16, Q4_1_X16,
// Q5_0_X16, Q5_1_X16, IQ4_NL_X16 and the K pairs Q4_K_X16P, Q5_K_X16P, IQ4_XS_X16P) against
// Q8_0_X16A activations, for CPUs without AVX-512: each 64-byte vector of a group taken as
// two 32-byte halves (lanes 0-7 and 8-15; a K pair's two super-blocks). A layout supplies W:
//   using Group;                                             // 16 lanes of one row
//   static constexpr bool kHasMin;                           // lanes have offsets m
//   static void load(const Group&, int h, HalfWeights&);     // half h's 8 quant vectors,
//                                                            // lane scales d (and offsets m)
//   static __m256i dot(const HalfWeights&, const BlockQ8_0x16A&, int h);  // int32 lanes
// Per half-group and (row, token): acc = fma(d_w x d_a, lane, acc), and with offsets
// acc = fma(m_w, d_a x the activation's block sum, acc), the reference's float steps
// (legacy_x16_ref.cpp's reduce_groups, interleaved_ref.cpp's), so every output is
// bit-identical to it and to the AVX-512 kernels, whatever the tile, batch or thread split.
// Included by *_avx2.cpp files only, so it has internal linkage.
#pragma once

#include <immintrin.h>

#include "core/prefetch.h"
#include "kernels/quant/avx2_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/token_tiles.h"

namespace strata::kernels::STRATA_AVX2_NS {
namespace {

constexpr int kHalfBlocks = kX16Blocks / 2;  // blocks per 32-byte half

// One half-group's weights: q[k] pairs with activation vector k (elements 4k..4k+3 of
// each of the half's 8 blocks), and the 8 blocks' scales (and offsets).
struct HalfWeights {
  __m256i q[8];
  __m256 d;
  __m256 m;
};

#ifdef __AVXVNNI__
// AVX-VNNI (the *_avxvnni.cpp builds): start + the exact int32 dots of the 8 unsigned quant
// vectors with the activation's, in two vpdpbusd chains of 4. The layouts that need an
// offset take it in `start` (-offset x the block sums), as the AVX-512 kernels do.
inline __m256i vnni_dot(const HalfWeights& w, const BlockQ8_0x16A& a, int h, __m256i start) {
  __m256i lanes = start, odd = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int k = 0; k < 8; k += 2) {
    lanes = _mm256_dpbusd_avx_epi32(lanes, w.q[k], load256(a.qs + 64 * k + 32 * h));
    odd = _mm256_dpbusd_avx_epi32(odd, w.q[k + 1], load256(a.qs + 64 * (k + 1) + 32 * h));
  }
  return _mm256_add_epi32(lanes, odd);
}

// -(the half's block sums << shift): the start that cancels an unsigned offset 1 << shift.
inline __m256i offset_start(const BlockQ8_0x16A& a, int h, int shift) {
  return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_sll_epi32(load256(a.sum + kHalfBlocks * h),
                                                                   _mm_cvtsi32_si128(shift)));
}
#endif

inline __m256 half_scales(const uint16_t* d) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d)));
}

// One row x T tokens over the span's groups. Each half-group's weights are unpacked once
// and used for T tokens; acc[0] holds lanes (blocks) 0-7 of every group, acc[1] lanes 8-15,
// started from the span's carry after its first span and left there before its last
// (the same floats in the same order, so the same bits as one pass over the row); without
// kCarry the span is the whole row, as in a GEMV (no carry code there). With kPageKick each
// group also starts the hardware prefetcher on the page ahead (core/prefetch.h).
template <class W, int T, bool kPageKick, bool kCarry>
void gemm_tile(const BlockSpan& span, const uint8_t* w, const uint8_t* a, int64_t a_stride,
               float* y, int64_t ldy) {
  __m256 acc[2][T];
  if constexpr (kCarry) {
    start_halves(span, acc);
  } else {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
  }
  const int64_t g0 = span.begin, g1 = span.end;
  for (int64_t g = g0; g < g1; ++g) {
    const auto& group = reinterpret_cast<const typename W::Group*>(w)[g];
    if constexpr (kPageKick) prefetch_page_ahead(&group, sizeof(typename W::Group));
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      HalfWeights hw;
      W::load(group, h, hw);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const auto& ag = reinterpret_cast<const BlockQ8_0x16A*>(a + t * a_stride)[g];
        const __m256 ad = _mm256_loadu_ps(ag.d + kHalfBlocks * h);
        acc[h][t] = _mm256_fmadd_ps(_mm256_mul_ps(hw.d, ad), _mm256_cvtepi32_ps(W::dot(hw, ag, h)),
                                    acc[h][t]);
        if constexpr (W::kHasMin) {
          const __m256 sums = _mm256_cvtepi32_ps(load256(ag.sum + kHalfBlocks * h));
          acc[h][t] = _mm256_fmadd_ps(hw.m, _mm256_mul_ps(ad, sums), acc[h][t]);
        }
      }
    }
  }
  if constexpr (kCarry) {
    finish_halves(span, acc, y, ldy);
  } else {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      y[t * ldy] = hsum(_mm256_add_ps(acc[0][t], acc[1][t]));  // i + 8, then hsum's tree
  }
}

// The row kernel for gemm_rows_by_token_tiles (token_tiles.h), its 4-token tiles over
// spans of long rows.
template <class W>
struct GroupRows {
  static constexpr bool kSplitLongRows = true;
  template <int T, bool kPageKick>
  static void tile(int64_t ng, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
                   int64_t ldy) {
    gemm_tile<W, T, kPageKick, false>(BlockSpan{0, ng, ng, nullptr}, w, a, a_stride, y, ldy);
  }
  template <int T, bool kPageKick>
  static void span_tile(const BlockSpan& span, const uint8_t* w, const uint8_t* a, int64_t a_stride,
                        float* y, int64_t ldy) {
    gemm_tile<W, T, kPageKick, true>(span, w, a, a_stride, y, ldy);
  }
};

// A layout's vec_dot and gemm (kernels_avx2.h's signatures).
template <class W>
float group_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<GroupRows<W>>(n / kQKX16, w, a);
}

template <class W>
void group_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_tiles<GroupRows<W>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace
}  // namespace strata::kernels::STRATA_AVX2_NS

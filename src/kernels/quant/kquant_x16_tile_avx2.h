// The AVX2 row tile shared by the repacked K-type layouts (Q2_K_X16, Q3_K_X16, Q4_K_X16,
// Q5_K_X16, Q6_K_X16, IQ4_XS_X16) against Q8_K_X16A activations, for CPUs without AVX-512:
// each 64-byte vector of a super-block taken as two 32-byte halves, lanes (sub-blocks) 0-7
// and 8-15. A layout supplies W:
//   using Block;                                   // one super-block of one row
//   struct Shared;                                 // what both halves use (d, scale bytes)
//   static Shared shared(const Block&);
//   struct Half;                                   // one half's quant vectors and lane scales
//   static Half half(const Block&, const Shared&, int h);
//   static __m256 fold(const Half&, const Shared&, const BlockQ8_Kx16A&, int h, __m256 acc);
// fold adds one token's lanes, in the layout's scalar model's float steps, to acc. Each half
// is unpacked once per super-block and folded for every token of the tile; at the end the
// halves are added lane i + 8 first, then avx2_util's hsum tree (the scalar models' order),
// so every output is the scalar model's bits whatever the tile, batch or thread split.
// Included by *_avx2.cpp files only, so it has internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/prefetch.h"
#include "kernels/quant/avx2_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/token_tiles.h"

namespace strata::kernels::STRATA_AVX2_NS {
namespace {

// The products of 4 unsigned quant vectors with the activation's, summed in int16: lane j of
// half h as two int16 halves. The caller's bound: every int16 sum of 4 vpmaddubsw pairs fits
// (4 x 2 x max quant x 128 < 32768).
inline __m256i lane_sums_i16(const __m256i (&q)[4], const BlockQ8_Kx16A& a, int h) {
  const __m256i p01 = _mm256_add_epi16(_mm256_maddubs_epi16(q[0], load256(a.qs + 32 * h)),
                                       _mm256_maddubs_epi16(q[1], load256(a.qs + 64 + 32 * h)));
  const __m256i p23 = _mm256_add_epi16(_mm256_maddubs_epi16(q[2], load256(a.qs + 128 + 32 * h)),
                                       _mm256_maddubs_epi16(q[3], load256(a.qs + 192 + 32 * h)));
  return _mm256_add_epi16(p01, p23);
}

#ifdef __AVXVNNI__
// AVX-VNNI (the *_avxvnni.cpp builds): start + lane j of half h's exact dot product of the 4
// unsigned quant vectors with the activation's, in two vpdpbusd chains of 2.
inline __m256i vnni_lane_dots(const __m256i (&q)[4], const BlockQ8_Kx16A& a, int h, __m256i start) {
  __m256i even = _mm256_dpbusd_avx_epi32(start, q[0], load256(a.qs + 32 * h));
  __m256i odd = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), q[1], load256(a.qs + 64 + 32 * h));
  even = _mm256_dpbusd_avx_epi32(even, q[2], load256(a.qs + 128 + 32 * h));
  odd = _mm256_dpbusd_avx_epi32(odd, q[3], load256(a.qs + 192 + 32 * h));
  return _mm256_add_epi32(even, odd);
}
#endif

// Lane j of half h: the exact dot product of the 4 quant vectors with the activation's
// (lane_sums_i16 widened; with AVX-VNNI, vpdpbusd).
inline __m256i lane_dots_i16(const __m256i (&q)[4], const BlockQ8_Kx16A& a, int h) {
#ifdef __AVXVNNI__
  return vnni_lane_dots(q, a, h, _mm256_setzero_si256());
#else
  return _mm256_madd_epi16(lane_sums_i16(q, a, h), _mm256_set1_epi16(1));
#endif
}

// The same with vectors 0 + 1 and 2 + 3 widened separately, for quants whose 4-vector
// int16 sum could overflow (6-bit Q6_K: a pair of pairs is at most 32004).
inline __m256i lane_dots_i16_pairs(const __m256i (&q)[4], const BlockQ8_Kx16A& a, int h) {
#ifdef __AVXVNNI__
  return vnni_lane_dots(q, a, h, _mm256_setzero_si256());
#else
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i p01 = _mm256_add_epi16(_mm256_maddubs_epi16(q[0], load256(a.qs + 32 * h)),
                                       _mm256_maddubs_epi16(q[1], load256(a.qs + 64 + 32 * h)));
  const __m256i p23 = _mm256_add_epi16(_mm256_maddubs_epi16(q[2], load256(a.qs + 128 + 32 * h)),
                                       _mm256_maddubs_epi16(q[3], load256(a.qs + 192 + 32 * h)));
  return _mm256_add_epi32(_mm256_madd_epi16(p01, ones), _mm256_madd_epi16(p23, ones));
#endif
}

// acc + (d_w x d_a) x (lanes x the int32 lane scales): the scalar models' scale step.
inline __m256 fold_scaled(__m256i lanes, __m256i scales, float dw, float da, __m256 acc) {
  return _mm256_fmadd_ps(_mm256_set1_ps(dw * da),
                         _mm256_cvtepi32_ps(_mm256_mullo_epi32(lanes, scales)), acc);
}

// acc + (dmin_w x d_a / 32) x (the activation's bias lanes, -32 x the lane sums, x the
// int32 lane mins): the min step of the layouts with mins.
inline __m256 fold_mins(const BlockQ8_Kx16A& a, int h, __m256i mins, float dmw, __m256 acc) {
  return _mm256_fmadd_ps(_mm256_set1_ps(dmw * a.d * 0.03125f),
                         _mm256_cvtepi32_ps(_mm256_mullo_epi32(load256(a.bias + 8 * h), mins)),
                         acc);
}

// 8 bytes of half h of `bytes` (its low or high 64 bits), zero-extended to int32 lanes.
inline __m256i half_bytes_u32(__m128i bytes, int h) {
  return _mm256_cvtepu8_epi32(h == 0 ? bytes : _mm_unpackhi_epi64(bytes, bytes));
}

// Half h's 4 nibble vectors of the 4-bit K layouts (Q4_K_X16, Q5_K_X16, IQ4_XS_X16): the low
// nibbles of qs bytes 32h.. and 64 + 32h.. are vectors 0 and 1, their high nibbles 2 and 3.
inline void nibble_vectors(const uint8_t* qs, int h, __m256i (&q)[4]) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i l0 = load256(qs + 32 * h), l1 = load256(qs + 64 + 32 * h);
  q[0] = _mm256_and_si256(l0, low4);
  q[1] = _mm256_and_si256(l1, low4);
  q[2] = _mm256_and_si256(_mm256_srli_epi16(l0, 4), low4);
  q[3] = _mm256_and_si256(_mm256_srli_epi16(l1, 4), low4);
}

// Bytes `first` .. `first` + 7 of `bytes`, each twice: a K-quant's per-32-element scales (or
// mins) as the two 16-element lanes each covers; half_bytes_u32 widens a half's 8 of them.
inline __m128i lane_pair_bytes(__m128i bytes, int first) {
  return _mm_shuffle_epi8(
      bytes, _mm_add_epi8(_mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7),
                          _mm_set1_epi8(static_cast<char>(first))));
}

// One row x T tokens; acc[0] holds lanes 0-7, acc[1] lanes 8-15. With kPageKick each
// super-block also starts the hardware prefetcher on the page ahead (core/prefetch.h).
template <class W, int T, bool kPageKick>
void kquant_tile(int64_t nb, const typename W::Block* w, const uint8_t* a, int64_t a_stride,
                 float* y, int64_t ldy) {
  __m256 acc[2][T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const typename W::Block& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(wb));
    const typename W::Shared shared = W::shared(wb);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const typename W::Half half = W::half(wb, shared, h);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const BlockQ8_Kx16A& ab = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride)[b];
        acc[h][t] = W::fold(half, shared, ab, h, acc[h][t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t)
    y[t * ldy] = hsum(_mm256_add_ps(acc[0][t], acc[1][t]));  // i + 8, then hsum's tree
}

// The row kernel for gemm_rows_by_token_tiles (token_tiles.h).
template <class W>
struct KquantRows {
  template <int T, bool kPageKick>
  static void tile(int64_t nb, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
                   int64_t ldy) {
    kquant_tile<W, T, kPageKick>(nb, reinterpret_cast<const typename W::Block*>(w), a, a_stride, y,
                                 ldy);
  }
};

// A layout's vec_dot and gemm (kernels_avx2.h's signatures).
template <class W>
float kquant_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<KquantRows<W>>(n / kQK_K, w, a);
}

template <class W>
void kquant_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                 int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_tiles<KquantRows<W>>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace
}  // namespace strata::kernels::STRATA_AVX2_NS

// AVX-512 VNNI kernel for Q4_K_X16 weights against Q8_K_X16A activations (blocks.h): the
// bulk of llama.cpp's Q4_K_M files, repacked at load.
//
// Per super-block and row: 2 loads of nibbles split into the 4 quant vectors (an and, or
// a shift and an and), and the 6-bit scales and mins unpacked once and spread to one
// int32 lane per 16 elements (a byte shuffle and a widening each). Per token: 4 vpdpbusd
// (the quants are unsigned already) give lane j its sub-block half's dot product, one
// vpmulld applies the scales, one more multiplies the activation's bias (-32 x the lane's
// sum) by the mins, and two converts and two fmas accumulate, lane by lane. No horizontal
// sum per block, unlike the file layout's kernel (kquant_avx512.cpp). Every integer step is
// exact and the float steps are ref::q4_k_x16_vec_dot's, so each output is bit-identical to
// it, whatever the tile, batch or thread split.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see interleaved_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "core/prefetch.h"
#include "kernels/quant/avx512_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"
#include "kernels/quant/kquant_scales.h"
#include "kernels/quant/token_tiles.h"

namespace strata::kernels::avx512 {
namespace {

// One row x T tokens: each super-block's quants and scales are unpacked once for T tokens.
template <int T, bool kPageKick>
void gemm_tile(int64_t nb, const BlockQ4_Kx16* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  // Byte j / 2 (the scale) and 8 + j / 2 (the min) of unpack_q4_k_scales_mins for lane j.
  const __m128i sc_index = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m128i m_index = _mm_add_epi8(sc_index, _mm_set1_epi8(8));
  __m512 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4_Kx16& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(BlockQ4_Kx16));
    const __m128i packed = unpack_q4_k_scales_mins(wb.scales);
    const __m512i scales = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, sc_index));
    const __m512i mins = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, m_index));
    const float dw = _cvtsh_ss(wb.d), dmw = _cvtsh_ss(wb.dmin);
    const __m512i l0 = _mm512_loadu_si512(wb.qs), l1 = _mm512_loadu_si512(wb.qs + 64);
    const __m512i q0 = _mm512_and_si512(l0, low4), q1 = _mm512_and_si512(l1, low4);
    const __m512i q2 = _mm512_and_si512(_mm512_srli_epi16(l0, 4), low4);
    const __m512i q3 = _mm512_and_si512(_mm512_srli_epi16(l1, 4), low4);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const BlockQ8_Kx16A& ab = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride)[b];
      // Two chains of 2 (integer sums, so the split cannot change the result).
      __m512i lanes = _mm512_setzero_si512(), odd = _mm512_setzero_si512();
      lanes = _mm512_dpbusd_epi32(lanes, q0, _mm512_loadu_si512(ab.qs));
      odd = _mm512_dpbusd_epi32(odd, q1, _mm512_loadu_si512(ab.qs + 64));
      lanes = _mm512_dpbusd_epi32(lanes, q2, _mm512_loadu_si512(ab.qs + 128));
      odd = _mm512_dpbusd_epi32(odd, q3, _mm512_loadu_si512(ab.qs + 192));
      const __m512i scaled = _mm512_mullo_epi32(_mm512_add_epi32(lanes, odd), scales);
      const __m512i min_terms = _mm512_mullo_epi32(_mm512_loadu_si512(ab.bias), mins);
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(dw * ab.d), _mm512_cvtepi32_ps(scaled), acc[t]);
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(dmw * ab.d * 0.03125f), _mm512_cvtepi32_ps(min_terms),
                               acc[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = hsum16(acc[t]);
}

// The row kernel for gemm_rows_by_token_tiles (token_tiles.h).
struct Rows {
  template <int T, bool kPageKick>
  static void tile(int64_t nb, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
                   int64_t ldy) {
    gemm_tile<T, kPageKick>(nb, reinterpret_cast<const BlockQ4_Kx16*>(w), a, a_stride, y, ldy);
  }
};

}  // namespace

float q4_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void q4_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_tiles<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx512

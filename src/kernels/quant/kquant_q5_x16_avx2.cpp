// AVX2 kernel for Q5_K_X16 weights against Q8_K_X16A activations (blocks.h): the steps
// of kquant_q4_x16_avx2.cpp with the fifth bits or-ed into each quant vector (a broadcast,
// a byte shuffle, an and, a compare and an and per 32 of them). Quants at most 31 by
// activations at most 127 in magnitude: a pair is at most 7874 and two vectors' sums
// at most 15748, so vpmaddubsw and the int16 add cannot saturate. Bit-identical to
// ref::q5_k_x16_vec_dot and the AVX-512 kernel.
#include <immintrin.h>

#include "core/prefetch.h"
#include "kernels/quant/avx2_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kquant_scales.h"
#include "kernels/quant/token_tiles.h"

namespace strata::kernels::avx2 {
namespace {

inline __m256i load32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// One row x T tokens; acc[0] holds lanes 0-7, acc[1] lanes 8-15.
template <int T, bool kPageKick>
void gemm_tile(int64_t nb, const BlockQ5_Kx16* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const __m128i sc_index = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m128i m_index = _mm_add_epi8(sc_index, _mm_set1_epi8(8));
  __m256 acc[2][T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ5_Kx16& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(BlockQ5_Kx16));
    const __m128i packed = unpack_q4_k_scales_mins(wb.scales);
    const __m128i sc_bytes = _mm_shuffle_epi8(packed, sc_index);
    const __m128i m_bytes = _mm_shuffle_epi8(packed, m_index);
    const float dw = half_to_float(wb.d), dmw = half_to_float(wb.dmin);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i scales =
          _mm256_cvtepu8_epi32(h == 0 ? sc_bytes : _mm_unpackhi_epi64(sc_bytes, sc_bytes));
      const __m256i mins =
          _mm256_cvtepu8_epi32(h == 0 ? m_bytes : _mm_unpackhi_epi64(m_bytes, m_bytes));
      const __m256i l0 = load32(wb.qs + 32 * h), l1 = load32(wb.qs + 64 + 32 * h);
      const __m256i q0 = _mm256_and_si256(l0, low4), q1 = _mm256_and_si256(l1, low4);
      const __m256i q2 = _mm256_and_si256(_mm256_srli_epi16(l0, 4), low4);
      const __m256i q3 = _mm256_and_si256(_mm256_srli_epi16(l1, 4), low4);
      // The fifth bits of vector k, half h: the 32 bits at qh + 8k + 4h, one per byte.
      const __m256i q0h = _mm256_or_si256(q0, bit_bytes(wb.qh + 4 * h, 0x10));
      const __m256i q1h = _mm256_or_si256(q1, bit_bytes(wb.qh + 8 + 4 * h, 0x10));
      const __m256i q2h = _mm256_or_si256(q2, bit_bytes(wb.qh + 16 + 4 * h, 0x10));
      const __m256i q3h = _mm256_or_si256(q3, bit_bytes(wb.qh + 24 + 4 * h, 0x10));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const BlockQ8_Kx16A& ab = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride)[b];
        const __m256i p01 =
            _mm256_add_epi16(_mm256_maddubs_epi16(q0h, load32(ab.qs + 32 * h)),
                             _mm256_maddubs_epi16(q1h, load32(ab.qs + 64 + 32 * h)));
        const __m256i p23 =
            _mm256_add_epi16(_mm256_maddubs_epi16(q2h, load32(ab.qs + 128 + 32 * h)),
                             _mm256_maddubs_epi16(q3h, load32(ab.qs + 192 + 32 * h)));
        const __m256i lanes =
            _mm256_add_epi32(_mm256_madd_epi16(p01, ones), _mm256_madd_epi16(p23, ones));
        const __m256 scaled = _mm256_cvtepi32_ps(_mm256_mullo_epi32(lanes, scales));
        const __m256 min_terms =
            _mm256_cvtepi32_ps(_mm256_mullo_epi32(load32(ab.bias + 8 * h), mins));
        acc[h][t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * ab.d), scaled, acc[h][t]);
        acc[h][t] = _mm256_fmadd_ps(_mm256_set1_ps(dmw * ab.d * 0.03125f), min_terms, acc[h][t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t)
    y[t * ldy] = hsum(_mm256_add_ps(acc[0][t], acc[1][t]));  // i + 8, then hsum's tree
}

// The row kernel for gemm_rows_by_token_tiles (token_tiles.h).
struct Rows {
  template <int T, bool kPageKick>
  static void tile(int64_t nb, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
                   int64_t ldy) {
    gemm_tile<T, kPageKick>(nb, reinterpret_cast<const BlockQ5_Kx16*>(w), a, a_stride, y, ldy);
  }
};

}  // namespace

float q5_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void q5_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_tiles<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx2

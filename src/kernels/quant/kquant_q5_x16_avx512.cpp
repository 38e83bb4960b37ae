// AVX-512 VNNI kernel for Q5_K_X16 weights against Q8_K_X16A activations (blocks.h): the
// bulk of llama.cpp's Q5_K_M files, repacked at load. The steps of kquant_q4_x16_avx512.cpp,
// with the fifth bits added to each quant vector by one masked byte add, its mask one
// 64-bit word of qh. Bit-identical to ref::q5_k_x16_vec_dot.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see interleaved_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

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
void gemm_tile(int64_t nb, const BlockQ5_Kx16* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
  // Byte j / 2 (the scale) and 8 + j / 2 (the min) of unpack_q4_k_scales_mins for lane j.
  const __m128i sc_index = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m128i m_index = _mm_add_epi8(sc_index, _mm_set1_epi8(8));
  __m512 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ5_Kx16& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(BlockQ5_Kx16));
    const __m128i packed = unpack_q4_k_scales_mins(wb.scales);
    const __m512i scales = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, sc_index));
    const __m512i mins = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, m_index));
    const float dw = _cvtsh_ss(wb.d), dmw = _cvtsh_ss(wb.dmin);
    const __m512i l0 = _mm512_loadu_si512(wb.qs), l1 = _mm512_loadu_si512(wb.qs + 64);
    const __m512i q0 = _mm512_and_si512(l0, low4), q1 = _mm512_and_si512(l1, low4);
    const __m512i q2 = _mm512_and_si512(_mm512_srli_epi16(l0, 4), low4);
    const __m512i q3 = _mm512_and_si512(_mm512_srli_epi16(l1, 4), low4);
    // The fifth bits: 64-bit word k of qh is the byte mask of quant vector k.
    uint64_t hm[4];
    std::memcpy(hm, wb.qh, sizeof(hm));
    const __m512i q0h = _mm512_mask_add_epi8(q0, _cvtu64_mask64(hm[0]), q0, bit4);
    const __m512i q1h = _mm512_mask_add_epi8(q1, _cvtu64_mask64(hm[1]), q1, bit4);
    const __m512i q2h = _mm512_mask_add_epi8(q2, _cvtu64_mask64(hm[2]), q2, bit4);
    const __m512i q3h = _mm512_mask_add_epi8(q3, _cvtu64_mask64(hm[3]), q3, bit4);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const BlockQ8_Kx16A& ab = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride)[b];
      // Two chains of 2 (integer sums, so the split cannot change the result).
      __m512i lanes = _mm512_setzero_si512(), odd = _mm512_setzero_si512();
      lanes = _mm512_dpbusd_epi32(lanes, q0h, _mm512_loadu_si512(ab.qs));
      odd = _mm512_dpbusd_epi32(odd, q1h, _mm512_loadu_si512(ab.qs + 64));
      lanes = _mm512_dpbusd_epi32(lanes, q2h, _mm512_loadu_si512(ab.qs + 128));
      odd = _mm512_dpbusd_epi32(odd, q3h, _mm512_loadu_si512(ab.qs + 192));
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

}  // namespace strata::kernels::avx512

// AVX-512 VNNI kernel for Q5_K_X16 weights against Q8_K_X16A activations (blocks.h): the
// bulk of llama.cpp's Q5_K_M files, repacked at load. The steps of kquant_q4_x16_avx512.cpp,
// with the fifth bits added to each quant vector by one masked byte add, its mask one
// 64-bit word of qh. Bit-identical to ref::q5_k_x16_vec_dot. A GEMM's full 4-token tiles
// run as register blocks of 2 rows x 4 tokens (gemm_block).
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
void gemm_tile(int64_t nb, const BlockQ5_Kx16* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
  // Byte j / 2 (the scale) and 8 + j / 2 (the min) of unpack_q4_k_block_scales_mins for lane j.
  const __m128i sc_index = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m128i m_index = _mm_add_epi8(sc_index, _mm_set1_epi8(8));
  __m512 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ5_Kx16& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(BlockQ5_Kx16));
    // d, dmin and the scales in one load (the converts are _cvtsh_ss's).
    const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&wb));
    const __m128i packed = unpack_q4_k_block_scales_mins(head);
    const __m512i scales = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, sc_index));
    const __m512i mins = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, m_index));
    const __m128 dd = _mm_cvtph_ps(head);
    const float dw = _mm_cvtss_f32(dd), dmw = _mm_cvtss_f32(_mm_movehdup_ps(dd));
    const __m512i l0 = _mm512_loadu_si512(wb.qs), l1 = _mm512_loadu_si512(wb.qs + 64);
    const __m512i q0 = _mm512_and_si512(l0, low4), q1 = _mm512_and_si512(l1, low4);
    const __m512i q2 = _mm512_and_si512(_mm512_srli_epi16(l0, 4), low4);
    const __m512i q3 = _mm512_and_si512(_mm512_srli_epi16(l1, 4), low4);
    // The fifth bits: 64-bit word k of qh is the byte mask of quant vector k.
    const __m512i q0h = _mm512_mask_add_epi8(q0, load_mask64(wb.qh), q0, bit4);
    const __m512i q1h = _mm512_mask_add_epi8(q1, load_mask64(wb.qh + 8), q1, bit4);
    const __m512i q2h = _mm512_mask_add_epi8(q2, load_mask64(wb.qh + 16), q2, bit4);
    const __m512i q3h = _mm512_mask_add_epi8(q3, load_mask64(wb.qh + 24), q3, bit4);
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

// kRows rows x 4 tokens (the prefill GEMM's register block; see kquant_q4_x16_avx512.cpp's):
// per super-block and quant vector k, the 4 tokens' activation vectors are loaded once and
// each row's quant vector (with its fifth bits) is unpacked once, feeding 4 x kRows
// vpdpbusd chains. The scales and mins are applied in float: the integers convert exactly
// and so do their products (|31 x 128 x 16| x 63 and |32 x 16 x 128| x 63 < 2^24), so
// float(lanes) * float(scales) is gemm_tile's vpmulld and convert, bit for bit, in one
// multiply (a lane sum does not fit vpdpwssd's 16 bits here, as Q4_K's does). The fmas
// are gemm_tile's, so every output is its bits.
template <int kRows>
[[gnu::noinline]] void gemm_block(const BlockSpan& span, const uint8_t* w, int64_t w_stride,
                                  const uint8_t* a, int64_t a_stride, float* y, int64_t ldy) {
  constexpr int T = 4;
  const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
  const __m128i sc_index = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m128i m_index = _mm_add_epi8(sc_index, _mm_set1_epi8(8));
  const __m512 c32 = _mm512_set1_ps(0.03125f);
  __m512 acc[kRows][T];
  start_block(span, acc);
  // The span's first group at offset 0: the loop as over a whole row.
  w += span.begin * static_cast<int64_t>(sizeof(BlockQ5_Kx16));
  a += span.begin * static_cast<int64_t>(sizeof(BlockQ8_Kx16A));
  const int64_t n_groups = span.end - span.begin;
  for (int64_t b = 0; b < n_groups; ++b) {
    const BlockQ8_Kx16A* ab[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      ab[t] = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride) + b;
    const BlockQ5_Kx16* wb[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r)
      wb[r] = reinterpret_cast<const BlockQ5_Kx16*>(w + r * w_stride) + b;
    __m512i lanes[kRows][T];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) lanes[r][t] = _mm512_setzero_si512();
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
        const __m512i l = _mm512_loadu_si512(wb[r]->qs + 64 * (k % 2));
        const __m512i lo = _mm512_and_si512(k < 2 ? l : _mm512_srli_epi16(l, 4), low4);
        // 64-bit word k of qh: the byte mask of vector k's fifth bits
        const __m512i q = _mm512_mask_add_epi8(lo, load_mask64(wb[r]->qh + 8 * k), lo, bit4);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) lanes[r][t] = _mm512_dpbusd_epi32(lanes[r][t], q, av[t]);
      }
    }
    __m512 ad[T], bias[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      ad[t] = _mm512_set1_ps(ab[t]->d);
      bias[t] = _mm512_cvtepi32_ps(_mm512_loadu_si512(ab[t]->bias));
    }
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb[r]));
      const __m128i packed = unpack_q4_k_block_scales_mins(head);
      const __m512 scales =
          _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, sc_index)));
      const __m512 mins =
          _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, m_index)));
      const __m128 dd = _mm_cvtph_ps(head);
      const __m512 dw = _mm512_broadcastss_ps(dd);
      const __m512 dmw = _mm512_broadcastss_ps(_mm_movehdup_ps(dd));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m512 scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(lanes[r][t]), scales);
        const __m512 min_terms = _mm512_mul_ps(bias[t], mins);
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, ad[t]), scaled, acc[r][t]);
        acc[r][t] =
            _mm512_fmadd_ps(_mm512_mul_ps(_mm512_mul_ps(dmw, ad[t]), c32), min_terms, acc[r][t]);
      }
    }
  }
  finish_block(span, acc, y, ldy);
}

// The row kernel for gemm_rows_by_token_tiles and gemm_by_row_blocks (token_tiles.h).
struct Rows {
  static constexpr int kBlockRows = 2;
  static void block(const BlockSpan& span, const uint8_t* w, int64_t w_stride, const uint8_t* a,
                    int64_t a_stride, float* y, int64_t ldy) {
    gemm_block<kBlockRows>(span, w, w_stride, a, a_stride, y, ldy);
  }
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
  gemm_by_row_blocks<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx512

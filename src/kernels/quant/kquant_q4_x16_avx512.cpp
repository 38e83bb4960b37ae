// AVX-512 VNNI kernel for Q4_K_X16 weights against Q8_K_X16A activations (blocks.h): the
// bulk of llama.cpp's Q4_K_M files, repacked at load.
//
// Per super-block and row: 2 loads of nibbles split into the 4 quant vectors (an and, or
// a shift and an and), and the 6-bit scales and mins unpacked once and spread to one
// int32 lane per 16 elements (a byte shuffle and a widening each). Per token: 4 vpdpbusd
// (the quants are unsigned already) give lane j its sub-block half's dot product; it is
// converted and accumulated with d x sc x d_a, and the activation's bias (-32 x the lane's
// sum) times d_a / 32 with dmin x m (the row's factors are formed once per super-block, the
// token's once per token), lane by lane. No horizontal
// sum per block, unlike the file layout's kernel (kquant_avx512.cpp). Every integer step is
// exact and the float steps are ref::q4_k_x16_vec_dot's, so each output is bit-identical to
// it, whatever the tile, batch or thread split. A GEMM's full 4-token tiles run as register
// blocks of 2 rows x 4 tokens (gemm_block).
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
  // Byte j / 2 (the scale) and 8 + j / 2 (the min) of unpack_q4_k_block_scales_mins for lane j.
  const __m128i sc_index = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m128i m_index = _mm_add_epi8(sc_index, _mm_set1_epi8(8));
  __m512 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4_Kx16& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(BlockQ4_Kx16));
    // d, dmin and the scales in one load (the converts are _cvtsh_ss's).
    const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&wb));
    const __m128i packed = unpack_q4_k_block_scales_mins(head);
    const __m128 dd = _mm_cvtph_ps(head);
    // d x sc and dmin x m per lane (exact).
    const __m512 dsc =
        _mm512_mul_ps(_mm512_broadcastss_ps(dd),
                      _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, sc_index))));
    const __m512 dm =
        _mm512_mul_ps(_mm512_broadcastss_ps(_mm_movehdup_ps(dd)),
                      _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, m_index))));
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
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(lanes, odd)),
                               _mm512_mul_ps(dsc, _mm512_set1_ps(ab.d)), acc[t]);
      const __m512 bias = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(ab.bias)),
                                        _mm512_set1_ps(ab.d * 0.03125f));
      acc[t] = _mm512_fmadd_ps(dm, bias, acc[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = hsum16(acc[t]);
}

// kRows rows x 4 tokens (the prefill GEMM's register block): per super-block and quant
// vector k, the 4 tokens' activation vectors are loaded once (and kept in registers) and
// each row's quant vector is unpacked once, feeding 4 x kRows independent vpdpbusd
// chains; the scales and mins are unpacked once per row and the scalar scales broadcast
// once per row and per token. The integer steps and the float steps (and their order) are
// gemm_tile's, so every output is its bits.
template <int kRows>
[[gnu::noinline]] void gemm_block(const BlockSpan& span, const uint8_t* w, int64_t w_stride,
                                  const uint8_t* a, int64_t a_stride, float* y, int64_t ldy) {
  constexpr int T = 4;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m128i sc_index = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m128i m_index = _mm_add_epi8(sc_index, _mm_set1_epi8(8));
  __m512 acc[kRows][T];
  start_block(span, acc);
  // The span's first group at offset 0: the loop as over a whole row.
  w += span.begin * static_cast<int64_t>(sizeof(BlockQ4_Kx16));
  a += span.begin * static_cast<int64_t>(sizeof(BlockQ8_Kx16A));
  const int64_t n_groups = span.end - span.begin;
  for (int64_t b = 0; b < n_groups; ++b) {
    const BlockQ8_Kx16A* ab[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      ab[t] = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride) + b;
    const BlockQ4_Kx16* wb[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r)
      wb[r] = reinterpret_cast<const BlockQ4_Kx16*>(w + r * w_stride) + b;
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
        const __m512i q = _mm512_and_si512(k < 2 ? l : _mm512_srli_epi16(l, 4), low4);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) lanes[r][t] = _mm512_dpbusd_epi32(lanes[r][t], q, av[t]);
      }
    }
    // The token factors: d_a, and the bias times d_a / 32.
    __m512 ad[T], bias[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      ad[t] = _mm512_set1_ps(ab[t]->d);
      bias[t] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(ab[t]->bias)),
                              _mm512_set1_ps(ab[t]->d * 0.03125f));
    }
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      // The row factors: d x sc and dmin x m per lane (exact).
      const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb[r]));
      const __m128i packed = unpack_q4_k_block_scales_mins(head);
      const __m128 dd = _mm_cvtph_ps(head);
      const __m512 dsc = _mm512_mul_ps(
          _mm512_broadcastss_ps(dd),
          _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, sc_index))));
      const __m512 dm = _mm512_mul_ps(
          _mm512_broadcastss_ps(_mm_movehdup_ps(dd)),
          _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(packed, m_index))));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        acc[r][t] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(lanes[r][t]), _mm512_mul_ps(dsc, ad[t]), acc[r][t]);
        acc[r][t] = _mm512_fmadd_ps(dm, bias[t], acc[r][t]);
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
    gemm_tile<T, kPageKick>(nb, reinterpret_cast<const BlockQ4_Kx16*>(w), a, a_stride, y, ldy);
  }
};

}  // namespace

float q4_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void q4_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx512

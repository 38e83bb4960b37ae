// AVX-512 VNNI kernel for IQ4_XS_X16 weights against Q8_K_X16A activations (blocks.h):
// llama.cpp's IQ4_XS files, repacked at load.
//
// Per super-block and row: 2 loads of nibbles split into the 4 index vectors (an and, or a
// shift and an and), each looked up in the grid by one vpshufb on a table of value + 128
// (unsigned, for vpdpbusd's first operand), and the 8 scales unpacked once and spread to
// one int32 lane per 16 elements. Per token: one shift of the activation's bias (-32 x the
// lane's sum) to -128 x the sum, which cancels the +128, 4 vpdpbusd, one vpmulld by the
// signed scales, one convert and one fma, lane by lane. No horizontal sum per block, unlike
// the file layout's kernel (kquant_ext_avx512.cpp). Every integer step is exact and the
// float steps are ref::iq4_xs_x16_vec_dot's, so each output is bit-identical to it, whatever
// the tile, batch or thread split. A GEMM's full 4-token tiles run as register blocks of
// 2 rows x 4 tokens (gemm_block).
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

// kIQ4NLValues + 128, in every 128-bit lane (vpshufb looks up within lanes).
inline __m512i biased_grid() {
  return _mm512_broadcast_i32x4(
      _mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, -127, -115, -103, -90, -75, -59, -39, -15));
}

// Lane j's scale ls[j / 2] - 32, as int32.
inline __m512i lane_scales(const BlockIQ4_XSx16& wb) {
  const __m128i sc_index = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m128i bytes = _mm_shuffle_epi8(iq4_xs_scale_bytes(wb.scales_h, wb.scales_l), sc_index);
  return _mm512_sub_epi32(_mm512_cvtepu8_epi32(bytes), _mm512_set1_epi32(32));
}

// -128 x lane j's activation sum, the start that cancels the grid's +128.
inline __m512i lane_starts(const BlockQ8_Kx16A& ab) {
  return _mm512_slli_epi32(_mm512_loadu_si512(ab.bias), 2);
}

// One row x T tokens: each super-block's grid values and scales are unpacked once for T
// tokens.
template <int T, bool kPageKick>
void gemm_tile(int64_t nb, const BlockIQ4_XSx16* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), grid = biased_grid();
  __m512 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIQ4_XSx16& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(BlockIQ4_XSx16));
    const __m512i scales = lane_scales(wb);
    const float dw = _cvtsh_ss(wb.d);
    const __m512i l0 = _mm512_loadu_si512(wb.qs), l1 = _mm512_loadu_si512(wb.qs + 64);
    const __m512i q0 = _mm512_shuffle_epi8(grid, _mm512_and_si512(l0, low4));
    const __m512i q1 = _mm512_shuffle_epi8(grid, _mm512_and_si512(l1, low4));
    const __m512i q2 = _mm512_shuffle_epi8(grid, _mm512_and_si512(_mm512_srli_epi16(l0, 4), low4));
    const __m512i q3 = _mm512_shuffle_epi8(grid, _mm512_and_si512(_mm512_srli_epi16(l1, 4), low4));
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const BlockQ8_Kx16A& ab = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride)[b];
      // Two chains of 2 (integer sums, so the split cannot change the result).
      __m512i lanes = lane_starts(ab), odd = _mm512_setzero_si512();
      lanes = _mm512_dpbusd_epi32(lanes, q0, _mm512_loadu_si512(ab.qs));
      odd = _mm512_dpbusd_epi32(odd, q1, _mm512_loadu_si512(ab.qs + 64));
      lanes = _mm512_dpbusd_epi32(lanes, q2, _mm512_loadu_si512(ab.qs + 128));
      odd = _mm512_dpbusd_epi32(odd, q3, _mm512_loadu_si512(ab.qs + 192));
      const __m512i scaled = _mm512_mullo_epi32(_mm512_add_epi32(lanes, odd), scales);
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(dw * ab.d), _mm512_cvtepi32_ps(scaled), acc[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = hsum16(acc[t]);
}

// kRows rows x 4 tokens (the prefill GEMM's register block), as in kquant_q4_x16_avx512.cpp:
// per super-block and index vector k, the 4 tokens' activation vectors are loaded once and
// each row's vector is looked up once, feeding 4 x kRows independent vpdpbusd chains. The
// integer steps and the float steps (and their order) are gemm_tile's, so every output is
// its bits.
template <int kRows>
void gemm_block(int64_t nb, const uint8_t* w, int64_t w_stride, const uint8_t* a, int64_t a_stride,
                float* y, int64_t ldy) {
  constexpr int T = 4;
  const __m512i low4 = _mm512_set1_epi8(0x0f), grid = biased_grid();
  __m512 acc[kRows][T];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ8_Kx16A* ab[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      ab[t] = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride) + b;
    const BlockIQ4_XSx16* wb[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r)
      wb[r] = reinterpret_cast<const BlockIQ4_XSx16*>(w + r * w_stride) + b;
    __m512i lanes[kRows][T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m512i start = lane_starts(*ab[t]);
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
        const __m512i l = _mm512_loadu_si512(wb[r]->qs + 64 * (k % 2));
        const __m512i q =
            _mm512_shuffle_epi8(grid, _mm512_and_si512(k < 2 ? l : _mm512_srli_epi16(l, 4), low4));
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) lanes[r][t] = _mm512_dpbusd_epi32(lanes[r][t], q, av[t]);
      }
    }
    __m512 ad[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) ad[t] = _mm512_set1_ps(ab[t]->d);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const __m512i scales = lane_scales(*wb[r]);
      const __m512 dw = _mm512_set1_ps(_cvtsh_ss(wb[r]->d));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m512i scaled = _mm512_mullo_epi32(lanes[r][t], scales);
        acc[r][t] =
            _mm512_fmadd_ps(_mm512_mul_ps(dw, ad[t]), _mm512_cvtepi32_ps(scaled), acc[r][t]);
      }
    }
  }
  store_block_sums<kRows, T>(acc, y, ldy);
}

// The row kernel for gemm_rows_by_token_tiles and gemm_by_row_blocks (token_tiles.h).
struct Rows {
  static constexpr int kBlockRows = 2;
  static void block(int64_t nb, const uint8_t* w, int64_t w_stride, const uint8_t* a,
                    int64_t a_stride, float* y, int64_t ldy) {
    gemm_block<kBlockRows>(nb, w, w_stride, a, a_stride, y, ldy);
  }
  template <int T, bool kPageKick>
  static void tile(int64_t nb, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
                   int64_t ldy) {
    gemm_tile<T, kPageKick>(nb, reinterpret_cast<const BlockIQ4_XSx16*>(w), a, a_stride, y, ldy);
  }
};

}  // namespace

float iq4_xs_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void iq4_xs_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                     int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx512

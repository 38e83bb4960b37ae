// AVX2 kernel for Q3_K_X16 weights against Q8_K_X16A activations (blocks.h), for CPUs
// without AVX-512: the layout of kquant_q3_x16_avx512.cpp, each 64-byte vector taken as two
// 32-byte halves (lanes 0-7 and 8-15).
//
// Per half and (row, token): the quants + 4 (in [0, 7]; bit 2 spread from hmask as in
// kquant_q5_x16_avx2.cpp) by activations at most 127 in magnitude: a vpmaddubsw pair is at
// most 1778 and the 4 vectors' sum at most 7112, so the int16 adds cannot saturate; one
// vpmaddwd by ones widens to int32, and lane j starts from bias[j] / 8 (-4 x its activation
// sum, cancelling the +4). Integer steps are exact and the float steps are
// ref::q3_k_x16_vec_dot's (the halves added lane i + 8 first, then avx2_util's hsum tree),
// so every output is bit-identical to it and to the AVX-512 kernel.
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
void gemm_tile(int64_t nb, const BlockQ3_Kx16* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m256i low2 = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  __m256 acc[2][T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ3_Kx16& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(BlockQ3_Kx16));
    // The 16 bytes ending with the scales in both 128-bit lanes (kSixBitLanes).
    const __m256i sc_window = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales - 4)));
    const float dw = half_to_float(wb.d);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i two = _mm256_shuffle_epi8(
          sc_window, _mm256_load_si256(reinterpret_cast<const __m256i*>(kSixBitLanes.bytes) + h));
      const __m256i scales = _mm256_sub_epi32(
          _mm256_and_si256(_mm256_srlv_epi32(
                               two, _mm256_load_si256(
                                        reinterpret_cast<const __m256i*>(kSixBitLanes.shifts) + h)),
                           _mm256_set1_epi32(63)),
          _mm256_set1_epi32(32));
      const __m256i l = load32(wb.qs + 32 * h);
      // Vector k: bits 2k, 2k + 1 of l, and bit 2 from the 32 bits at hmask + 8k + 4h.
      __m256i q[4];
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        q[k] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l, 2 * k), low2),
                               bit_bytes(wb.hmask + 8 * k + 4 * h, 4));
      }
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const BlockQ8_Kx16A& ab = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride)[b];
        const __m256i p01 =
            _mm256_add_epi16(_mm256_maddubs_epi16(q[0], load32(ab.qs + 32 * h)),
                             _mm256_maddubs_epi16(q[1], load32(ab.qs + 64 + 32 * h)));
        const __m256i p23 =
            _mm256_add_epi16(_mm256_maddubs_epi16(q[2], load32(ab.qs + 128 + 32 * h)),
                             _mm256_maddubs_epi16(q[3], load32(ab.qs + 192 + 32 * h)));
        const __m256i lanes = _mm256_add_epi32(_mm256_madd_epi16(_mm256_add_epi16(p01, p23), ones),
                                               _mm256_srai_epi32(load32(ab.bias + 8 * h), 3));
        const __m256 scaled = _mm256_cvtepi32_ps(_mm256_mullo_epi32(lanes, scales));
        acc[h][t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * ab.d), scaled, acc[h][t]);
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
    gemm_tile<T, kPageKick>(nb, reinterpret_cast<const BlockQ3_Kx16*>(w), a, a_stride, y, ldy);
  }
};

}  // namespace

float q3_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void q3_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_tiles<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx2

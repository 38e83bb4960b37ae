// AVX2 kernel for IQ4_XS_X16 weights against Q8_K_X16A activations (blocks.h), for CPUs
// without AVX-512: the layout of kquant_iq4_x16_avx512.cpp, each 64-byte vector taken as
// two 32-byte halves (lanes 0-7 and 8-15).
//
// Per half and (row, token): the grid values (vpshufb on the signed table) enter vpmaddubsw
// as |v| with the activations' signs flipped where v < 0 (v is never 0): a pair is at most
// 2 x 127 x 127 = 32258, no saturation, but two vectors could overflow int16, so each is
// widened by vpmaddwd with ones on its own. Lane j is then the exact dot product of elements
// 16j .. 16j + 15, which the vpmulld by the signed scale, one convert and one fma finish.
// Integer steps are exact and the float steps are ref::iq4_xs_x16_vec_dot's (the halves
// added lane i + 8 first, then avx2_util's hsum tree), so every output is bit-identical to
// it and to the AVX-512 kernel.
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
void gemm_tile(int64_t nb, const BlockIQ4_XSx16* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const __m256i grid =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
  const __m128i sc_index = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m256i bias32 = _mm256_set1_epi32(32);
  __m256 acc[2][T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIQ4_XSx16& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(BlockIQ4_XSx16));
    const __m128i sc_bytes =
        _mm_shuffle_epi8(iq4_xs_scale_bytes(wb.scales_h, wb.scales_l), sc_index);
    const float dw = half_to_float(wb.d);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i scales = _mm256_sub_epi32(
          _mm256_cvtepu8_epi32(h == 0 ? sc_bytes : _mm_unpackhi_epi64(sc_bytes, sc_bytes)), bias32);
      const __m256i l0 = load32(wb.qs + 32 * h), l1 = load32(wb.qs + 64 + 32 * h);
      __m256i v[4];
      v[0] = _mm256_shuffle_epi8(grid, _mm256_and_si256(l0, low4));
      v[1] = _mm256_shuffle_epi8(grid, _mm256_and_si256(l1, low4));
      v[2] = _mm256_shuffle_epi8(grid, _mm256_and_si256(_mm256_srli_epi16(l0, 4), low4));
      v[3] = _mm256_shuffle_epi8(grid, _mm256_and_si256(_mm256_srli_epi16(l1, 4), low4));
      __m256i mag[4];
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) mag[k] = _mm256_sign_epi8(v[k], v[k]);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const BlockQ8_Kx16A& ab = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride)[b];
        __m256i p[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const __m256i ak = _mm256_sign_epi8(load32(ab.qs + 64 * k + 32 * h), v[k]);
          p[k] = _mm256_madd_epi16(_mm256_maddubs_epi16(mag[k], ak), ones);
        }
        const __m256i lanes =
            _mm256_add_epi32(_mm256_add_epi32(p[0], p[1]), _mm256_add_epi32(p[2], p[3]));
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
    gemm_tile<T, kPageKick>(nb, reinterpret_cast<const BlockIQ4_XSx16*>(w), a, a_stride, y, ldy);
  }
};

}  // namespace

float iq4_xs_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void iq4_xs_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                     int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_tiles<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx2

// AVX2 kernel for Q6_K_X16 weights against Q8_K_X16A activations (blocks.h), for CPUs
// without AVX-512: the layout of kquant_x16_avx512.cpp, each 64-byte vector taken as two
// 32-byte halves (sub-blocks 0-7 and 8-15).
//
// Per half and (row, token): the 4 quant vectors are unpacked as in the AVX-512 kernel
// (a nibble mask, a shift of the high bits, an and and an or), vpmaddubsw multiplies them
// by the activations (unsigned quants at most 63 by signed activations at most 127 in
// magnitude, the Q8_K quantizer's clamp: a pair is at most 16002, two pairs 32004, so
// summing vectors 0+1 and 2+3 in int16 cannot saturate), vpmaddwd by ones widens each to
// int32, and lane j is sub-block j's biased dot product, which the activation's bias[j]
// corrects; then the scale multiply, one convert and one fma per half, lane by lane. The
// file layout's AVX2 kernel (kquant_avx2.cpp) needs about twice the instructions,
// including a horizontal sum per block. Integer steps are exact and the float steps are
// ref::q6_k_x16_vec_dot's (the two halves added lane i + 8 first, then avx2_util's hsum
// tree), so every output is bit-identical to it and to the AVX-512 kernel.
#include <immintrin.h>

#include "core/prefetch.h"
#include "kernels/quant/avx2_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/token_tiles.h"

namespace strata::kernels::avx2 {
namespace {

inline __m256i load32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// One row x T tokens; acc[0] holds lanes (sub-blocks) 0-7, acc[1] lanes 8-15.
template <int T, bool kPageKick>
void gemm_tile(int64_t nb, const BlockQ6_Kx16* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), bits45 = _mm256_set1_epi8(0x30),
                ones = _mm256_set1_epi16(1);
  __m256 acc[2][T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6_Kx16& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(BlockQ6_Kx16));
    // The scales (the block's last bytes) first, as in the AVX-512 kernel.
    const __m128i scale_bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales));
    const float dw = half_to_float(wb.d);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i scales =
          _mm256_cvtepi8_epi32(h == 0 ? scale_bytes : _mm_unpackhi_epi64(scale_bytes, scale_bytes));
      const __m256i l0 = load32(wb.ql + 32 * h), l1 = load32(wb.ql + 64 + 32 * h);
      const __m256i hb = load32(wb.qh + 32 * h);
      // Vector k: the low 4 bits from l0/l1, the high 2 bits from bits 2k, 2k+1 of hb moved
      // to bits 4-5 (16-bit shifts; what crosses a byte lands outside bits 4-5).
      const __m256i q0 = _mm256_or_si256(_mm256_and_si256(l0, low4),
                                         _mm256_and_si256(_mm256_slli_epi16(hb, 4), bits45));
      const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l1, low4),
                                         _mm256_and_si256(_mm256_slli_epi16(hb, 2), bits45));
      const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                                         _mm256_and_si256(hb, bits45));
      const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                                         _mm256_and_si256(_mm256_srli_epi16(hb, 2), bits45));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const BlockQ8_Kx16A& ab = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride)[b];
        const __m256i p01 = _mm256_add_epi16(_mm256_maddubs_epi16(q0, load32(ab.qs + 32 * h)),
                                             _mm256_maddubs_epi16(q1, load32(ab.qs + 64 + 32 * h)));
        const __m256i p23 =
            _mm256_add_epi16(_mm256_maddubs_epi16(q2, load32(ab.qs + 128 + 32 * h)),
                             _mm256_maddubs_epi16(q3, load32(ab.qs + 192 + 32 * h)));
        const __m256i lanes = _mm256_add_epi32(
            load32(ab.bias + 8 * h),
            _mm256_add_epi32(_mm256_madd_epi16(p01, ones), _mm256_madd_epi16(p23, ones)));
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
    gemm_tile<T, kPageKick>(nb, reinterpret_cast<const BlockQ6_Kx16*>(w), a, a_stride, y, ldy);
  }
};

}  // namespace

float q6_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void q6_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_tiles<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx2

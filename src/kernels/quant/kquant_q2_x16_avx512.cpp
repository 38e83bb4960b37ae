// AVX-512 VNNI kernel for Q2_K_X16 weights against Q8_K_X16A activations (blocks.h):
// llama.cpp's Q2_K files, repacked at load.
//
// Per super-block and row: one load of the quants gives the 4 quant vectors (a 16-bit
// shift and an and each), one 16-byte load of the scale bytes the scale/min words (a
// shuffle, a shift and an and), and d and dmin one conversion. Per token: 4 vpdpbusd (the
// quants are unsigned already), one shuffle of the lane sums beside the activation's
// neg_sums, one vpmaddwd by the scale/min words (scale pairs in the even lanes, min
// pairs in the odd), one convert and one fma. No horizontal sum per block, unlike the file
// layout's kernel (kquant_ext_avx512.cpp). Bit-identical to ref::q2_k_x16_vec_dot. The row
// tile and the 2 x 4 GEMM block are kquant_lane_scaled_avx512.h's.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see interleaved_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"
#include "kernels/quant/kquant_lane_scaled_avx512.h"
#include "kernels/quant/token_tiles.h"

namespace strata::kernels::avx512 {
namespace {

struct Q2x16 {
  using Block = BlockQ2_Kx16;
  static constexpr bool kHasMin = true;
  // Words 4k, 4k + 1: scales[2k] & 15, scales[2k + 1] & 15; 4k + 2, 4k + 3: the same bytes
  // >> 4 (the mins). One byte shuffle of the 16 bytes in every 128-bit lane (lane L serves
  // k = 2L, 2L + 1: bytes 4L .. 4L + 3), a shift of the min words and an and.
  static __m512i scale_min_words(const Block& wb) {
    const __m512i bytes =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
    const __m512i spread = _mm512_add_epi8(
        _mm512_broadcast_i32x4(
            _mm_setr_epi8(0, -128, 1, -128, 0, -128, 1, -128, 2, -128, 3, -128, 2, -128, 3, -128)),
        _mm512_set_epi32(0x0c0c0c0c, 0x0c0c0c0c, 0x0c0c0c0c, 0x0c0c0c0c, 0x08080808, 0x08080808,
                         0x08080808, 0x08080808, 0x04040404, 0x04040404, 0x04040404, 0x04040404, 0,
                         0, 0, 0));  // -128 + 4L keeps bit 7: zero
    const __m512i words = _mm512_srlv_epi16(_mm512_shuffle_epi8(bytes, spread),
                                            _mm512_set1_epi64(0x0004000400000000LL));
    return _mm512_and_si512(words, _mm512_set1_epi16(15));
  }
  static constexpr bool kOddTimes4 = true;
  static __m512i lane_starts(const BlockQ8_Kx16A&) { return _mm512_setzero_si512(); }
  static __m512i vec(const Block& wb, int k) {
    const __m512i l = _mm512_loadu_si512(wb.qs);
    return _mm512_and_si512(_mm512_srli_epi16(l, 2 * k), _mm512_set1_epi8(3));
  }
  // Vectors 0 and 2 as they are, 1 and 3 times 4 (lane_sums): one shift for the four.
  static void vecs(const Block& wb, __m512i (&q)[4]) {
    const __m512i l = load_in_register(wb.qs), h = _mm512_srli_epi16(l, 4);
    q[0] = _mm512_and_si512(l, _mm512_set1_epi8(3));
    q[1] = _mm512_and_si512(l, _mm512_set1_epi8(12));
    q[2] = _mm512_and_si512(h, _mm512_set1_epi8(3));
    q[3] = _mm512_and_si512(h, _mm512_set1_epi8(12));
  }
};
using Rows = LaneScaledRows<Q2x16>;

}  // namespace

float q2_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void q2_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx512

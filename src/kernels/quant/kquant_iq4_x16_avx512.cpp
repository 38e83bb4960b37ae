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
// the tile, batch or thread split. The row tile and the 2 x 4 GEMM block are
// kquant_lane_scaled_avx512.h's.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see interleaved_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"
#include "kernels/quant/kquant_lane_scaled_avx512.h"
#include "kernels/quant/token_tiles.h"

namespace strata::kernels::avx512 {
namespace {

struct Iq4x16 {
  using Block = BlockIQ4_XSx16;
  static constexpr bool kHasMin = false;
  static constexpr bool kOddTimes4 = false;
  // Lane j's scale ls[j / 2] - 32, as int32, from one 16-byte load of the block's start
  // (d, scales_h, scales_l, then quants): byte j takes nibble j / 2 of scales_l (scales_l[j /
  // 4] shifted by 4 (j / 2 % 2)) and bits 2 (j / 2), 2 (j / 2) + 1 of scales_h (byte 2 + j /
  // 8 shifted by 2 (j / 2 % 4)); the shifts are per 16-bit pair of lanes (vpsrlvw).
  static __m512i lane_scales(const Block& wb) {
    const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&wb));
    const __m128i low = _mm_and_si128(
        _mm_srlv_epi16(
            _mm_shuffle_epi8(head, _mm_setr_epi8(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7)),
            _mm_setr_epi16(0, 4, 0, 4, 0, 4, 0, 4)),
        _mm_set1_epi8(0x0f));
    const __m128i high = _mm_and_si128(
        _mm_srlv_epi16(
            _mm_shuffle_epi8(head, _mm_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3)),
            _mm_setr_epi16(0, 2, 4, 6, 0, 2, 4, 6)),
        _mm_set1_epi8(0x03));
    const __m128i ls = _mm_or_si128(low, _mm_slli_epi16(high, 4));
    return _mm512_sub_epi32(_mm512_cvtepu8_epi32(ls), _mm512_set1_epi32(32));
  }
  // -128 x lane j's activation sum, the start that cancels the grid's +128.
  static __m512i lane_starts(const BlockQ8_Kx16A& ab) {
    return _mm512_slli_epi32(_mm512_loadu_si512(ab.bias), 2);
  }
  // Index vector k (low nibbles of qs[64 (k % 2)...] for k < 2, high ones after) looked up
  // in kIQ4NLValues + 128, in every 128-bit lane (vpshufb looks up within lanes).
  static __m512i vec(const Block& wb, int k) {
    const __m512i grid = _mm512_broadcast_i32x4(
        _mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, -127, -115, -103, -90, -75, -59, -39, -15));
    const __m512i l = _mm512_loadu_si512(wb.qs + 64 * (k % 2));
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    return _mm512_shuffle_epi8(grid, _mm512_and_si512(k < 2 ? l : _mm512_srli_epi16(l, 4), low4));
  }
  static void vecs(const Block& wb, __m512i (&q)[4]) {
    const __m512i grid = _mm512_broadcast_i32x4(
        _mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, -127, -115, -103, -90, -75, -59, -39, -15));
    const __m512i low4 = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 2
    for (int c = 0; c < 2; ++c) {
      const __m512i l = load_in_register(wb.qs + 64 * c);
      q[c] = _mm512_shuffle_epi8(grid, _mm512_and_si512(l, low4));
      q[c + 2] = _mm512_shuffle_epi8(grid, _mm512_and_si512(_mm512_srli_epi16(l, 4), low4));
    }
  }
};
using Rows = LaneScaledRows<Iq4x16>;

}  // namespace

float iq4_xs_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void iq4_xs_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                     int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx512

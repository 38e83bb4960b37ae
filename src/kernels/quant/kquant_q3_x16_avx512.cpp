// AVX-512 VNNI kernel for Q3_K_X16 weights against Q8_K_X16A activations (blocks.h):
// llama.cpp's Q3_K files, repacked at load.
//
// Per super-block and row: one load of the low 2 bits gives the 4 quant vectors (a 16-bit
// shift and an and each), the bit 2 of each is one masked add of 4 (64-bit word k of hmask
// is vector k's byte mask), and the 16 scales are unpacked once into one int32 lane each.
// Per token: one shift of the activation's bias (-32 x the lane's sum) to -4 x the sum,
// which cancels the quants' +4, 4 vpdpbusd, one vpmulld by the signed scales, one convert
// and one fma, lane by lane. No horizontal sum per block, unlike the file layout's kernel
// (kquant_ext_avx512.cpp). Every integer step is exact and the float steps are
// ref::q3_k_x16_vec_dot's, so each output is bit-identical to it, whatever the tile, batch
// or thread split. The row tile and the 2 x 4 GEMM block are kquant_lane_scaled_avx512.h's.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see interleaved_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/quant/amx_lane_gemm.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"
#include "kernels/quant/kquant_lane_scaled_avx512.h"
#include "kernels/quant/kquant_scales.h"
#include "kernels/quant/token_tiles.h"

namespace strata::kernels::avx512 {
namespace {

struct Q3x16 {
  using Block = BlockQ3_Kx16;
  static constexpr bool kHasMin = false;
  static constexpr bool kOddTimes4 = false;
  // Lane j's scale sc[j] - 32, as int32, from the six-bit string (the 16 bytes that end with
  // it start in the quants, so the load stays in the block).
  static __m512i lane_scales(const Block& wb) {
    return _mm512_sub_epi32(six_bit_lanes(wb.scales - 4), _mm512_set1_epi32(32));
  }
  // -4 x lane j's activation sum (bias[j] is -32 x it, so the shift is exact).
  static __m512i lane_starts(const BlockQ8_Kx16A& ab) {
    return _mm512_srai_epi32(_mm512_loadu_si512(ab.bias), 3);
  }
  // Quant vector k + 4 (in [0, 7]): the low 2 bits from one load of qs, bit 2 from
  // hmask's 64-bit word k.
  static __m512i vec(const Block& wb, int k) {
    const __m512i l = _mm512_loadu_si512(wb.qs);
    const __m512i low = _mm512_and_si512(_mm512_srli_epi16(l, 2 * k), _mm512_set1_epi8(3));
    return _mm512_mask_add_epi8(low, load_mask64(wb.hmask + 8 * k), low, _mm512_set1_epi8(4));
  }
  static void vecs(const Block& wb, __m512i (&q)[4]) {
    const __m512i l = load_in_register(wb.qs);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i low = _mm512_and_si512(_mm512_srli_epi16(l, 2 * k), _mm512_set1_epi8(3));
      q[k] = _mm512_mask_add_epi8(low, load_mask64(wb.hmask + 8 * k), low, _mm512_set1_epi8(4));
    }
  }
};
using Rows = LaneScaledRows<Q3x16>;

// amx_lane_gemm.h's layout: the quants re-centred (q - 4) and the scales as float.
struct AmxQ3 {
  using Block = BlockQ3_Kx16;
  static void signed_quants(const Block& wb, __m512i (&q)[4]) {
    Q3x16::vecs(wb, q);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) q[k] = _mm512_sub_epi8(q[k], _mm512_set1_epi8(4));
  }
  static __m512 lane_scales(const Block& wb) {
    return _mm512_cvtepi32_ps(Q3x16::lane_scales(wb));
  }
};

}  // namespace

float q3_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void q3_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

STRATA_DEFINE_AMX_LANE_GEMMS(q3_k_x16, AmxQ3)

}  // namespace strata::kernels::avx512

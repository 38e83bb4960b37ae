// AVX2 kernel for Q5_K_X16 weights against Q8_K_X16A activations (blocks.h), on
// kquant_x16_tile_avx2.h's tile: kquant_q4_x16_avx2.cpp's quant vectors with the fifth bits
// or-ed in (avx2_util's bit_bytes: a broadcast, a byte shuffle, an and, a compare and an and
// per 32 of them), and the integer scales and mins of ref::q5_k_x16_vec_dot's steps. Quants
// at most 31 by activations at most 127 in magnitude: a pair is at most 7874 and the 4
// vectors' int16 sum at most 31496, so vpmaddubsw and the int16 adds cannot saturate.
// Bit-identical to ref::q5_k_x16_vec_dot and the AVX-512 kernel.
#include <immintrin.h>

#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kquant_scales.h"
#include "kernels/quant/kquant_x16_tile_avx2.h"

namespace strata::kernels::STRATA_AVX2_NS {
namespace {

struct Q5 {
  using Block = BlockQ5_Kx16;
  struct Shared {
    __m128i sc_bytes, m_bytes;  // sc[0..7] and m[0..7], each byte twice (one per lane)
    float dw, dmw;
  };
  struct Half {
    __m256i q[4], scales, mins;
  };
  static Shared shared(const Block& wb) {
    const __m128i packed = unpack_q4_k_scales_mins(wb.scales);
    return {lane_pair_bytes(packed, 0), lane_pair_bytes(packed, 8), half_to_float(wb.d),
            half_to_float(wb.dmin)};
  }
  static Half half(const Block& wb, const Shared& s, int h) {
    Half hw;
    hw.scales = half_bytes_u32(s.sc_bytes, h);
    hw.mins = half_bytes_u32(s.m_bytes, h);
    nibble_vectors(wb.qs, h, hw.q);
    // The fifth bits of vector k, half h: the 32 bits at qh + 8k + 4h, one per byte.
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
      hw.q[k] = _mm256_or_si256(hw.q[k], bit_bytes(wb.qh + 8 * k + 4 * h, 0x10));
    return hw;
  }
  static __m256 fold(const Half& hw, const Shared& s, const BlockQ8_Kx16A& ab, int h, __m256 acc) {
    acc = fold_scaled(lane_dots_i16(hw.q, ab, h), hw.scales, s.dw, ab.d, acc);
    return fold_mins(ab, h, hw.mins, s.dmw, acc);
  }
};

}  // namespace

float q5_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return kquant_vec_dot<Q5>(n, w, a);
}

void q5_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  kquant_gemm<Q5>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::STRATA_AVX2_NS

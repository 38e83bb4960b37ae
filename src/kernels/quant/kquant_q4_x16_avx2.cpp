// AVX2 kernel for Q4_K_X16 weights against Q8_K_X16A activations (blocks.h), for CPUs
// without AVX-512: the layout of kquant_q4_x16_avx512.cpp on kquant_x16_tile_avx2.h's tile.
//
// Per half and (row, token): vpmaddubsw multiplies the unsigned quants (at most 15) by the
// activations (at most 127 in magnitude, the Q8_K quantizer's clamp: a pair is at most
// 3810, the 4 vectors' int16 sum at most 15240, no saturation), vpmaddwd by ones widens to
// int32, lane j is the dot product of elements 16j .. 16j + 15; then the scale and min
// terms as float lane factors (d x sc and dmin x m per half, exact), two converts, two
// multiplies and two fmas per half, lane by lane. Integer steps are exact and the float
// steps are ref::q4_k_x16_vec_dot's, so every output is bit-identical to it and to the
// AVX-512 kernel.
#include <immintrin.h>

#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kquant_scales.h"
#include "kernels/quant/kquant_x16_tile_avx2.h"

namespace strata::kernels::STRATA_AVX2_NS {
namespace {

struct Q4 {
  using Block = BlockQ4_Kx16;
  struct Shared {
    __m128i sc_bytes, m_bytes;
    __m256 dw, dmw;
  };
  struct Half {
    __m256i q[4];
    __m256 dsc, dm;  // d x sc and dmin x m per lane
  };
  static Shared shared(const Block& wb) {
    const __m128i packed = unpack_q4_k_scales_mins(wb.scales);
    return {lane_pair_bytes(packed, 0), lane_pair_bytes(packed, 8),
            _mm256_set1_ps(half_to_float(wb.d)), _mm256_set1_ps(half_to_float(wb.dmin))};
  }
  static Half half(const Block& wb, const Shared& s, int h) {
    Half hw;
    hw.dsc = _mm256_mul_ps(s.dw, _mm256_cvtepi32_ps(half_bytes_u32(s.sc_bytes, h)));
    hw.dm = _mm256_mul_ps(s.dmw, _mm256_cvtepi32_ps(half_bytes_u32(s.m_bytes, h)));
    nibble_vectors(wb.qs, h, hw.q);
    return hw;
  }
  static __m256 fold(const Half& hw, const Shared&, const BlockQ8_Kx16A& ab, int h, __m256 acc) {
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lane_dots_i16(hw.q, ab, h)),
                          _mm256_mul_ps(hw.dsc, _mm256_set1_ps(ab.d)), acc);
    const __m256 bias = _mm256_mul_ps(_mm256_cvtepi32_ps(load256(ab.bias + 8 * h)),
                                      _mm256_set1_ps(ab.d * 0.03125f));
    return _mm256_fmadd_ps(hw.dm, bias, acc);
  }
};

}  // namespace

float q4_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return kquant_vec_dot<Q4>(n, w, a);
}

void q4_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  kquant_gemm<Q4>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::STRATA_AVX2_NS

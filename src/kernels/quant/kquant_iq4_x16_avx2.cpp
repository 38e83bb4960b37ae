// AVX2 kernel for IQ4_XS_X16 weights against Q8_K_X16A activations (blocks.h), for CPUs
// without AVX-512: the layout of kquant_iq4_x16_avx512.cpp on kquant_x16_tile_avx2.h's tile.
//
// Per half and (row, token): the grid values (vpshufb on the signed table) enter vpmaddubsw
// as |v| with the activations' signs flipped where v < 0 (v is never 0): a pair is at most
// 2 x 127 x 127 = 32258, no saturation, but two vectors could overflow int16, so each is
// widened by vpmaddwd with ones on its own. Lane j is then the exact dot product of elements
// 16j .. 16j + 15, which the vpmulld by the signed scale, one convert and one fma finish.
// Integer steps are exact and the float steps are ref::iq4_xs_x16_vec_dot's, so every output
// is bit-identical to it and to the AVX-512 kernel.
#include <immintrin.h>

#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kquant_scales.h"
#include "kernels/quant/kquant_x16_tile_avx2.h"

namespace strata::kernels::STRATA_AVX2_NS {
namespace {

struct Iq4Xs {
  using Block = BlockIQ4_XSx16;
  struct Shared {
    __m128i sc_bytes;  // the 6-bit scales, each byte twice (one per lane)
    float dw;
  };
  struct Half {
    __m256i v[4], mag[4], scales;  // grid values, their magnitudes, scale - 32 per lane
  };
  static Shared shared(const Block& wb) {
    return {lane_pair_bytes(iq4_xs_scale_bytes(wb.scales_h, wb.scales_l), 0), half_to_float(wb.d)};
  }
  static Half half(const Block& wb, const Shared& s, int h) {
    Half hw;
    hw.scales = _mm256_sub_epi32(half_bytes_u32(s.sc_bytes, h), _mm256_set1_epi32(32));
    const __m256i grid = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
    nibble_vectors(wb.qs, h, hw.v);
#ifdef __AVXVNNI__
    // Grid + 128, unsigned for vpdpbusd (fold starts each lane at -128 x its sum).
    const __m256i unsigned_grid = _mm256_xor_si256(grid, _mm256_set1_epi8(static_cast<char>(0x80)));
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) hw.v[k] = _mm256_shuffle_epi8(unsigned_grid, hw.v[k]);
#else
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) hw.v[k] = _mm256_shuffle_epi8(grid, hw.v[k]);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) hw.mag[k] = _mm256_sign_epi8(hw.v[k], hw.v[k]);
#endif
    return hw;
  }
  static __m256 fold(const Half& hw, const Shared& s, const BlockQ8_Kx16A& ab, int h, __m256 acc) {
#ifdef __AVXVNNI__
    // -128 x the lane's sum is 4 x its bias (-32 x the sum).
    const __m256i start = _mm256_slli_epi32(load256(ab.bias + 8 * h), 2);
    return fold_scaled(vnni_lane_dots(hw.v, ab, h, start), hw.scales, s.dw, ab.d, acc);
#else
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i p[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256i ak = _mm256_sign_epi8(load256(ab.qs + 64 * k + 32 * h), hw.v[k]);
      p[k] = _mm256_madd_epi16(_mm256_maddubs_epi16(hw.mag[k], ak), ones);
    }
    const __m256i lanes =
        _mm256_add_epi32(_mm256_add_epi32(p[0], p[1]), _mm256_add_epi32(p[2], p[3]));
    return fold_scaled(lanes, hw.scales, s.dw, ab.d, acc);
#endif
  }
};

}  // namespace

float iq4_xs_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return kquant_vec_dot<Iq4Xs>(n, w, a);
}

void iq4_xs_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                     int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  kquant_gemm<Iq4Xs>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::STRATA_AVX2_NS

// AVX2 kernel for Q6_K_X16 weights against Q8_K_X16A activations (blocks.h), for CPUs
// without AVX-512: the layout of kquant_x16_avx512.cpp on kquant_x16_tile_avx2.h's tile.
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
// ref::q6_k_x16_vec_dot's, so every output is bit-identical to it and to the AVX-512 kernel.
#include <immintrin.h>

#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kquant_x16_tile_avx2.h"

namespace strata::kernels::STRATA_AVX2_NS {
namespace {

struct Q6 {
  using Block = BlockQ6_Kx16;
  struct Shared {
    __m128i scale_bytes;  // the signed scales (the block's last bytes, loaded first)
    float dw;
  };
  struct Half {
    __m256i q[4], scales;
  };
  static Shared shared(const Block& wb) {
    return {_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)), half_to_float(wb.d)};
  }
  static Half half(const Block& wb, const Shared& s, int h) {
    Half hw;
    hw.scales = _mm256_cvtepi8_epi32(h == 0 ? s.scale_bytes
                                            : _mm_unpackhi_epi64(s.scale_bytes, s.scale_bytes));
    const __m256i low4 = _mm256_set1_epi8(0x0f), bits45 = _mm256_set1_epi8(0x30);
    const __m256i l0 = load256(wb.ql + 32 * h), l1 = load256(wb.ql + 64 + 32 * h);
    const __m256i hb = load256(wb.qh + 32 * h);
    // Vector k: the low 4 bits from l0/l1, the high 2 bits from bits 2k, 2k+1 of hb moved
    // to bits 4-5 (16-bit shifts; what crosses a byte lands outside bits 4-5).
    hw.q[0] = _mm256_or_si256(_mm256_and_si256(l0, low4),
                              _mm256_and_si256(_mm256_slli_epi16(hb, 4), bits45));
    hw.q[1] = _mm256_or_si256(_mm256_and_si256(l1, low4),
                              _mm256_and_si256(_mm256_slli_epi16(hb, 2), bits45));
    hw.q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                              _mm256_and_si256(hb, bits45));
    hw.q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                              _mm256_and_si256(_mm256_srli_epi16(hb, 2), bits45));
    return hw;
  }
  static __m256 fold(const Half& hw, const Shared& s, const BlockQ8_Kx16A& ab, int h, __m256 acc) {
#ifdef __AVXVNNI__
    const __m256i lanes = vnni_lane_dots(hw.q, ab, h, load256(ab.bias + 8 * h));
#else
    const __m256i lanes =
        _mm256_add_epi32(load256(ab.bias + 8 * h), lane_dots_i16_pairs(hw.q, ab, h));
#endif
    return fold_scaled(lanes, hw.scales, s.dw, ab.d, acc);
  }
};

}  // namespace

float q6_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return kquant_vec_dot<Q6>(n, w, a);
}

void q6_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  kquant_gemm<Q6>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::STRATA_AVX2_NS

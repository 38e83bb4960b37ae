// AVX2 kernels for Q3_K_X16 and Q3_K_X16S weights against Q8_K_X16A activations (blocks.h),
// for CPUs without AVX-512, on kquant_x16_tile_avx2.h's tile: Q3_K_X16 is the layout of
// kquant_q3_x16_avx512.cpp; Q3_K_X16S, the one AVX2 machines repack Q3_K to, slices its
// bit-2 plane so that each vector's half is a shift and an and away.
//
// Per half and (row, token): the quants + 4 (in [0, 7]) by activations at most 127 in magnitude: a
// vpmaddubsw pair is at most 1778 and the 4 vectors' sum at most 7112, so the int16 adds cannot
// saturate; one vpmaddwd by ones widens to int32, and lane j starts from bias[j] / 8 (-4 x its
// activation sum, cancelling the +4). Integer steps are exact and the float steps are
// ref::q3_k_x16_vec_dot's, so every output is bit-identical to it and to the AVX-512 kernel.
#include <immintrin.h>

#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kquant_scales.h"
#include "kernels/quant/kquant_x16_tile_avx2.h"

namespace strata::kernels::STRATA_AVX2_NS {
namespace {

// Q3_K_X16 (its bit-2 plane as 64-bit byte masks, kHighBits = Masks) or Q3_K_X16S (the
// plane sliced for halves, Sliced): the quants + 4 of half h.
enum class HighBits { Masks, Sliced };

template <class B, HighBits kHighBits>
struct Q3 {
  using Block = B;
  struct Shared {
    float dw;
  };
  struct Half {
    __m256i q[4], scales;
  };
  static Shared shared(const Block& wb) { return {half_to_float(wb.d)}; }
  static Half half(const Block& wb, const Shared&, int h) {
    Half hw;
    // sc[j] - 32 (the 16 bytes ending with the scales start in the quants).
    hw.scales = _mm256_sub_epi32(six_bit_lanes_half(wb.scales - 4, h), _mm256_set1_epi32(32));
    const __m256i l = load256(wb.qs + 32 * h), low2 = _mm256_set1_epi8(3);
    if constexpr (kHighBits == HighBits::Masks) {
      // Vector k: bits 2k, 2k + 1 of l, and bit 2 from the 32 bits at hmask + 8k + 4h
      // (spread to bytes: 4 instructions).
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        hw.q[k] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l, 2 * k), low2),
                                  bit_bytes(wb.hmask + 8 * k + 4 * h, 4));
      }
    } else {
      // Bit 2 of vector k from bit k + 4h of each hmask byte (a shift and an and).
      const __m256i hb = load256(wb.hmask), bit2 = _mm256_set1_epi8(4);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const int from = k + 4 * h;
        const __m256i at2 =
            from >= 2 ? _mm256_srli_epi16(hb, from - 2) : _mm256_slli_epi16(hb, 2 - from);
        hw.q[k] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l, 2 * k), low2),
                                  _mm256_and_si256(at2, bit2));
      }
    }
    return hw;
  }
  static __m256 fold(const Half& hw, const Shared& s, const BlockQ8_Kx16A& ab, int h, __m256 acc) {
    const __m256i lanes = _mm256_add_epi32(lane_dots_i16(hw.q, ab, h),
                                           _mm256_srai_epi32(load256(ab.bias + 8 * h), 3));
    return fold_scaled(lanes, hw.scales, s.dw, ab.d, acc);
  }
};
using Q3Masks = Q3<BlockQ3_Kx16, HighBits::Masks>;
using Q3Sliced = Q3<BlockQ3_Kx16S, HighBits::Sliced>;

}  // namespace

float q3_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return kquant_vec_dot<Q3Masks>(n, w, a);
}
float q3_k_x16s_vec_dot(int64_t n, const void* w, const void* a) {
  return kquant_vec_dot<Q3Sliced>(n, w, a);
}

void q3_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  kquant_gemm<Q3Masks>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void q3_k_x16s_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  kquant_gemm<Q3Sliced>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::STRATA_AVX2_NS

// AVX2 kernel for Q2_K_X16 weights against Q8_K_X16A activations (blocks.h), for CPUs
// without AVX-512: the layout of kquant_q2_x16_avx512.cpp on kquant_x16_tile_avx2.h's tile.
//
// Per half and (row, token): the 2-bit quants (one shift and an and per vector) by
// activations at most 127 in magnitude: a vpmaddubsw pair is at most 762 and the 4
// vectors' sum at most 3048, so the int16 adds cannot saturate; one vpmaddwd by ones widens
// to int32 already multiplied by lane j's scale (scales[j] & 15 in both int16 halves of the
// lane: one vpmaddwd instead of a widening and a vpmulld); its min is scales[j] >> 4. Integer steps
// are exact and the float steps are ref::q2_k_x16_vec_dot's (d_w x d_a by the scaled sums, then
// (dmin_w x d_a) / 32 by the bias times the mins), so every output is bit-identical to it and to
// the AVX-512 kernel. The file layout's kernel (kquant_ext_avx2.cpp) sums each block horizontally
// instead.
#include <immintrin.h>

#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kquant_x16_tile_avx2.h"

namespace strata::kernels::avx2 {
namespace {

struct Q2 {
  using Block = BlockQ2_Kx16;
  struct Shared {
    float dw, dmw;
  };
  struct Half {
    __m256i q[4], scales16, mins;  // scales16: lane j's scale in both of its int16 halves
  };
  static Shared shared(const Block& wb) { return {half_to_float(wb.d), half_to_float(wb.dmin)}; }
  static Half half(const Block& wb, const Shared&, int h) {
    Half hw;
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(wb.scales + 8 * h));
    hw.scales16 =
        _mm256_and_si256(_mm256_shuffle_epi8(_mm256_broadcastsi128_si256(bytes),
                                             _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2,
                                                              -1, 3, -1, 3, -1, 4, -1, 4, -1, 5, -1,
                                                              5, -1, 6, -1, 6, -1, 7, -1, 7, -1)),
                         _mm256_set1_epi16(15));
    hw.mins = _mm256_srli_epi32(_mm256_cvtepu8_epi32(bytes), 4);
    const __m256i l = load256(wb.qs + 32 * h);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
      hw.q[k] = _mm256_and_si256(_mm256_srli_epi16(l, 2 * k), _mm256_set1_epi8(3));
    return hw;
  }
  static __m256 fold(const Half& hw, const Shared& s, const BlockQ8_Kx16A& ab, int h, __m256 acc) {
    // Lane j x its scale in one vpmaddwd: sc x (the lane's two int16 sums), exact in int32.
    const __m256i scaled = _mm256_madd_epi16(lane_sums_i16(hw.q, ab, h), hw.scales16);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(s.dw * ab.d), _mm256_cvtepi32_ps(scaled), acc);
    return fold_mins(ab, h, hw.mins, s.dmw, acc);
  }
};

}  // namespace

float q2_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return kquant_vec_dot<Q2>(n, w, a);
}

void q2_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  kquant_gemm<Q2>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx2

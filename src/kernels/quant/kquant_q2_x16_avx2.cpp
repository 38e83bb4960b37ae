// AVX2 kernel for Q2_K_X16 weights against Q8_K_X16A activations (blocks.h), for CPUs
// without AVX-512: the layout of kquant_q2_x16_avx512.cpp on kquant_x16_tile_avx2.h's tile.
//
// Per half and (row, token): the 2-bit quants (one shift and an and per vector) by
// activations at most 127 in magnitude: a vpmaddubsw pair is at most 762 and the 4
// vectors' sum at most 3048, so the int16 adds cannot saturate; one vpmaddwd by ones widens
// to int32 already multiplied by lane j's scale (scales[j] & 15 in both int16 halves of the
// lane: one vpmaddwd instead of a widening and a vpmulld); its min is scales[j] >> 4. The
// lanes are then summed in pairs as ref::q2_k_x16_vec_dot does (the scale pair in lane 2k, the
// min pair, one vpmaddwd of the activation's last line (neg_sums), in lane 2k + 1; one convert and
// one fma by d_w x d_a and dmin_w x d_a), so every output is bit-identical to it and to the
// AVX-512 kernel. The file layout's kernel (kquant_ext_avx2.cpp) sums each block horizontally
// instead.
#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kquant_x16_tile_avx2.h"

namespace strata::kernels::STRATA_AVX2_NS {
namespace {

// Half h of the activation's last line (d, neg_sums): qword k's high dword holds minus the
// sums of sub-blocks 8h + 2k and 8h + 2k + 1 (k < 4).
inline __m256i last_line_half(const BlockQ8_Kx16A& ab, int h) {
  return load256(reinterpret_cast<const uint8_t*>(&ab.d) + 32 * h);
}

struct Q2 {
  using Block = BlockQ2_Kx16;
  struct Shared {
    __m256 dd;  // d_w in the even lanes, dmin_w in the odd (the lane pairs' factors)
  };
  struct Half {
    // scales16: lane j's scale in both of its int16 halves; min_words: words 4k + 2, 4k + 3
    // the mins of sub-blocks 2k and 2k + 1 (k < 4, within the half).
    __m256i q[4], scales16, min_words;
  };
  static Shared shared(const Block& wb) {
    static_assert(offsetof(Block, dmin) == offsetof(Block, d) + 2);
    int32_t both;
    std::memcpy(&both, &wb.d, 4);
    return {_mm256_cvtph_ps(_mm_set1_epi32(both))};
  }
  static Half half(const Block& wb, const Shared&, int h) {
    Half hw;
    const __m256i bytes = _mm256_broadcastsi128_si256(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(wb.scales + 8 * h)));
#ifdef __AVXVNNI__
    // The lane sums come as int32 (below 2^15 in magnitude): the scale in the low word only.
    hw.scales16 = _mm256_and_si256(
        _mm256_shuffle_epi8(
            bytes, _mm256_setr_epi8(0, -1, -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, 3, -1, -1, -1, 4,
                                    -1, -1, -1, 5, -1, -1, -1, 6, -1, -1, -1, 7, -1, -1, -1)),
        _mm256_set1_epi16(15));
#else
    hw.scales16 = _mm256_and_si256(
        _mm256_shuffle_epi8(
            bytes, _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1, 4, -1,
                                    4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1)),
        _mm256_set1_epi16(15));
#endif
    hw.min_words = _mm256_srli_epi16(
        _mm256_shuffle_epi8(
            bytes, _mm256_setr_epi8(-1, -1, -1, -1, 0, -1, 1, -1, -1, -1, -1, -1, 2, -1, 3, -1, -1,
                                    -1, -1, -1, 4, -1, 5, -1, -1, -1, -1, -1, 6, -1, 7, -1)),
        4);
    const __m256i l = load256(wb.qs + 32 * h);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
      hw.q[k] = _mm256_and_si256(_mm256_srli_epi16(l, 2 * k), _mm256_set1_epi8(3));
    return hw;
  }
  static __m256 fold(const Half& hw, const Shared& s, const BlockQ8_Kx16A& ab, int h, __m256 acc) {
    // Lane j x its scale in one vpmaddwd: sc x (the lane's two int16 sums), exact in int32;
    // then lanes 2k and 2k + 1 both hold the pair's sum, and the odd lanes take the min pairs
    // (the even lanes of that vpmaddwd see d and zero min words: discarded by the blend).
#ifdef __AVXVNNI__
    const __m256i scaled = _mm256_madd_epi16(lane_dots_i16(hw.q, ab, h), hw.scales16);
#else
    const __m256i scaled = _mm256_madd_epi16(lane_sums_i16(hw.q, ab, h), hw.scales16);
#endif
    const __m256i pairs = _mm256_add_epi32(scaled, _mm256_shuffle_epi32(scaled, 0xb1));
    const __m256i mins = _mm256_madd_epi16(last_line_half(ab, h), hw.min_words);
    return _mm256_fmadd_ps(_mm256_mul_ps(s.dd, _mm256_set1_ps(ab.d)),
                           _mm256_cvtepi32_ps(_mm256_blend_epi32(pairs, mins, 0xaa)), acc);
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

}  // namespace strata::kernels::STRATA_AVX2_NS

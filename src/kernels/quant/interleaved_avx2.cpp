// AVX2 kernels for Q4_0_X16 and Q8_0_X16 weights against Q8_0_X16A activations
// (blocks.h), for CPUs without AVX-512: the same layouts as interleaved_avx512.cpp, each
// 64-byte vector of a group taken as two 32-byte halves (blocks 0-7 and 8-15); the row
// tile is x16_group_avx2.h's.
//
// Per half-group and (row, token), the integer dot of each of 8 blocks lands in one int32
// lane:
//  - Q4_0: 8 vpmaddubsw of unsigned nibbles by signed activations, summed in int16 (a pair
//    is at most 2 * 15 * 128 = 3840, eight pairs 30720 < 32767, so nothing saturates),
//    then one vpmaddwd by ones, less 8 * the activation's block sums (the nibble offset);
//  - Q8_0: quants are stored plus 128; xor 0x80 gives the signed quant q, and each
//    vpmaddubsw takes |q| (unsigned, at most 128) by the activation with q's sign (at most
//    2 * 128 * 127 = 32512 per pair), widened by vpmaddwd before the next is added. This
//    needs activations in [-127, 127] (vpsignb cannot negate -128), which every
//    Q8_0_X16A producer guarantees: q8_0_from_float clamps to +-127.
// With AVX-VNNI (interleaved_avxvnni.cpp compiles this file again as avx2vnni::), both are 8
// vpdpbusd of the unsigned quants (Q8_0: the stored q + 128) from -offset x the block sums,
// as the AVX-512 kernels do.
// The file layouts' AVX2 kernels (legacy_avx2.cpp) spend about 22 instructions per block
// and row; these about 5 (Q4_0) and 8 (Q8_0), which lets a GEMV keep up with memory and a
// GEMM stay near the integer units' rate. The integer lanes are exact and the float steps
// are the reference's (ref::q4_0_x16_vec_dot, q8_0_x16_vec_dot: acc[b] = fma(d_w[b] *
// d_a[b], lane[b], acc[b]), then the lanes added i + 8, + 4, + 2, + 1), so every output is
// bit-identical to it and to the AVX-512 kernels, whatever the tile, batch or thread split.
#include <immintrin.h>

#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/x16_group_avx2.h"

namespace strata::kernels::STRATA_AVX2_NS {
namespace {

struct Q4x16 {
  using Group = BlockQ4_0x16;
  static constexpr bool kHasMin = false;
  // Unsigned nibbles q + 8: low nibbles of chunk c are elements 4c.., high ones 16 + 4c...
  static void load(const Group& g, int h, HalfWeights& w) {
    const __m256i mask = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i v = load256(g.qs + 64 * c + 32 * h);
      w.q[c] = _mm256_and_si256(v, mask);
      w.q[c + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
    }
    w.d = half_scales(g.d + kHalfBlocks * h);
  }
  static __m256i dot(const HalfWeights& w, const BlockQ8_0x16A& a, int h) {
#ifdef __AVXVNNI__
    return vnni_dot(w, a, h, offset_start(a, h, 3));
#else
    __m256i s16 = _mm256_maddubs_epi16(w.q[0], load256(a.qs + 32 * h));
#pragma GCC unroll 7
    for (int k = 1; k < 8; ++k)
      s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(w.q[k], load256(a.qs + 64 * k + 32 * h)));
    const __m256i lanes = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
    return _mm256_sub_epi32(lanes, _mm256_slli_epi32(load256(a.sum + kHalfBlocks * h), 3));
#endif
  }
};

struct Q8x16 {
  using Group = BlockQ8_0x16;
  static constexpr bool kHasMin = false;
  // The signed quants (stored plus 128); with AVX-VNNI the stored, unsigned ones.
  static void load(const Group& g, int h, HalfWeights& w) {
    const uint8_t* qs = q8_0_x16_qs(g);
#ifdef __AVXVNNI__
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) w.q[k] = load256(qs + 64 * k + 32 * h);
#else
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) w.q[k] = _mm256_xor_si256(load256(qs + 64 * k + 32 * h), flip);
#endif
    w.d = half_scales(q8_0_x16_d(g) + kHalfBlocks * h);
  }
  static __m256i dot(const HalfWeights& w, const BlockQ8_0x16A& a, int h) {
#ifdef __AVXVNNI__
    return vnni_dot(w, a, h, offset_start(a, h, 7));
#else
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i lanes = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m256i q = w.q[k];
      const __m256i signed_a = _mm256_sign_epi8(load256(a.qs + 64 * k + 32 * h), q);
      lanes = _mm256_add_epi32(
          lanes, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(q), signed_a), ones));
    }
    return lanes;
#endif
  }
};

}  // namespace

float q4_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return group_vec_dot<Q4x16>(n, w, a);
}

float q8_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return group_vec_dot<Q8x16>(n, w, a);
}

void q4_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  group_gemm<Q4x16>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q8_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  group_gemm<Q8x16>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::STRATA_AVX2_NS

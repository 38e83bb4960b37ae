// AVX2 kernels for Q4_1_X16, Q5_0_X16, Q5_1_X16, IQ4_NL_X16 and the K pairs (Q4_K_X16P,
// Q5_K_X16P, IQ4_XS_X16P) weights against Q8_0_X16A activations (blocks.h), for CPUs
// without AVX-512: the layouts of legacy_x16_avx512.cpp,
// each 64-byte vector of a group taken as two 32-byte halves; the row tile is
// x16_group_avx2.h's. Per half-group and (row, token), the integer dot of each of 8 blocks
// lands in one int32 lane:
//  - Q4_1: Q4_0_X16's nibbles (8 vpmaddubsw summed in int16: at most 8 x 2 x 15 x 128),
//    no offset; the block offsets m enter as m_w x (d_a x the activation's block sum);
//  - Q5_0, Q5_1: the nibbles plus 16 where the fifth bit is set (bit k of qh's bytes for
//    vector k, a shift and an and); a pair is at most 2 x 31 x 128 = 7936, so 4 vpmaddubsw are
//    summed in int16 before each vpmaddwd; Q5_0 takes 16 x the block sums off (its offset), Q5_1
//    has Q4_1's offsets;
//  - IQ4_NL: each nibble looked up in the signed grid (one vpshufb), then |v| by the
//    activation with v's sign (Q8_0_X16's way: activations are in [-127, 127]), widened
//    per vector, which is the reference's lane (grid + 128 less 128 x the block sum);
//  - the K pairs: Q4_1's, Q5_1's and IQ4_NL's steps with the pair's per-lane factors (half h
//    is super-block h: d x sc and -(dmin x m), or d x (ls - 32)), so a 32-element lane
//    takes one convert and two fmas per token where Q4_K_X16's 16-element lanes take them
//    twice (the AVX2 GEMV +37% on Q4_K).
// With AVX-VNNI (legacy_x16_avxvnni.cpp compiles this file again as avx2vnni::) each dot is
// 8 vpdpbusd of the unsigned quants (IQ4_NL's grid + 128) from -offset x the block sums.
// The file layouts' AVX2 kernels (legacy_avx2.cpp) sum each block horizontally instead.
// Every integer step is exact and the float steps are the reference's, so each output is
// bit-identical to ref::q4_1_x16_vec_dot ... iq4_xs_x16p_vec_dot and the AVX-512 kernels.
#include <immintrin.h>

#include <cstddef>

#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kquant_scales.h"
#include "kernels/quant/x16_group_avx2.h"

namespace strata::kernels::STRATA_AVX2_NS {
namespace {

// Half h's 8 nibble vectors: low nibbles of chunk c are vector c, high ones vector c + 4.
inline void load_nibbles(const uint8_t* qs, int h, __m256i (&q)[8]) {
  const __m256i mask = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m256i v = load256(qs + 64 * c + 32 * h);
    q[c] = _mm256_and_si256(v, mask);
    q[c + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
  }
}

// Vector k plus 16 where its fifth bit is set: bit k of qh[32h + i] moved to bit 4 of byte i
// (a 16-bit shift and an and; the nibbles have bit 4 clear).
inline void add_fifth_bits(const uint8_t* qh, int h, __m256i (&q)[8]) {
  const __m256i bits = load256(qh + 32 * h), bit4 = _mm256_set1_epi8(16);
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) {
    const __m256i at4 = k <= 4 ? _mm256_slli_epi16(bits, 4 - k) : _mm256_srli_epi16(bits, k - 4);
    q[k] = _mm256_or_si256(q[k], _mm256_and_si256(at4, bit4));
  }
}

// Half h's 8 nibble vectors looked up in the signed IQ4_NL grid; with AVX-VNNI, grid + 128
// (unsigned, for vpdpbusd; the dot's start takes 128 x the block sums off).
inline void grid_values(const uint8_t* qs, int h, __m256i (&q)[8]) {
  load_nibbles(qs, h, q);
  __m256i grid =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
#ifdef __AVXVNNI__
  grid = _mm256_xor_si256(grid, _mm256_set1_epi8(static_cast<char>(0x80)));
#endif
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) q[k] = _mm256_shuffle_epi8(grid, q[k]);
}

// Unsigned quants of at most 31 by the activations: int16 sums of 4 vectors, then int32.
inline __m256i dot_by_fours(const HalfWeights& w, const BlockQ8_0x16A& a, int h) {
#ifdef __AVXVNNI__
  return vnni_dot(w, a, h, _mm256_setzero_si256());
#else
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i lanes = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int f = 0; f < 2; ++f) {
    __m256i s16 = _mm256_maddubs_epi16(w.q[4 * f], load256(a.qs + 256 * f + 32 * h));
#pragma GCC unroll 3
    for (int k = 4 * f + 1; k < 4 * f + 4; ++k)
      s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(w.q[k], load256(a.qs + 64 * k + 32 * h)));
    lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(s16, ones));
  }
  return lanes;
#endif
}

struct Q4_1x16 {
  using Group = BlockQ4_1x16;
  static constexpr bool kHasMin = true;
  static void load(const Group& g, int h, HalfWeights& w) {
    load_nibbles(g.qs, h, w.q);
    w.d = half_scales(g.d + kHalfBlocks * h);
    w.m = half_scales(g.m + kHalfBlocks * h);
  }
  static __m256i dot(const HalfWeights& w, const BlockQ8_0x16A& a, int h) {
#ifdef __AVXVNNI__
    return vnni_dot(w, a, h, _mm256_setzero_si256());
#else
    __m256i s16 = _mm256_maddubs_epi16(w.q[0], load256(a.qs + 32 * h));
#pragma GCC unroll 7
    for (int k = 1; k < 8; ++k)
      s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(w.q[k], load256(a.qs + 64 * k + 32 * h)));
    return _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
#endif
  }
};

struct Q5_0x16 {
  using Group = BlockQ5_0x16;
  static constexpr bool kHasMin = false;
  static void load(const Group& g, int h, HalfWeights& w) {
    load_nibbles(g.qs, h, w.q);
    add_fifth_bits(g.qh, h, w.q);
    w.d = half_scales(g.d + kHalfBlocks * h);
  }
  static __m256i dot(const HalfWeights& w, const BlockQ8_0x16A& a, int h) {
#ifdef __AVXVNNI__
    return vnni_dot(w, a, h, offset_start(a, h, 4));
#else
    return _mm256_sub_epi32(dot_by_fours(w, a, h),
                            _mm256_slli_epi32(load256(a.sum + kHalfBlocks * h), 4));
#endif
  }
};

struct Q5_1x16 {
  using Group = BlockQ5_1x16;
  static constexpr bool kHasMin = true;
  static void load(const Group& g, int h, HalfWeights& w) {
    load_nibbles(g.qs, h, w.q);
    add_fifth_bits(g.qh, h, w.q);
    w.d = half_scales(g.d + kHalfBlocks * h);
    w.m = half_scales(g.m + kHalfBlocks * h);
  }
  static __m256i dot(const HalfWeights& w, const BlockQ8_0x16A& a, int h) {
    return dot_by_fours(w, a, h);
  }
};

struct Iq4NLx16 {
  using Group = BlockIQ4_NLx16;
  static constexpr bool kHasMin = false;
  static void load(const Group& g, int h, HalfWeights& w) {
    grid_values(g.qs, h, w.q);
    w.d = half_scales(g.d + kHalfBlocks * h);
  }
  static __m256i dot(const HalfWeights& w, const BlockQ8_0x16A& a, int h) {
#ifdef __AVXVNNI__
    return vnni_dot(w, a, h, offset_start(a, h, 7));
#else
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i lanes = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m256i signed_a = _mm256_sign_epi8(load256(a.qs + 64 * k + 32 * h), w.q[k]);
      lanes = _mm256_add_epi32(
          lanes, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w.q[k]), signed_a), ones));
    }
    return lanes;
#endif
  }
};

// A K pair's half h is super-block h: its 8 lanes' scales d x sc and offsets -(dmin x m)
// (blocks.h; both exact in float, so any order gives the reference's values).
inline void k_pair_factors(const KPairHead& head, int h, HalfWeights& w) {
  static_assert(offsetof(KPairHead, scales) == 8 && offsetof(KPairHead, mins) == 20);
  const __m256i sc = six_bit_lanes_half(head.scales - 4, h);
  const __m256i mn = six_bit_lanes_half(head.mins - 4, h);
  w.d = _mm256_mul_ps(_mm256_set1_ps(half_to_float(head.d[h])), _mm256_cvtepi32_ps(sc));
  w.m = _mm256_mul_ps(_mm256_set1_ps(half_to_float(head.dmin[h])),
                      _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), mn)));
}

// Q4_1_X16's quants and dot with the K pair's factors.
struct Q4_Kx16P : Q4_1x16 {
  using Group = BlockQ4_Kx16P;
  static void load(const Group& g, int h, HalfWeights& w) {
    load_nibbles(g.qs, h, w.q);
    k_pair_factors(g.head, h, w);
  }
};

// Q5_1_X16's quants and dot with the K pair's factors.
struct Q5_Kx16P : Q5_1x16 {
  using Group = BlockQ5_Kx16P;
  static void load(const Group& g, int h, HalfWeights& w) {
    load_nibbles(g.qs, h, w.q);
    add_fifth_bits(g.qh, h, w.q);
    k_pair_factors(g.head, h, w);
  }
};

// IQ4_NL_X16's quants and dot with lane scales d x (ls - 32) of super-block h.
struct Iq4XSx16P : Iq4NLx16 {
  using Group = BlockIQ4_XSx16P;
  static void load(const Group& g, int h, HalfWeights& w) {
    grid_values(g.qs, h, w.q);
    static_assert(offsetof(IQ4XSPairHead, scales) == 4);
    const __m256i ls = six_bit_lanes_half(g.head.scales - 4, h);
    w.d = _mm256_mul_ps(_mm256_set1_ps(half_to_float(g.head.d[h])),
                        _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32))));
  }
};

}  // namespace

float q4_1_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return group_vec_dot<Q4_1x16>(n, w, a);
}
float q5_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return group_vec_dot<Q5_0x16>(n, w, a);
}
float q5_1_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return group_vec_dot<Q5_1x16>(n, w, a);
}
float iq4_nl_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return group_vec_dot<Iq4NLx16>(n, w, a);
}
float q4_k_x16p_vec_dot(int64_t n, const void* w, const void* a) {
  return group_vec_dot<Q4_Kx16P>(n, w, a);
}
float q5_k_x16p_vec_dot(int64_t n, const void* w, const void* a) {
  return group_vec_dot<Q5_Kx16P>(n, w, a);
}
float iq4_xs_x16p_vec_dot(int64_t n, const void* w, const void* a) {
  return group_vec_dot<Iq4XSx16P>(n, w, a);
}

void q4_1_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  group_gemm<Q4_1x16>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void q5_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  group_gemm<Q5_0x16>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void q5_1_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  group_gemm<Q5_1x16>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void iq4_nl_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                     int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  group_gemm<Iq4NLx16>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void q4_k_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  group_gemm<Q4_Kx16P>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void q5_k_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  group_gemm<Q5_Kx16P>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void iq4_xs_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                      int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  group_gemm<Iq4XSx16P>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::STRATA_AVX2_NS

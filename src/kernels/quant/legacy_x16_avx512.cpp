// AVX-512 VNNI kernels for Q4_1_X16, Q5_0_X16, Q5_1_X16, IQ4_NL_X16 and the K pairs
// (Q4_K_X16P, Q5_K_X16P, IQ4_XS_X16P) against Q8_0_X16A activations (blocks.h): llama.cpp's
// Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K, Q5_K and IQ4_XS files, repacked at load. The row tile and
// 2 x 4 register block are x16_group_avx512.h's; each layout here says how its 8 quant
// vectors come out of a group:
//   Q4_1: Q4_0_X16's nibbles, no offset; the block offsets m enter as m_w x (d_a x the
//         activation's block sum) (one more fma per group, row and token; the product is
//         the token's, once per GEMM block)
//   Q5_0: the nibbles plus 16 where the fifth bit is set (one masked byte add per vector,
//         its mask one 64-bit word of qh), offset 16
//   Q5_1: Q5_0's quants without the offset, and Q4_1's offsets
//   IQ4_NL: each nibble looked up in the grid + 128 (one vpshufb), offset 128
//   Q4_K_X16P, Q5_K_X16P: Q4_1_X16's and Q5_1_X16's, with d x sc and -(dmin x m) as the
//         lanes' scales and offsets, unpacked from the pair's head (its six-bit strings;
//         per group and row, not per token); IQ4_XS_X16P: IQ4_NL_X16's with d x (ls - 32)
// Bit-identical to ref::q4_1_x16_vec_dot, q5_0_x16_vec_dot, q5_1_x16_vec_dot,
// iq4_nl_x16_vec_dot and the K pairs' models (q4_k_x16p_vec_dot ...).
#pragma GCC diagnostic ignored "-Wuninitialized"  // see interleaved_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "kernels/quant/amx_group_gemm.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"
#include "kernels/quant/kquant_scales.h"
#include "kernels/quant/token_tiles.h"
#include "kernels/quant/x16_group_avx512.h"

namespace strata::kernels::avx512 {
namespace {

// The 8 nibble vectors from 4 two-half loads.
inline void load_nibbles(const uint8_t* qs, __m512i (&q)[8]) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512i v = load64(qs + 64 * c);
    q[c] = _mm512_and_si512(v, low4);
    q[c + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
  }
}

// Vector k plus 16 in the bytes whose fifth bit is set: bit k of each byte of qh moved to
// bit 4 (a 16-bit shift: what crosses a byte lands outside bit 4), or-ed in by one ternary
// logic op (the nibbles have bit 4 clear). As fast as a mask register loaded per vector
// (kernels_matmul_bench, AVX-512), and AVX2 needs no bit-to-byte spread.
inline __m512i add_fifth_bits(__m512i q, const uint8_t* qh, int k) {
  const __m512i h = load64(qh);
  const __m512i bit4 = k <= 4 ? _mm512_slli_epi16(h, 4 - k) : _mm512_srli_epi16(h, k - 4);
  return _mm512_ternarylogic_epi32(q, bit4, _mm512_set1_epi8(16), 0xf8);  // q | (bit4 & 16)
}

// IQ4_NL's grid (kIQ4NLValues) + 128 as unsigned bytes, in every 128-bit lane.
inline __m512i iq4_nl_grid() {
  return _mm512_broadcast_i32x4(
      _mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, -127, -115, -103, -90, -75, -59, -39, -15));
}

// The three ways a group's quant vectors come out of its qs (and qh), for any group with
// those fields: nibbles; nibbles plus their fifth bits; grid values + 128 looked up by the
// nibbles.
template <class G>
struct NibbleQuants {
  static void quants(const G& g, __m512i (&q)[8]) { load_nibbles(g.qs, q); }
  static void vec_pair(const G& g, int c, __m512i low4, __m512i& lo, __m512i& hi) {
    nibble_pair(g.qs, c, low4, lo, hi);
  }
};
template <class G>
struct FifthBitQuants {
  static void quants(const G& g, __m512i (&q)[8]) {
    load_nibbles(g.qs, q);
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) q[k] = add_fifth_bits(q[k], g.qh, k);
  }
  static void vec_pair(const G& g, int c, __m512i low4, __m512i& lo, __m512i& hi) {
    nibble_pair(g.qs, c, low4, lo, hi);
    lo = add_fifth_bits(lo, g.qh, c);
    hi = add_fifth_bits(hi, g.qh, c + 4);
  }
};
template <class G>
struct GridQuants {
  static void quants(const G& g, __m512i (&q)[8]) {
    load_nibbles(g.qs, q);
    const __m512i grid = iq4_nl_grid();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) q[k] = _mm512_shuffle_epi8(grid, q[k]);
  }
  static void vec_pair(const G& g, int c, __m512i low4, __m512i& lo, __m512i& hi) {
    nibble_pair(g.qs, c, low4, lo, hi);
    lo = _mm512_shuffle_epi8(iq4_nl_grid(), lo);
    hi = _mm512_shuffle_epi8(iq4_nl_grid(), hi);
  }
};

// The file-type groups: fp16 scales d (and offsets m), the template's default factors.
struct Q4_1x16 : NibbleQuants<BlockQ4_1x16> {
  using Group = BlockQ4_1x16;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kHasMin = true;
  static constexpr bool kSplitChains = false;
};

// Q5_0 (offset 16) and Q5_1 (no offset, block offsets m): the nibbles with their fifth bits.
template <class G, int kShift, bool kMin>
struct Q5x16 : FifthBitQuants<G> {
  using Group = G;
  static constexpr int kOffsetShift = kShift;
  static constexpr bool kHasMin = kMin;
  static constexpr bool kSplitChains = false;
};
using Q5_0x16 = Q5x16<BlockQ5_0x16, 4, false>;  // quants are q + 16
using Q5_1x16 = Q5x16<BlockQ5_1x16, -1, true>;

struct Iq4NLx16 : GridQuants<BlockIQ4_NLx16> {
  using Group = BlockIQ4_NLx16;
  static constexpr int kOffsetShift = 7;  // grid values + 128
  static constexpr bool kHasMin = false;
  static constexpr bool kSplitChains = false;
};

// A K pair's lane scales d x sc and offsets -(dmin x m): d and dmin of super-block b / 8 times
// lane b's six-bit scale and min (blocks.h), all exact in float.
inline void k_pair_factors(const KPairHead& head, __m512& d, __m512& m) {
  // [d0, d1, dmin0, dmin1], then spread to lanes 0-7 (super-block 0) and 8-15.
  const __m512 h = _mm512_castps128_ps512(
      _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&head))));
  const __m512i sb = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m512 dd = _mm512_permutexvar_ps(sb, h);
  const __m512 dm = _mm512_permutexvar_ps(_mm512_add_epi32(sb, _mm512_set1_epi32(2)), h);
  static_assert(offsetof(KPairHead, scales) == 8 && offsetof(KPairHead, mins) == 20);
  const __m512i sc = six_bit_lanes(head.scales - 4);
  const __m512i mn = six_bit_lanes(head.mins - 4);
  d = _mm512_mul_ps(dd, _mm512_cvtepi32_ps(sc));
  m = _mm512_mul_ps(dm, _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_setzero_si512(), mn)));
}

struct Q4_Kx16P : NibbleQuants<BlockQ4_Kx16P> {
  using Group = BlockQ4_Kx16P;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kHasMin = true;
  static constexpr bool kSplitChains = false;
  static void factors(const Group& g, __m512& d, __m512& m) { k_pair_factors(g.head, d, m); }
};

// Q5_1_X16's quants with the K pair's factors.
struct Q5_Kx16P : FifthBitQuants<BlockQ5_Kx16P> {
  using Group = BlockQ5_Kx16P;
  static constexpr int kOffsetShift = -1;
  static constexpr bool kHasMin = true;
  static constexpr bool kSplitChains = false;
  static void factors(const Group& g, __m512& d, __m512& m) { k_pair_factors(g.head, d, m); }
};

// IQ4_NL_X16's quants with lane scales d x (ls - 32): the pair's six-bit string of ls and
// its two super-blocks' d spread to lanes 0-7 and 8-15.
struct Iq4XSx16P : GridQuants<BlockIQ4_XSx16P> {
  using Group = BlockIQ4_XSx16P;
  static constexpr int kOffsetShift = 7;  // grid values + 128
  static constexpr bool kHasMin = false;
  static constexpr bool kSplitChains = false;
  static void factors(const Group& g, __m512& d, __m512&) {
    static_assert(offsetof(IQ4XSPairHead, scales) == 4);
    const __m512i ls = six_bit_lanes(g.head.scales - 4);
    int32_t both;  // d[0], d[1]
    std::memcpy(&both, g.head.d, sizeof both);
    const __m512 h = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(both)));
    const __m512 dd =
        _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), h);
    d = _mm512_mul_ps(dd, _mm512_cvtepi32_ps(_mm512_sub_epi32(ls, _mm512_set1_epi32(32))));
  }
};

}  // namespace

float iq4_xs_x16p_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<GroupRows<Iq4XSx16P>>(n / kQKX16, w, a);
}
void iq4_xs_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                      int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<FactorGroupRows<Iq4XSx16P>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y,
                                                 ldy);
}

float q4_k_x16p_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<GroupRows<Q4_Kx16P>>(n / kQKX16, w, a);
}
void q4_k_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<FactorGroupRows<Q4_Kx16P>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y,
                                                ldy);
}
float q5_k_x16p_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<GroupRows<Q5_Kx16P>>(n / kQKX16, w, a);
}
void q5_k_x16p_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<FactorGroupRows<Q5_Kx16P>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y,
                                                ldy);
}

float q4_1_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<GroupRows<Q4_1x16>>(n / kQKX16, w, a);
}
float q5_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<GroupRows<Q5_0x16>>(n / kQKX16, w, a);
}
float q5_1_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<GroupRows<Q5_1x16>>(n / kQKX16, w, a);
}
float iq4_nl_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<GroupRows<Iq4NLx16>>(n / kQKX16, w, a);
}

void q4_1_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<GroupRows<Q4_1x16>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void q5_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<GroupRows<Q5_0x16>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void q5_1_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<GroupRows<Q5_1x16>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void iq4_nl_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                     int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<GroupRows<Iq4NLx16>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

STRATA_DEFINE_AMX_GEMMS(q4_1_x16, Q4_1x16)
STRATA_DEFINE_AMX_GEMMS(q5_0_x16, Q5_0x16)
STRATA_DEFINE_AMX_GEMMS(q5_1_x16, Q5_1x16)
STRATA_DEFINE_AMX_GEMMS(iq4_nl_x16, Iq4NLx16)
STRATA_DEFINE_AMX_GEMMS(q4_k_x16p, Q4_Kx16P)
STRATA_DEFINE_AMX_GEMMS(q5_k_x16p, Q5_Kx16P)
STRATA_DEFINE_AMX_GEMMS(iq4_xs_x16p, Iq4XSx16P)

}  // namespace strata::kernels::avx512

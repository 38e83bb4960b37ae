// AVX-512 VNNI kernels for Q4_0_X16 and Q8_0_X16 weights against Q8_0_X16A activations
// (blocks.h).
//
// Per group of 16 blocks and (row, token): the weights come in as 8 registers of unsigned
// bytes (Q4_0: four 64-byte loads, each split into low and high nibbles; Q8_0: eight
// loads, already unsigned), 8 vpdpbusd accumulate all 16 blocks at once into one int32
// lane per block, starting from -offset * the activation's block sums (which cancels the
// unsigned offset), then one convert, one scale multiply and one fma. About 28
// instructions per 16 blocks against ~100 for the file layouts (legacy_avx512.cpp), which
// lets a GEMV keep up with memory and a GEMM spend most of its time in vpdpbusd. The
// integer lanes are exact and the float steps follow the reference's order
// (ref::q4_0_x16_vec_dot, q8_0_x16_vec_dot), so every output is bit-identical to it,
// whatever the tile, batch or thread split.
// A GEMV runs one row x 1-3 tokens at a time (gemm_tile); a GEMM runs register blocks of
// 2 rows x 4 tokens (gemm_block, gemm_by_row_blocks in token_tiles.h), which load each
// activation vector once for 2 rows and each weight vector once for 4 tokens; its last
// rows and tokens fall back to gemm_tile.
// GCC 12's AVX-512 headers start many intrinsics from _mm512_undefined_*(), which its
// flow analysis reports as uninitialized once inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "kernels/quant/amx_group_gemm.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"
#include "kernels/quant/token_tiles.h"
#include "kernels/quant/x16_group_avx512.h"

namespace strata::kernels::avx512 {
namespace {

struct Q4x16 {
  using Group = BlockQ4_0x16;
  static constexpr int kOffsetShift = 3;  // nibbles are q + 8
  static constexpr bool kHasMin = false;
  // gemm_block: one vpdpbusd chain per (row, token); two (even and odd k) measured 10%
  // slower here and 10% faster for Q8_0 (noisy, shared machine).
  static constexpr bool kSplitChains = false;
  static void quants(const Group& g, __m512i (&q)[8]) {
    const __m512i mask = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i v = load64(g.qs + 64 * c);
      q[c] = _mm512_and_si512(v, mask);                            // elements 4c..4c+3
      q[c + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);  // 16+4c..16+4c+3
    }
  }
  // Weight vectors c and c + 4 (the block kernel's way: one load, two registers).
  static void vec_pair(const Group& g, int c, __m512i mask, __m512i& lo, __m512i& hi) {
    nibble_pair(g.qs, c, mask, lo, hi);
  }
};

struct Q8x16 {
  using Group = BlockQ8_0x16;
  static constexpr int kOffsetShift = 7;  // quants are stored as q + 128
  static constexpr bool kHasMin = false;
  static constexpr bool kSplitChains = true;
  // Whole-line loads: the group puts its quants on a 64-byte boundary (blocks.h).
  static void quants(const Group& g, __m512i (&q)[8]) {
    const uint8_t* qs = q8_0_x16_qs(g);
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) q[k] = _mm512_loadu_si512(qs + 64 * k);
  }
  // Weight vector k alone (the block kernel's way: one register at a time).
  static __m512i vec(const Group& g, int k, __m512i) {
    return _mm512_loadu_si512(q8_0_x16_qs(g) + 64 * k);
  }
  static void factors(const Group& g, __m512& d, __m512&) {
    d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8_0_x16_d(g))));
  }
};

template <class W>
using Rows = GroupRows<W>;

// rounding.h's round_away_clamped, 16 lanes, as int32 (NaN becomes +limit as there; limit
// at most 127 here). After the clamp, v + (0.5 - 2^-25 with v's sign) truncates to v
// rounded half away from zero: checked against the scalar steps for every float of
// magnitude up to 200 (5 instructions instead of 11).
inline __m512i round_away_clamped_epi32(__m512 v, float limit) {
  v = _mm512_min_ps(v, _mm512_set1_ps(limit));
  v = _mm512_max_ps(v, _mm512_set1_ps(-limit));
  const __m512i nudge = _mm512_ternarylogic_epi32(  // (sign & v) | (0.5 - 2^-25)
      _mm512_set1_epi32(INT32_MIN), _mm512_castps_si512(v),
      _mm512_castps_si512(_mm512_set1_ps(0.49999997f)), 0xea);
  return _mm512_cvttps_epi32(_mm512_add_ps(v, _mm512_castsi512_ps(nudge)));
}

// The rows of a vpermt2d control table, as registers (loaded once per call, not per group).
template <size_t N>
inline void load_controls(const int32_t (&table)[N][16], __m512i (&controls)[N]) {
#pragma GCC unroll 4
  for (size_t i = 0; i < N; ++i) controls[i] = _mm512_load_si512(table[i]);
}

// Lane b = the maximum of v[b]'s 16 lanes (a transposing tree of 15 maxima instead of 16
// reductions; max is exact, so the order does not matter).
inline __m512 reduce16_max(const __m512 (&v)[16]) {
  __m512 s[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // 128-bit lanes: v[2i] 0-1 vs 2-3 | v[2i+1] 0-1 vs 2-3
    s[i] = _mm512_max_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xee));
  }
  __m512 u[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // 128-bit lane q: vector 4i + q
    u[i] = _mm512_max_ps(_mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0xdd));
  }
  __m512 z[2];
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {  // 128-bit lane q: vectors 8i + q, 8i + 4 + q
    z[i] = _mm512_max_ps(_mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0x44),
                         _mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0xee));
  }
  // 128-bit lane q: [v[q], v[4 + q], v[8 + q], v[12 + q]]; then lane b = v[b].
  const __m512 r =
      _mm512_max_ps(_mm512_shuffle_ps(z[0], z[1], 0x88), _mm512_shuffle_ps(z[0], z[1], 0xdd));
  return _mm512_permutexvar_ps(
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
}

// vpermt2d controls for transpose_x16a, from where each level puts (block, dword k):
//   level 1, half h: pairs[p] and pairs[p + 4] -> lane 4i + j = block 2p + i % 2 + 8(i / 2),
//                    k = 4h + j (i, j < 4)
//   level 2, step s: two level-1 results of one h, p and p + 2 -> lane 8q + 2i + j = level
//                    1's lane 4i + 2s + j of source q (k = 4h + 2s + j)
//   level 3, m:      the two of one (h, s), p = 0 and 1 -> lane b = block b, k = 4h + 2s + m
struct X16aTranspose {
  alignas(64) int32_t level1[2][16];
  alignas(64) int32_t level2[2][16];
  alignas(64) int32_t level3[2][16];
};
inline constexpr X16aTranspose kX16aTranspose = [] {
  X16aTranspose t{};
  for (int v = 0; v < 2; ++v) {
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) t.level1[v][4 * i + j] = 16 * (i / 2) + 8 * (i % 2) + 4 * v + j;
    }
    for (int q = 0; q < 2; ++q) {
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 2; ++j) t.level2[v][8 * q + 2 * i + j] = 16 * q + 4 * i + 2 * v + j;
      }
    }
    for (int b = 0; b < 16; ++b) {
      // Block b = 2p' + i % 2 + 8(i / 2) with p' = p + 2q: its place after level 2.
      const int pp = (b % 8) / 2, i = b % 2 + 2 * (b / 8);
      t.level3[v][b] = 16 * (pp % 2) + 8 * (pp / 2) + 2 * i + v;
    }
  }
  return t;
}();

// The 16 x 8 dword transpose of a group's quants: pairs[p] lane 8h + k is dword k of block
// 2p + h; vecs[k] lane b is dword k of block b. 24 vpermt2d (8 gathers before, ~3x slower).
inline void transpose_x16a(const __m512i (&pairs)[8], const __m512i (&level1)[2],
                           const __m512i (&level2)[2], const __m512i (&level3)[2],
                           __m512i (&vecs)[8]) {
  __m512i l1[4][2];
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h)
      l1[p][h] = _mm512_permutex2var_epi32(pairs[p], level1[h], pairs[p + 4]);
  }
  __m512i l2[2][2][2];
#pragma GCC unroll 2
  for (int p = 0; p < 2; ++p) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 2
      for (int s = 0; s < 2; ++s)
        l2[p][h][s] = _mm512_permutex2var_epi32(l1[p][h], level2[s], l1[p + 2][h]);
    }
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 2
    for (int s = 0; s < 2; ++s) {
#pragma GCC unroll 2
      for (int m = 0; m < 2; ++m) {
        vecs[4 * h + 2 * s + m] = _mm512_permutex2var_epi32(l2[0][h][s], level3[m], l2[1][h][s]);
      }
    }
  }
}

}  // namespace

void q8_0_x16a_from_float(const float* src, void* dst, int64_t n) {
  auto* groups = static_cast<BlockQ8_0x16A*>(dst);
  __m512i level1[2], level2[2], level3[2];
  load_controls(kX16aTranspose.level1, level1);
  load_controls(kX16aTranspose.level2, level2);
  load_controls(kX16aTranspose.level3, level3);
  for (int64_t g = 0; g < n / kQKX16; ++g) {
    const float* x = src + g * kQKX16;
    BlockQ8_0x16A& out = groups[g];
    // The 16 blocks' scales at once, one lane per block, by ref::q8_0_from_float's steps.
    __m512 amax[kX16Blocks];
#pragma GCC unroll 16
    for (int b = 0; b < kX16Blocks; ++b) {
      // NaN skipped as in the scalar max: max_ps returns its second operand when either is
      // NaN, and every second operand here is a number.
      const __m512 hi =
          _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + kQK8_0 * b + 16)), _mm512_setzero_ps());
      amax[b] = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + kQK8_0 * b)), hi);
    }
    const __m512 m = reduce16_max(amax);
    __m256i dh = _mm512_cvtps_ph(_mm512_div_ps(m, _mm512_set1_ps(127.0f)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __mmask16 below = _mm512_cmp_ps_mask(
        _mm512_mul_ps(_mm512_cvtph_ps(dh), _mm512_set1_ps(127.0f)), m, _CMP_LT_OQ);
    dh = _mm256_mask_add_epi16(dh, below, dh, _mm256_set1_epi16(1));  // next half up
    const __m512 d = _mm512_cvtph_ps(dh);
    const __m512 id = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_UQ),
                                          _mm512_set1_ps(1.0f), d);
    _mm512_storeu_ps(out.d, d);
    // Quants block by block, two blocks per register (dword k of block 2p + h is lane
    // 8h + k of pairs[p]), then transposed: vector k is dword k of every block.
    __m512i pairs[kX16Blocks / 2];
#pragma GCC unroll 8
    for (int p = 0; p < kX16Blocks / 2; ++p) {
      __m256i blocks[2];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int b = 2 * p + h;
        const __m512 s = _mm512_permutexvar_ps(_mm512_set1_epi32(b), id);
        __m128i half[2];
#pragma GCC unroll 2
        for (int i = 0; i < 2; ++i) {
          half[i] = _mm512_cvtsepi32_epi8(round_away_clamped_epi32(
              _mm512_mul_ps(_mm512_loadu_ps(x + kQK8_0 * b + 16 * i), s), 127.0f));
        }
        blocks[h] = _mm256_inserti128_si256(_mm256_castsi128_si256(half[0]), half[1], 1);
      }
      pairs[p] = _mm512_inserti64x4(_mm512_castsi256_si512(blocks[0]), blocks[1], 1);
    }
    __m512i vecs[8];
    transpose_x16a(pairs, level1, level2, level3, vecs);
    __m512i sums = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int k = 0; k < kQK8_0 / 4; ++k) {
      _mm512_storeu_si512(out.qs + 64 * k, vecs[k]);
      sums = _mm512_dpbusd_epi32(sums, _mm512_set1_epi8(1), vecs[k]);  // + the 4 signed quants
    }
    _mm512_storeu_si512(out.sum, sums);
  }
}

namespace {

// vpermt2d controls for transpose_x16k: pairs[m] lane 4s + k is dword k of sub-block
// 4m + s; level 1, half h: pairs[2p], pairs[2p + 1] -> lane 8i + s = sub-block 8p + s,
// k = 2h + i (i < 2, s < 8); level 2, i: the two of one h -> lane j = sub-block j, k = 2h + i.
struct X16kTranspose {
  alignas(64) int32_t level1[2][16];
  alignas(64) int32_t level2[2][16];
};
inline constexpr X16kTranspose kX16kTranspose = [] {
  X16kTranspose t{};
  for (int v = 0; v < 2; ++v) {
    for (int i = 0; i < 2; ++i) {
      for (int s = 0; s < 8; ++s) t.level1[v][8 * i + s] = 16 * (s / 4) + 4 * (s % 4) + 2 * v + i;
    }
    for (int j = 0; j < 16; ++j) t.level2[v][j] = 16 * (j / 8) + 8 * v + j % 8;
  }
  return t;
}();

}  // namespace

void q8_k_x16a_from_float(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ8_Kx16A*>(dst);
  __m512i level1[2], level2[2];
  load_controls(kX16kTranspose.level1, level1);
  load_controls(kX16kTranspose.level2, level2);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    BlockQ8_Kx16A& out = blocks[b];
    // ref::q8_k_from_float's steps: amax over the super-block (NaN skipped: max returns its
    // second operand when either is NaN), iscale = 127 / amax, quants nearest (ties to
    // even; NaN 0) clamped to 127.
    __m512 v[16];
    __m512 amax = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
      v[j] = _mm512_loadu_ps(x + 16 * j);
      amax = _mm512_max_ps(_mm512_abs_ps(v[j]), amax);
    }
    const float m = _mm512_reduce_max_ps(amax);
    if (!(m >= 1e-30f)) {
      std::memset(&out, 0, sizeof out);
      continue;
    }
    const float iscale = 127.0f / m;
    const __m512 s = _mm512_set1_ps(iscale);
    // Sub-block j's 16 quants are dwords 0-3 of lane j in the output; 4 per register first.
    __m512i pairs[4];
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      __m128i sub[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const __m512 q = _mm512_mul_ps(v[4 * p + i], s);
        __m512i qi = _mm512_maskz_cvtps_epi32(_mm512_cmp_ps_mask(q, q, _CMP_ORD_Q), q);
        qi =
            _mm512_max_epi32(_mm512_min_epi32(qi, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
        sub[i] = _mm512_cvtepi32_epi8(qi);
      }
      pairs[p] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_setr_m128i(sub[0], sub[1])),
                                    _mm256_setr_m128i(sub[2], sub[3]), 1);
    }
    __m512i sums = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m512i l1[2] = {_mm512_permutex2var_epi32(pairs[0], level1[h], pairs[1]),
                             _mm512_permutex2var_epi32(pairs[2], level1[h], pairs[3])};
#pragma GCC unroll 2
      for (int i = 0; i < 2; ++i) {
        const __m512i vec = _mm512_permutex2var_epi32(l1[0], level2[i], l1[1]);
        _mm512_storeu_si512(out.qs + 64 * (2 * h + i), vec);
        sums = _mm512_dpbusd_epi32(sums, _mm512_set1_epi8(1), vec);  // + the 4 signed quants
      }
    }
    const __m512i neg_sums = _mm512_sub_epi32(_mm512_setzero_si512(), sums);
    _mm512_storeu_si512(out.bias, _mm512_slli_epi32(neg_sums, 5));
    // The last line: d in dword 0, sub-blocks 2k and 2k + 1's int16 sums (neg_sums) in the
    // high dword of qword k, zeros elsewhere.
    static_assert(offsetof(BlockQ8_Kx16A, neg_sums) == offsetof(BlockQ8_Kx16A, d) + 4 &&
                  sizeof(BlockQ8_Kx16A) == offsetof(BlockQ8_Kx16A, d) + 64);
    const __m512i sum_pairs =
        _mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_cvtepi32_epi16(neg_sums)), 32);
    const __m512i d = _mm512_zextsi128_si512(_mm_castps_si128(_mm_set_ss(1.0f / iscale)));
    _mm512_storeu_si512(&out.d, _mm512_or_si512(sum_pairs, d));
  }
}

void q8_0_x16at_from_float(const float* src, void* dst, int64_t n) {
  q8_0_x16a_from_float(src, dst, n);
  const auto* groups = static_cast<const BlockQ8_0x16A*>(dst);
  const int64_t ng = n / kQKX16;
  auto* rows = static_cast<uint8_t*>(dst) + ng * static_cast<int64_t>(sizeof(BlockQ8_0x16A));
  for (int64_t g = 0; g < ng; ++g) {
    __m512i v[16], t[16];
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k)
      v[k] = k < 8 ? _mm512_loadu_si512(groups[g].qs + 64 * k) : _mm512_setzero_si512();
    transpose16_epi32(v, t);  // t[b]: block b's 8 dwords, then zeros
#pragma GCC unroll 16
    for (int b = 0; b < kX16Blocks; ++b) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(rows + (g * kX16Blocks + b) * 32),
                          _mm512_castsi512_si256(t[b]));
    }
  }
}

float q4_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows<Q4x16>>(n / kQKX16, w, a);
}
float q8_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows<Q8x16>>(n / kQKX16, w, a);
}

void q4_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<Rows<Q4x16>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q8_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<Rows<Q8x16>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

STRATA_DEFINE_AMX_GEMMS(q4_0_x16, Q4x16)
STRATA_DEFINE_AMX_GEMMS(q8_0_x16, Q8x16)

}  // namespace strata::kernels::avx512

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
  // Weight vector k alone (the block kernel's way: one register at a time).
  static __m512i vec(const Group& g, int k, __m512i mask) {
    const __m512i v = _mm512_loadu_si512(g.qs + 64 * (k % 4));
    return _mm512_and_si512(k < 4 ? v : _mm512_srli_epi16(v, 4), mask);
  }
};

struct Q8x16 {
  using Group = BlockQ8_0x16;
  static constexpr int kOffsetShift = 7;  // quants are stored as q + 128
  static constexpr bool kHasMin = false;
  static constexpr bool kSplitChains = true;
  static void quants(const Group& g, __m512i (&q)[8]) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) q[k] = load64(g.qs + 64 * k);
  }
  static __m512i vec(const Group& g, int k, __m512i) {
    return _mm512_loadu_si512(g.qs + 64 * k);
  }
};

template <class W>
using Rows = GroupRows<W>;

// rounding.h's round_away_clamped, 16 lanes (the same steps as the AVX2 version, so NaN
// becomes +limit as there).
inline __m512 round_away_clamped(__m512 v, float limit) {
  v = _mm512_min_ps(v, _mm512_set1_ps(limit));
  v = _mm512_max_ps(v, _mm512_set1_ps(-limit));
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_sub_ps(v, t);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 up =
      _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ), one);
  const __m512 down =
      _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(frac, _mm512_set1_ps(-0.5f), _CMP_LE_OQ), one);
  return _mm512_sub_ps(_mm512_add_ps(t, up), down);
}

}  // namespace

void q8_0_x16a_from_float(const float* src, void* dst, int64_t n) {
  auto* groups = static_cast<BlockQ8_0x16A*>(dst);
  const __m512i dword_of_block =
      _mm512_setr_epi32(0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120);
  for (int64_t g = 0; g < n / kQKX16; ++g) {
    const float* x = src + g * kQKX16;
    BlockQ8_0x16A& out = groups[g];
    // The 16 blocks' scales at once, one lane per block, by ref::q8_0_from_float's steps.
    alignas(64) float amax[kX16Blocks];
    for (int b = 0; b < kX16Blocks; ++b) {
      const __m512 lo = _mm512_abs_ps(_mm512_loadu_ps(x + kQK8_0 * b));
      const __m512 hi = _mm512_abs_ps(_mm512_loadu_ps(x + kQK8_0 * b + 16));
      amax[b] = _mm512_reduce_max_ps(_mm512_max_ps(lo, hi));
    }
    const __m512 m = _mm512_load_ps(amax);
    __m256i dh = _mm512_cvtps_ph(_mm512_div_ps(m, _mm512_set1_ps(127.0f)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __mmask16 below = _mm512_cmp_ps_mask(
        _mm512_mul_ps(_mm512_cvtph_ps(dh), _mm512_set1_ps(127.0f)), m, _CMP_LT_OQ);
    dh = _mm256_mask_add_epi16(dh, below, dh, _mm256_set1_epi16(1));  // next half up
    const __m512 d = _mm512_cvtph_ps(dh);
    const __m512 id = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_UQ),
                                          _mm512_set1_ps(1.0f), d);
    _mm512_storeu_ps(out.d, d);
    alignas(64) float ids[kX16Blocks];
    _mm512_store_ps(ids, id);
    // Quants block by block, then regrouped: dword k of block b goes to qs[64k + 4b].
    alignas(64) int8_t q[kX16Blocks][kQK8_0];
    for (int b = 0; b < kX16Blocks; ++b) {
      const __m512 s = _mm512_set1_ps(ids[b]);
      for (int h = 0; h < 2; ++h) {
        const __m512 v =
            round_away_clamped(_mm512_mul_ps(_mm512_loadu_ps(x + kQK8_0 * b + 16 * h), s), 127.0f);
        _mm_store_si128(reinterpret_cast<__m128i*>(q[b] + 16 * h),
                        _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(v)));
      }
    }
    __m512i sums = _mm512_setzero_si512();
    for (int k = 0; k < kQK8_0 / 4; ++k) {
      const __m512i lanes =
          _mm512_i32gather_epi32(_mm512_add_epi32(dword_of_block, _mm512_set1_epi32(k)), q, 4);
      _mm512_storeu_si512(out.qs + 64 * k, lanes);
      sums = _mm512_dpbusd_epi32(sums, _mm512_set1_epi8(1), lanes);  // + the 4 signed quants
    }
    _mm512_storeu_si512(out.sum, sums);
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

}  // namespace strata::kernels::avx512

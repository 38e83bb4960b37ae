// Small AVX-512 helpers for the *_avx512.cpp files only. Internal linkage (static inline)
// for the reason avx2_util.h gives: a copy compiled with AVX-512 must not be merged into
// code that runs on CPUs without it.
#pragma once

#ifndef __AVX512F__
#error "avx512_util.h may only be included by files compiled with -mavx512f (named *_avx512.cpp)"
#endif

#include <immintrin.h>

#include <cstdint>

#include "kernels/quant/block_span.h"

namespace strata::kernels::avx512 {

// 64 bytes loaded once into a register. A vector that several instructions read is
// otherwise folded into each of them as a memory operand by GCC (one load per use; from an
// unaligned address, each a cache-line-split load).
static inline __m512i load_in_register(const void* p) {
  __m512i v = _mm512_loadu_si512(p);
  __asm__("" : "+v"(v));
  return v;
}

// The 64-bit mask stored at p, loaded straight into a mask register (kmovq k, m64). From
// C++ GCC often loads it into a general register first, and the move from there to a mask
// register throttled the Q5_K and Q3_K GEMVs.
static inline __mmask64 load_mask64(const void* p) {
  __mmask64 m;
  __asm__("kmovq %1, %0" : "=k"(m) : "m"(*static_cast<const uint64_t*>(p)));
  return m;
}

// The 16 lanes summed as a tree: lane i + 8, then + 4, + 2, + 1 (the scalar models'
// order, and the AVX2 kernels' sum of their two 8-lane accumulators).
static inline float hsum16(__m512 acc) {
  const __m256 v = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// hsum16 of 8 vectors at once, the same additions in the same pairs (so each out[i] is
// hsum16(v[i])'s bits) with the adds shared: 23 instructions instead of 8 x 7.
static inline void hsum16x8(const __m512 v[8], float out[8]) {
  __m512 s[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // lane j + lane j + 8: [v[2i] (8 lanes) | v[2i+1] (8)]
    s[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xee));
  }
  __m512 u[2];
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {  // + 4: 128-bit lane q holds vector 4i + q's 4 lanes
    u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0xdd));
  }
  // + 2: lanes 4q, 4q + 1 from u[0], 4q + 2, 4q + 3 from u[1]; then + 1.
  const __m512 z =
      _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], 0x44), _mm512_shuffle_ps(u[0], u[1], 0xee));
  const __m512 r = _mm512_add_ps(z, _mm512_shuffle_ps(z, z, 0xb1));
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, r);
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) out[q] = lanes[4 * q], out[4 + q] = lanes[4 * q + 2];
}

// y[t * ldy + r] = hsum16(acc[r][t]) for a block's accumulators (hsum16x8 where there
// are 8).
template <int kRows, int T>
static inline void store_block_sums(const __m512 (&acc)[kRows][T], float* y, int64_t ldy) {
  if constexpr (kRows * T == 8) {
    float sums[8];
    hsum16x8(&acc[0][0], sums);
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) y[(i % T) * ldy + i / T] = sums[i];
  } else {
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) y[t * ldy + r] = hsum16(acc[r][t]);
    }
  }
}

// A register block's accumulators at the start of its span (token_tiles.h's BlockSpan):
// zero at the row's first group, else where the previous span left them.
template <int kRows, int T>
static inline void start_block(const BlockSpan& span, __m512 (&acc)[kRows][T]) {
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      acc[r][t] =
          span.begin == 0 ? _mm512_setzero_ps() : _mm512_load_ps(span.carry + (r * T + t) * 16);
  }
}

// At the end of a span: the lane sums into y after the row's last group, else the
// accumulators back into the carry for the next span (the same floats, so the same bits).
template <int kRows, int T>
static inline void finish_block(const BlockSpan& span, const __m512 (&acc)[kRows][T], float* y,
                                int64_t ldy) {
  if (span.end == span.n) {
    store_block_sums<kRows, T>(acc, y, ldy);
    return;
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) _mm512_store_ps(span.carry + (r * T + t) * 16, acc[r][t]);
  }
}

// For vpermw: 16-bit lane l of the c-th register of 64 quants (2 per lane) belongs to
// sub-block c * (32 / kLanesPerSub) + l / kLanesPerSub. Built once, at compile time.
template <int kLanesPerSub>
struct SubBlockOfLane {
  alignas(64) int16_t idx[4][32] = {};
  constexpr SubBlockOfLane() {
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l)
        idx[c][l] = static_cast<int16_t>(c * (32 / kLanesPerSub) + l / kLanesPerSub);
    }
  }
  __m512i load(int c) const { return _mm512_load_si512(idx[c]); }
};
constexpr SubBlockOfLane<16> kQ4KSubBlocks;  // 32-element sub-blocks (Q4_K, Q5_K, IQ4_XS)
constexpr SubBlockOfLane<8> kQ6KSubBlocks;   // 16-element sub-blocks (Q6_K, Q3_K, Q2_K)

}  // namespace strata::kernels::avx512

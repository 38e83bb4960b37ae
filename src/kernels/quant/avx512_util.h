// Small AVX-512 helpers for the *_avx512.cpp files only. Internal linkage (static inline)
// for the reason avx2_util.h gives: a copy compiled with AVX-512 must not be merged into
// code that runs on CPUs without it.
#pragma once

#ifndef __AVX512F__
#error "avx512_util.h may only be included by files compiled with -mavx512f (named *_avx512.cpp)"
#endif

#include <immintrin.h>

#include <cstdint>

namespace strata::kernels::avx512 {

// The 16 lanes summed as a tree: lane i + 8, then + 4, + 2, + 1 (the scalar models'
// order, and the AVX2 kernels' sum of their two 8-lane accumulators).
static inline float hsum16(__m512 acc) {
  const __m256 v = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
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

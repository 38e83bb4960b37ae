// Small AVX-512 helpers for the *_avx512.cpp files only. Internal linkage (static inline)
// for the reason avx2_util.h gives: a copy compiled with AVX-512 must not be merged into
// code that runs on CPUs without it.
#pragma once

#ifndef __AVX512F__
#error "avx512_util.h may only be included by files compiled with -mavx512f (named *_avx512.cpp)"
#endif

#include <immintrin.h>

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

}  // namespace strata::kernels::avx512

// Sixteen floats in an AVX-512 register, the element-wise arithmetic of simd_exp.h's
// exp_clamped, with every step the lane-wise twin of simd_avx2.h's Avx2Float (times_pow2
// too), so a kernel written over either gives the same bits in every lane.
// Include it only from *_avx512.cpp files, the ones compiled with AVX-512 flags.
#pragma once

#include <immintrin.h>

namespace strata::kernels::simd {

struct Avx512Float {
  using F = __m512;
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F round_nearest(F x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // y * 2^n with n integral in [-126, 127]: n placed in the exponent bits.
  static F times_pow2(F y, F n) {
    const __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
  }
};

}  // namespace strata::kernels::simd

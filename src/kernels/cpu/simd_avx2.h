// Eight floats in an AVX2 register, as the vector type of the templates written once over
// one (simd_exp.h's exp_clamped, attention's fold_simd.h): the element-wise arithmetic.
// Include it only from *_avx2.cpp files, the ones compiled with -mavx2 -mfma.
#pragma once

#include <immintrin.h>

namespace strata::kernels::simd {

struct Avx2Float {
  using F = __m256;
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F round_nearest(F x) {
    return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // y * 2^n with n integral in [-126, 127]: n placed in the exponent bits.
  static F times_pow2(F y, F n) {
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  }
};

}  // namespace strata::kernels::simd

// SwiGLU on 16 lanes: a decode step runs it on one thread between the gate/up and down
// matmuls (5632 elements per layer at llama-1b), where the other threads wait for it.
// GCC 12's AVX-512 headers start many intrinsics from _mm512_undefined_*(), which its
// flow analysis reports as uninitialized once inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/cpu/ops_avx512.h"

#include <immintrin.h>

#include "kernels/cpu/simd_avx512.h"
#include "kernels/cpu/simd_exp.h"

namespace strata::kernels::avx512 {
namespace {

// ops_avx2.cpp's swiglu8, lane for lane: t = exp(-|g|), silu(g) = g / (1 + t) for g >= 0
// and g * t / (1 + t) below (the sign bit picks, as blendv does there).
inline __m512 swiglu16(__m512 g, __m512 u) {
  const __m512 abs_g = _mm512_abs_ps(g);
  const __m512 t = simd::exp_clamped<simd::Avx512Float>(_mm512_sub_ps(_mm512_setzero_ps(), abs_g));
  const __mmask16 negative = _mm512_movepi32_mask(_mm512_castps_si512(g));
  const __m512 num = _mm512_mask_mul_ps(g, negative, g, t);
  return _mm512_mul_ps(_mm512_div_ps(num, _mm512_add_ps(_mm512_set1_ps(1.0f), t)), u);
}

}  // namespace

void swiglu(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(gate + i, swiglu16(_mm512_loadu_ps(gate + i), _mm512_loadu_ps(up + i)));
  if (i < n) {  // the tail in masked lanes
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(
        gate + i, m,
        swiglu16(_mm512_maskz_loadu_ps(m, gate + i), _mm512_maskz_loadu_ps(m, up + i)));
  }
}

}  // namespace strata::kernels::avx512

// AVX-512 probes: f32 FMA peak with 512-bit registers, and the int8 dot-product peak of
// vpdpbusd (the AVX-512 VNNI matmul kernels' instruction).
#pragma GCC diagnostic ignored "-Wuninitialized"  // see legacy_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/cpu/roofline.h"

namespace strata::kernels::detail {

double fma_loop_avx512(long iterations) {
  // 12 independent accumulators hide the FMA latency on two 512-bit FMA pipes; the unroll
  // pragma keeps them in registers (a rolled loop over an array goes through memory).
  __m512 acc[12];
#pragma GCC unroll 12
  for (int k = 0; k < 12; ++k) acc[k] = _mm512_set1_ps(0.001f * static_cast<float>(k));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
  }
  __m512 s = acc[0];
#pragma GCC unroll 12
  for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, acc[k]);
  volatile float sink = _mm512_reduce_add_ps(s);
  (void)sink;
  return static_cast<double>(iterations) * 12 * 16 * 2;
}

double int8_dot_loop_avx512(long iterations) {
  __m512i acc[12];
#pragma GCC unroll 12
  for (int k = 0; k < 12; ++k) acc[k] = _mm512_set1_epi32(k);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_dpbusd_epi32(acc[k], a, b);
  }
  __m512i s = acc[0];
#pragma GCC unroll 12
  for (int k = 1; k < 12; ++k) s = _mm512_add_epi32(s, acc[k]);
  volatile int sink = _mm512_reduce_add_epi32(s);
  (void)sink;
  return static_cast<double>(iterations) * 12 * 64 * 2;  // 64 multiply-adds per step
}

}  // namespace strata::kernels::detail

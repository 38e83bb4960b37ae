#include <immintrin.h>

#include "core/prefetch.h"
#include "kernels/cpu/roofline.h"

namespace strata::kernels::detail {

float sum_floats_avx2(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  // The page kick (core/prefetch.h), as the GEMV kernels do: without it this loop read
  // 10-20% slower than a Q8_0 decode streams its weights, so it was not the limit.
  for (; i + 32 <= n; i += 32) {
    prefetch_page_ahead(p + i, 32 * sizeof(float));
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + 24));
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  float total = 0;
  for (float x : lanes) total += x;
  for (; i < n; ++i) total += p[i];
  return total;
}

double fma_loop_avx2(long iterations) {
  // 10 independent accumulators hide the FMA latency (4-5 cycles) on two FMA ports. The
  // unroll pragmas keep them in registers: GCC leaves a loop over the array rolled at -O2,
  // and the accumulators then round-trip through memory (a third of the real peak).
  __m256 acc[10];
#pragma GCC unroll 10
  for (int k = 0; k < 10; ++k) acc[k] = _mm256_set1_ps(0.001f * static_cast<float>(k));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 10
    for (int k = 0; k < 10; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
  }
  __m256 s = acc[0];
#pragma GCC unroll 10
  for (int k = 1; k < 10; ++k) s = _mm256_add_ps(s, acc[k]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  volatile float sink = lanes[0];
  (void)sink;
  return static_cast<double>(iterations) * 10 * 8 * 2;
}

double int8_dot_loop_avx2(long iterations) {
  // The quantized matmuls' inner step: u8 x s8 pairs summed into i16 (vpmaddubsw), then
  // pairs of i16 into i32 (vpmaddwd), then accumulated. 4 accumulators (only the add is on
  // their chains). Each step's operand passes an empty asm, which the compiler must assume
  // changed it: with constant operands it hoisted the products out of the loop, and the
  // probe timed vpaddd alone (441 against 306 GOP/s for AVX-VNNI's vpdpbusd on one Zen 5
  // core, which does the same work in one instruction).
  __m256i acc[4], b[4];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    acc[k] = _mm256_set1_epi32(k);
    b[k] = _mm256_set1_epi8(static_cast<char>(-2 - k));
  }
  const __m256i a = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      __asm__("" : "+x"(b[k]));
      acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b[k]), ones));
    }
  }
  __m256i s = acc[0];
#pragma GCC unroll 4
  for (int k = 1; k < 4; ++k) s = _mm256_add_epi32(s, acc[k]);
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  volatile int32_t sink = lanes[0];
  (void)sink;
  return static_cast<double>(iterations) * 4 * 32 * 2;  // 32 multiply-adds per step
}

}  // namespace strata::kernels::detail

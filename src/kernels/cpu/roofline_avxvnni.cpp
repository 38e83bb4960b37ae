// The roofline's int8 peak at the avx2 level on CPUs with AVX-VNNI: vpdpbusd on 256-bit
// registers, the instruction the avx2vnni matmul kernels (kernels_avx2.h) are built on.
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/roofline.h"

namespace strata::kernels::detail {

double int8_dot_loop_avxvnni(long iterations) {
  // 12 independent chains hide vpdpbusd's latency (4-5 cycles) on two ports.
  __m256i acc[12];
#pragma GCC unroll 12
  for (int k = 0; k < 12; ++k) acc[k] = _mm256_set1_epi32(k);
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int k = 0; k < 12; ++k) acc[k] = _mm256_dpbusd_avx_epi32(acc[k], a, b);
  }
  __m256i s = acc[0];
#pragma GCC unroll 12
  for (int k = 1; k < 12; ++k) s = _mm256_add_epi32(s, acc[k]);
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  volatile int32_t sink = lanes[0];
  (void)sink;
  return static_cast<double>(iterations) * 12 * 32 * 2;  // 32 multiply-adds per step
}

}  // namespace strata::kernels::detail

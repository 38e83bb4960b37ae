// Measures this machine's limits: memory read bandwidth (what bounds decode) and peak
// f32 FMA throughput (what bounds prefill), with the kernels' own SIMD width.
#pragma once

#include <cstddef>

#include "core/thread_pool.h"

namespace strata::kernels {

struct RooflineResult {
  double read_gbps = 0;   // streaming sum over a buffer far larger than the LLC
  double copy_gbps = 0;   // dst = src (bytes read + written)
  double triad_gbps = 0;  // a = b + s*c (bytes read + written)
  double fma_gflops = 0;  // f32 FMA peak, all threads
  // int8 dot-product peak (u8 x s8 multiply-adds into i32, as the quantized matmuls do),
  // counted as 2 operations per multiply-add; 0 without AVX2.
  double int8_gops = 0;
  int threads = 0;
  bool avx2 = false;
};

struct RooflineOptions {
  size_t buffer_bytes = size_t{1} << 30;  // per array
  int repetitions = 5;                    // best of
};

RooflineResult measure_roofline(ThreadPool& pool, const RooflineOptions& options);

namespace detail {
// Per-thread kernels; the AVX2 versions live in roofline_avx2.cpp.
float sum_floats_avx2(const float* p, size_t n);
double fma_loop_avx2(long iterations);  // returns FLOPs done (keeps the result live)
float sum_floats_scalar(const float* p, size_t n);
double fma_loop_scalar(long iterations);
double int8_dot_loop_avx2(long iterations);  // returns operations done
}  // namespace detail

}  // namespace strata::kernels

// Measures this machine's limits: memory read bandwidth (what bounds decode) and peak
// arithmetic throughput (what bounds prefill): f32 FMA with 256-bit AVX2 registers (the
// usual yardstick) and, where the CPU has them, 512-bit ones, plus the int8 dot-product
// peak of the instruction the quantized matmul kernels use.
#pragma once

#include <cstddef>

#include "core/thread_pool.h"

namespace strata::kernels {

struct RooflineResult {
  double read_gbps = 0;      // streaming sum over a buffer far larger than the LLC
  double copy_gbps = 0;      // dst = src (bytes read + written)
  double triad_gbps = 0;     // a = b + s*c (bytes read + written)
  double fma_gflops = 0;     // f32 FMA peak, all threads, AVX2 (scalar without AVX2)
  double fma512_gflops = 0;  // f32 FMA peak with AVX-512; 0 without it
  // int8 dot-product peak (u8 x s8 multiply-adds into i32) of the kernels' instruction:
  // vpdpbusd on 512-bit registers with AVX-512 VNNI, on 256-bit ones at the avx2 level with
  // AVX-VNNI, else vpmaddubsw + vpmaddwd on AVX2;
  // counted as 2 operations per multiply-add; 0 without AVX2.
  double int8_gops = 0;
  const char* int8_instruction = "";
  // Where cpu_has_amx_int8(): the AMX GEMM's tile pattern (two TDPBSSD of 16 x 32 by
  // 32 x 16 signed bytes in flight, amx_tiles.h), same units; 0 elsewhere.
  double amx_int8_gops = 0;
  int threads = 0;
  bool avx2 = false;
  bool avx512 = false;
};

struct RooflineOptions {
  size_t buffer_bytes = size_t{1} << 30;  // per array
  int repetitions = 5;                    // best of
};

RooflineResult measure_roofline(ThreadPool& pool, const RooflineOptions& options);

// Read bandwidth of an existing buffer (a streaming sum, split across the pool's threads),
// in GB/s; the best of `repetitions`. Benchmarks use it to state a kernel's memory traffic
// as a fraction of what the machine delivers at that moment.
double measure_read_gbps(ThreadPool& pool, const void* data, size_t bytes, int repetitions = 3);

// The AVX2 f32 FMA peak alone (RooflineResult::fma_gflops), in GFLOP/s.
double measure_fma_gflops(ThreadPool& pool, int repetitions = 3);

namespace detail {
// Per-thread kernels; the AVX2 versions live in roofline_avx2.cpp.
float sum_floats_avx2(const float* p, size_t n);
double fma_loop_avx2(long iterations);  // returns FLOPs done (keeps the result live)
float sum_floats_scalar(const float* p, size_t n);
double fma_loop_scalar(long iterations);
double int8_dot_loop_avx2(long iterations);  // returns operations done
double fma_loop_avx512(long iterations);     // roofline_avx512.cpp
double int8_dot_loop_avx512(long iterations);
double int8_dot_loop_avxvnni(long iterations);  // roofline_avxvnni.cpp
double int8_dot_loop_amx(long iterations);      // only where cpu_has_amx_int8()
}  // namespace detail

}  // namespace strata::kernels

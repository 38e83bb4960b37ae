#include "kernels/cpu/roofline.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/huge_buffer.h"
#include "kernels/quant/amx_tiles.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace detail {

float sum_floats_scalar(const float* p, size_t n) {
  float a[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) a[k] += p[i + static_cast<size_t>(k)];
  }
  float t = 0;
  for (float x : a) t += x;
  for (; i < n; ++i) t += p[i];
  return t;
}

double fma_loop_scalar(long iterations) {
  float acc[16];
  for (int k = 0; k < 16; ++k) acc[k] = 0.001f * static_cast<float>(k);
  for (long it = 0; it < iterations; ++it) {
    for (int k = 0; k < 16; ++k) acc[k] = acc[k] * 0.999999f + 1e-7f;
  }
  volatile float sink = acc[3];
  (void)sink;
  return static_cast<double>(iterations) * 16 * 2;
}

}  // namespace detail

namespace {

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best rate of `probe` (which returns the operations it did) run on every thread at once.
double peak_rate(ThreadPool& pool, double (*probe)(long), int repetitions) {
  const long iters = 20'000'000;
  double best = 0;
  for (int rep = 0; rep < repetitions; ++rep) {
    std::vector<double> ops(static_cast<size_t>(pool.size()));
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int tid, int) { ops[static_cast<size_t>(tid)] = probe(iters); });
    const double s = seconds(t0);
    double total = 0;
    for (double o : ops) total += o;
    best = std::max(best, total / s / 1e9);
  }
  return best;
}

}  // namespace

double measure_read_gbps(ThreadPool& pool, const void* data, size_t bytes, int repetitions) {
  const auto sum = cpu_has_avx2_fma() ? detail::sum_floats_avx2 : detail::sum_floats_scalar;
  const auto* p = static_cast<const float*>(data);
  const size_t n = bytes / sizeof(float);
  std::vector<float> sinks(static_cast<size_t>(pool.size()));
  double best = 0;
  for (int rep = 0; rep < repetitions; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int tid, int nt) {
      const size_t lo = n * static_cast<size_t>(tid) / static_cast<size_t>(nt);
      const size_t hi = n * static_cast<size_t>(tid + 1) / static_cast<size_t>(nt);
      sinks[static_cast<size_t>(tid)] += sum(p + lo, hi - lo);
    });
    best = std::max(best, static_cast<double>(n * sizeof(float)) / seconds(t0) / 1e9);
  }
  volatile float sink = sinks[0];
  (void)sink;
  return best;
}

double measure_fma_gflops(ThreadPool& pool, int repetitions) {
  return peak_rate(pool, cpu_has_avx2_fma() ? detail::fma_loop_avx2 : detail::fma_loop_scalar,
                   repetitions);
}

RooflineResult measure_roofline(ThreadPool& pool, const RooflineOptions& opt) {
  RooflineResult r;
  r.threads = pool.size();
  r.avx2 = cpu_has_avx2_fma();
  r.avx512 = cpu_kernel_isa() >= KernelIsa::avx512_vnni;
  const size_t n = opt.buffer_bytes / sizeof(float);
  // On transparent huge pages, as the model's weights are (core/huge_buffer.h): with 4 KiB
  // pages the probe pays TLB misses the weights do not, and under-reports the limit.
  HugePageBuffer buf_a(n * sizeof(float)), buf_b(n * sizeof(float)), buf_c(n * sizeof(float));
  float* a = reinterpret_cast<float*>(buf_a.data());
  float* b = reinterpret_cast<float*>(buf_b.data());
  float* c = reinterpret_cast<float*>(buf_c.data());
  // Touch every page (in parallel, so pages land near the threads that read them).
  pool.parallel_for(static_cast<int64_t>(n), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      a[i] = 1.0f;
      b[i] = 2.0f;
      c[i] = 0.5f;
    }
  });
  const double bytes = static_cast<double>(n * sizeof(float));
  for (int rep = 0; rep < opt.repetitions; ++rep) {
    r.read_gbps = std::max(r.read_gbps, measure_read_gbps(pool, a, n * sizeof(float), 1));

    auto t0 = std::chrono::steady_clock::now();

    pool.parallel_for(static_cast<int64_t>(n), [&](int64_t lo, int64_t hi) {
      std::memcpy(c + lo, a + lo, static_cast<size_t>(hi - lo) * sizeof(float));
    });
    r.copy_gbps = std::max(r.copy_gbps, 2 * bytes / seconds(t0) / 1e9);

    t0 = std::chrono::steady_clock::now();
    pool.parallel_for(static_cast<int64_t>(n), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        a[i] = b[i] + 0.5f * c[i];
      }
    });
    r.triad_gbps = std::max(r.triad_gbps, 3 * bytes / seconds(t0) / 1e9);
  }
  r.fma_gflops = measure_fma_gflops(pool, opt.repetitions);
  if (r.avx512) r.fma512_gflops = peak_rate(pool, detail::fma_loop_avx512, opt.repetitions);
  if (r.avx512) {
    r.int8_gops = peak_rate(pool, detail::int8_dot_loop_avx512, opt.repetitions);
    r.int8_instruction = "vpdpbusd zmm (AVX-512 VNNI)";
  } else if (r.avx2 && cpu_has_avx_vnni()) {
    r.int8_gops = peak_rate(pool, detail::int8_dot_loop_avxvnni, opt.repetitions);
    r.int8_instruction = "vpdpbusd ymm (AVX-VNNI)";
  } else if (r.avx2) {
    r.int8_gops = peak_rate(pool, detail::int8_dot_loop_avx2, opt.repetitions);
    r.int8_instruction = "vpmaddubsw + vpmaddwd ymm (AVX2)";
  }
  if (cpu_has_amx_int8())
    r.amx_int8_gops = peak_rate(pool, detail::int8_dot_loop_amx, opt.repetitions);
  return r;
}

namespace detail {

double int8_dot_loop_amx(long iterations) {
  alignas(64) int8_t a[kAmxTileM * kAmxTileKBytes], b[kAmxTileKBytes / 4 * 4 * kAmxTileN];
  alignas(64) int32_t c[kAmxTileM * kAmxTileN];
  std::memset(a, 3, sizeof a);
  std::memset(b, -2, sizeof b);
  HardwareTiles tiles;
  tiles.start();
  tiles.load_a<0>(a, kAmxTileKBytes);
  tiles.load_b<0>(b);
  tiles.load_a<1>(a, kAmxTileKBytes);
  tiles.load_b<1>(b);
  for (long it = 0; it < iterations; ++it) {
    tiles.multiply<0>();
    tiles.multiply<1>();
  }
  tiles.store_c<0>(c, 4 * kAmxTileN);
  tiles.release();
  volatile int32_t sink = c[0];
  (void)sink;
  return static_cast<double>(iterations) * 2 * kAmxTileM * kAmxTileN * kAmxTileKBytes * 2;
}

}  // namespace detail

}  // namespace strata::kernels

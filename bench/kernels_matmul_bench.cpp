// matmul throughput per weight type at Llama-like shapes (rows x cols: 2048x2048,
// 5632x2048 as in the FFN up/gate projections, 2048x5632 as in the down projection), for
// decode (1 token), batched decode (16 tokens) and prefill (64 and 512 tokens), and
// prefill over long rows (1024x8192, 1024x14336; 512 tokens).
//
// Counters: `weights` = weight bytes read per call as a rate (GB/s, what bounds decode),
// `flops` = 2 * rows * cols * tokens as a rate (GFLOP/s, what bounds prefill).
// Usage: kernels_matmul_bench [--threads=N] [google benchmark flags], for example
//   --benchmark_filter='matmul/q4_0/.*/tokens:(1|512)/'
// swiglu/... times the SwiGLU of one FFN row.
// convert/... times the activation conversion a matmul does first (one row).
// matmul_dram/... repeats the decode case with the weights coming from DRAM, as in a model.
// matmul_l2/... times the decode case on 256 x 2048 weights, which a quantized type keeps in
// L2 (at most 0.6 MB): the kernel's own rate, which the 2048-row shapes (L3) lose when a
// neighbour on a shared host thrashes L3.
// (N defaults to ThreadPool::default_threads(); set STRATA_NO_AVX2=1 for scalar kernels).
// --cpu-time: rates per CPU second instead of per wall second (with --threads=1, a core's
// throughput while other processes share it; compare with int8_peak, timed the same way).
// int8_peak/threads:N times the roofline's vpdpbusd loop (AVX-512 VNNI) on every thread of
// the pool at once, as `strata bench roofline -t N` does: `ops` is the int8 peak of N
// cores, 2 operations per multiply-add, as the matmul `flops` count. With
// --benchmark_enable_random_interleaving its repetitions alternate with the matmuls', so
// a GEMM's share of the peak is measured in the same minutes (a shared host's load moves
// both).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/fp16.h"
#include "core/huge_buffer.h"
#include "core/thread_pool.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/roofline.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/traits.h"
#include "tools/isa_env.h"

namespace {

using strata::DType;

std::unique_ptr<strata::ThreadPool> g_pool;
bool g_cpu_time = false;

// The roofline's int8 dot-product loop on every pool thread (about 1 ms a call).
void bm_int8_peak(benchmark::State& state) {
  std::vector<double> per_thread(static_cast<size_t>(g_pool->size()));
  double ops = 0;
  for (auto _ : state) {
    g_pool->run([&](int tid, int) {
      per_thread[static_cast<size_t>(tid)] = strata::kernels::detail::int8_dot_loop_avx512(100000);
    });
    for (double o : per_thread) ops += o;
  }
  state.counters["ops"] = benchmark::Counter(ops, benchmark::Counter::kIsRate);
}

// Random bytes with moderate fp16 scales: valid blocks of every type, cheap to build
// (quantizing real floats at these sizes would take longer than the benchmark).
std::vector<uint8_t> random_weights(DType t, int64_t rows, int64_t cols) {
  const strata::DTypeInfo info = strata::dtype_info(t);
  std::vector<uint8_t> w(static_cast<size_t>(strata::kernels::row_bytes(t, cols) * rows));
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (auto& b : w) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    b = static_cast<uint8_t>(s >> 56);
  }
  auto put_half = [](uint8_t* p, float v, bool bf16) {
    const uint16_t h = bf16 ? strata::fp32_to_bf16(v) : strata::fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
  };
  for (size_t i = 0; i < w.size() / info.type_size; ++i) {
    uint8_t* blk = w.data() + i * info.type_size;
    const float v = static_cast<float>(i % 97) / 97.0f - 0.5f;
    switch (t) {
      case DType::F32:
        std::memcpy(blk, &v, 4);
        break;
      case DType::F16:
        put_half(blk, v, false);
        break;
      case DType::BF16:
        put_half(blk, v, true);
        break;
      case DType::Q8_0:
      case DType::Q4_0:
        put_half(blk, 0.01f * v, false);
        break;
      case DType::Q4_0_X16:  // 16 scales, then the quants
        for (int b = 0; b < 16; ++b) put_half(blk + 2 * b, 0.01f * v, false);
        break;
      case DType::Q8_0_X16: {  // the scales before or after the quants (blocks.h)
        auto* d =
            strata::kernels::q8_0_x16_d(*reinterpret_cast<strata::kernels::BlockQ8_0x16*>(blk));
        for (int b = 0; b < 16; ++b) put_half(reinterpret_cast<uint8_t*>(d + b), 0.01f * v, false);
        break;
      }
      case DType::Q4_K:
      case DType::Q4_K_X16:
        put_half(blk, 0.002f, false), put_half(blk + 2, 0.001f, false);
        break;
      case DType::Q6_K:
      case DType::Q6_K_X16:
        put_half(blk + 208, 0.0005f, false);
        break;
      case DType::Q4_1:
      case DType::Q5_1:
        put_half(blk, 0.01f * v, false), put_half(blk + 2, -0.05f, false);
        break;
      case DType::Q4_1_X16:  // 16 scales, 16 offsets, ...
      case DType::Q5_1_X16:
        for (int b = 0; b < 16; ++b)
          put_half(blk + 2 * b, 0.01f * v, false), put_half(blk + 32 + 2 * b, -0.05f, false);
        break;
      case DType::Q4_K_X16P:  // two Q4_K heads
      case DType::Q5_K_X16P:
        put_half(blk, 0.002f, false), put_half(blk + 2, 0.001f, false);
        put_half(blk + 16, 0.002f, false), put_half(blk + 18, 0.001f, false);
        break;
      case DType::Q5_0_X16:  // 16 scales, ...
      case DType::IQ4_NL_X16:
        for (int b = 0; b < 16; ++b) put_half(blk + 2 * b, 0.0005f * v, false);
        break;
      case DType::IQ4_XS_X16P:  // two IQ4_XS heads
        put_half(blk, 0.0005f * v, false), put_half(blk + 8, 0.0005f * v, false);
        break;
      case DType::Q5_0:
      case DType::IQ4_NL:
      case DType::IQ4_XS:
      case DType::IQ4_XS_X16:
        put_half(blk, 0.0005f * v, false);
        break;
      case DType::Q5_K:
      case DType::Q5_K_X16:
        put_half(blk, 0.002f, false), put_half(blk + 2, 0.001f, false);
        break;
      case DType::Q2_K:
      case DType::Q2_K_X16:  // d and dmin at the same offsets
        put_half(blk + 80, 0.002f, false), put_half(blk + 82, 0.001f, false);
        break;
      case DType::Q3_K:
      case DType::Q3_K_X16:
        put_half(blk + 108, 0.001f, false);
        break;
      default:
        break;
    }
  }
  return w;
}

// `from_dram` runs decode as a model sees it: the weights come from DRAM, not from cache.
// It cycles through enough distinct copies of the matrix (>= 512 MiB in all) that none is
// cached when it is used again; `weights` is then the GB/s a GEMV streams from memory.
void bm_matmul(benchmark::State& state, DType t, int64_t rows, int64_t cols, int64_t tokens,
               bool from_dram) {
  const std::vector<uint8_t> one = random_weights(t, rows, cols);
  const size_t copies = from_dram ? (size_t{512} << 20) / one.size() + 1 : 1;
  // On huge pages, as a model's weights are (4 KiB pages cost the GEMV TLB misses).
  strata::HugePageBuffer w(one.size() * copies);
  for (size_t c = 0; c < copies; ++c)
    std::memcpy(w.data() + c * one.size(), one.data(), one.size());
  std::vector<float> x(static_cast<size_t>(tokens * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  std::vector<float> y(static_cast<size_t>(tokens * rows));
  std::vector<uint8_t> scratch;
  size_t c = 0;
  for (auto _ : state) {
    strata::kernels::matmul(t, w.data() + c * one.size(), rows, cols, x.data(), tokens, y.data(),
                            *g_pool, scratch);
    c = (c + 1) % copies;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["weights"] = benchmark::Counter(static_cast<double>(one.size()),
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["flops"] = benchmark::Counter(2.0 * static_cast<double>(rows * cols * tokens),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

// One activation row converted to a kernel's input type (a decode matmul's serial step:
// the row is converted once, on one thread, before the weights stream).
void bm_convert(benchmark::State& state, DType t, int64_t cols) {
  std::vector<float> x(static_cast<size_t>(cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 29) * 0.07f - 0.9f;
  std::vector<uint8_t> out(static_cast<size_t>(strata::kernels::row_bytes(t, cols)));
  const auto convert = strata::kernels::type_traits(t).from_float;
  for (auto _ : state) {
    convert(x.data(), out.data(), cols);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["elements"] =
      benchmark::Counter(static_cast<double>(cols), benchmark::Counter::kIsIterationInvariantRate);
}

// SwiGLU of one decode step's FFN row (ops.h; runs on one thread between two matmuls),
// plus a copy of its input (22 KB at 5632), since it works in place.
void bm_swiglu(benchmark::State& state, int64_t n) {
  std::vector<float> gate(static_cast<size_t>(n)), up(gate.size()), g0(gate.size());
  for (size_t i = 0; i < g0.size(); ++i)
    g0[i] = static_cast<float>(i % 31) * 0.3f - 4.5f, up[i] = 0.5f;
  for (auto _ : state) {
    std::memcpy(gate.data(), g0.data(),
                g0.size() * sizeof(float));  // in place: fresh input each time
    strata::kernels::swiglu(gate.data(), up.data(), n);
    benchmark::DoNotOptimize(gate.data());
    benchmark::ClobberMemory();
  }
  state.counters["elements"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

int parse_threads(int* argc, char** argv) {
  int threads = strata::ThreadPool::default_threads();
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--threads=", 0) == 0) {
      threads = std::stoi(arg.substr(10));
    } else if (arg == "--cpu-time") {
      g_cpu_time = true;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  return threads;
}

}  // namespace

int main(int argc, char** argv) {
  strata::kernels::init_cpu_kernels(strata::tools::isa_overrides_from_env());
  const int threads = parse_threads(&argc, argv);
  g_pool = std::make_unique<strata::ThreadPool>(threads);
  // *_X16, *_X16P: the layouts models hold after repacking on AVX2 and AVX-512 VNNI
  // machines (Q4_K, Q5_K and IQ4_XS as the pairs *_X16P where rows are whole 512-element
  // groups, as *_X16 otherwise).
  const DType types[] = {DType::F32,       DType::F16,         DType::BF16,     DType::Q8_0,
                         DType::Q8_0_X16,  DType::Q4_0,        DType::Q4_0_X16, DType::Q4_K,
                         DType::Q6_K,      DType::Q6_K_X16,    DType::Q4_1,     DType::Q5_0,
                         DType::Q5_1,      DType::IQ4_NL,      DType::Q2_K,     DType::Q3_K,
                         DType::Q5_K,      DType::IQ4_XS,      DType::Q4_K_X16, DType::IQ4_XS_X16,
                         DType::Q3_K_X16,  DType::Q5_K_X16,    DType::Q4_1_X16, DType::Q5_0_X16,
                         DType::Q5_1_X16,  DType::IQ4_NL_X16,  DType::Q2_K_X16, DType::Q4_K_X16P,
                         DType::Q5_K_X16P, DType::IQ4_XS_X16P, DType::Q3_K_X16S};
  const int64_t shapes[][2] = {{2048, 2048}, {5632, 2048}, {2048, 5632}};
  for (DType t : types) {
    for (const auto& shape : shapes) {
      for (int64_t tokens : {1, 16, 64, 512}) {
        const std::string name = "matmul/" + std::string(strata::dtype_name(t)) + "/" +
                                 std::to_string(shape[0]) + "x" + std::to_string(shape[1]) +
                                 "/tokens:" + std::to_string(tokens) +
                                 "/threads:" + std::to_string(threads);
        auto* b = benchmark::RegisterBenchmark(name.c_str(), bm_matmul, t, shape[0], shape[1],
                                               tokens, false);
        b->Unit(benchmark::kMicrosecond);
        if (!g_cpu_time) b->UseRealTime();
      }
    }
  }
  // Prefill over long rows (Llama-3-8B's down projection has 14336 columns): where a
  // 4-token tile's activations no longer fit L1 beside the weights (token_tiles.h's spans).
  const int64_t long_rows[][2] = {{1024, 8192}, {1024, 14336}};
  for (DType t : types) {
    for (const auto& shape : long_rows) {
      const std::string name = "matmul/" + std::string(strata::dtype_name(t)) + "/" +
                               std::to_string(shape[0]) + "x" + std::to_string(shape[1]) +
                               "/tokens:512/threads:" + std::to_string(threads);
      auto* b =
          benchmark::RegisterBenchmark(name.c_str(), bm_matmul, t, shape[0], shape[1], 512, false);
      b->Unit(benchmark::kMicrosecond);
      if (!g_cpu_time) b->UseRealTime();
    }
  }
  for (DType t : types) {
    for (const auto& shape : shapes) {
      const std::string name = "matmul_dram/" + std::string(strata::dtype_name(t)) + "/" +
                               std::to_string(shape[0]) + "x" + std::to_string(shape[1]) +
                               "/tokens:1/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), bm_matmul, t, shape[0], shape[1], 1, true)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (DType t : types) {
    const std::string name = "matmul_l2/" + std::string(strata::dtype_name(t)) +
                             "/256x2048/tokens:1/threads:" + std::to_string(threads);
    benchmark::RegisterBenchmark(name.c_str(), bm_matmul, t, 256, 2048, 1, false)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
  for (DType t : {DType::Q8_0, DType::Q8_K, DType::Q8_0_X16A, DType::Q8_K_X16A}) {
    for (int64_t cols : {2048, 5632}) {
      const std::string name =
          "convert/" + std::string(strata::dtype_name(t)) + "/cols:" + std::to_string(cols);
      benchmark::RegisterBenchmark(name.c_str(), bm_convert, t, cols)->Unit(benchmark::kNanosecond);
    }
  }
  if (strata::kernels::cpu_kernel_isa() >= strata::kernels::KernelIsa::avx512_vnni) {
    auto* b = benchmark::RegisterBenchmark(("int8_peak/threads:" + std::to_string(threads)).c_str(),
                                           bm_int8_peak);
    b->Unit(benchmark::kMicrosecond);
    if (!g_cpu_time) b->UseRealTime();
  }
  benchmark::RegisterBenchmark("swiglu/5632", bm_swiglu, 5632)->Unit(benchmark::kNanosecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// Which AVX-512 instructions compete with vpdpbusd for execution ports: 12 independent
// vpdpbusd chains per step (enough to hide its latency) plus 4 independent instructions of
// one kind. If the kind issues on other ports, vpdpbusd keeps the rate of `ports/none`
// (the `dpbusd` counter); if it shares vpdpbusd's ports, the rate drops, by 4/16 when it
// always takes one of them. The GEMM epilogues and unpacking are weighed by this
// (docs/BENCHMARKS.md, 2026-12-05 19:40 and 22:30): on Zen 5, vmulps, vfmadd231ps, vpermd,
// vshufi32x4, vpmaddubsw and vpmaddwd always take one of vpdpbusd's two ports and vpmulld
// two slots; vpshufb, gf2p8affineqb and vinserti64x4 mostly take one, vpermt2d and
// vcvtph2ps about half the time; vpand, vpaddd, the shifts, vcvtdq2ps and vaddps issue
// elsewhere.
//
// Usage: vnni_ports_bench [google benchmark flags]. Skips on CPUs without AVX-512 VNNI.
// GCC 12's AVX-512 headers start intrinsics from _mm512_undefined_*() (a known false
// positive once inlined; see src/kernels/quant/interleaved_avx512.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>

namespace {

enum class Kind {
  kNone,
  kAnd,
  kAdd,
  kShift,
  kVarShift,
  kCvt,
  kAddPs,
  kMulPs,
  kFma,
  kShuffleB,
  kGfni,
  kInsert,
  kCvtPh,
  kPermD,
  kPermT2D,
  kShufI32x4,
  kMaddUbsW,
  kMaddWD,
  kMulLoD
};

template <Kind K>
__attribute__((target("avx512f,avx512bw,avx512vnni,gfni"))) __m512i extra(__m512i x, __m512i a) {
  if constexpr (K == Kind::kAnd) return _mm512_and_si512(x, a);
  if constexpr (K == Kind::kAdd) return _mm512_add_epi32(x, a);
  if constexpr (K == Kind::kShift) return _mm512_srli_epi16(x, 4);
  if constexpr (K == Kind::kVarShift) return _mm512_srlv_epi32(x, a);
  if constexpr (K == Kind::kCvt) return _mm512_castps_si512(_mm512_cvtepi32_ps(x));
  if constexpr (K == Kind::kAddPs)
    return _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(x), _mm512_castsi512_ps(a)));
  if constexpr (K == Kind::kMulPs)
    return _mm512_castps_si512(_mm512_mul_ps(_mm512_castsi512_ps(x), _mm512_castsi512_ps(a)));
  if constexpr (K == Kind::kFma) {
    const __m512 f = _mm512_castsi512_ps(a);
    return _mm512_castps_si512(_mm512_fmadd_ps(_mm512_castsi512_ps(x), f, f));
  }
  if constexpr (K == Kind::kShuffleB) return _mm512_shuffle_epi8(x, a);
  if constexpr (K == Kind::kGfni) return _mm512_gf2p8affine_epi64_epi8(x, a, 0);
  if constexpr (K == Kind::kInsert) return _mm512_inserti64x4(x, _mm512_castsi512_si256(a), 1);
  if constexpr (K == Kind::kCvtPh)
    return _mm512_castps_si512(_mm512_cvtph_ps(_mm512_castsi512_si256(x)));
  if constexpr (K == Kind::kPermD) return _mm512_permutexvar_epi32(a, x);
  if constexpr (K == Kind::kPermT2D) return _mm512_permutex2var_epi32(x, a, x);
  if constexpr (K == Kind::kShufI32x4) return _mm512_shuffle_i32x4(x, a, 0x44);
  if constexpr (K == Kind::kMaddUbsW) return _mm512_maddubs_epi16(x, a);
  if constexpr (K == Kind::kMaddWD) return _mm512_madd_epi16(x, a);
  if constexpr (K == Kind::kMulLoD) return _mm512_mullo_epi32(x, a);
  return x;
}

constexpr int64_t kSteps = 1 << 16;

// kSteps steps of 12 vpdpbusd and 4 instructions of kind K; returns a lane of the results.
template <Kind K>
[[gnu::noinline]] __attribute__((target("avx512f,avx512bw,avx512vnni,gfni"))) int32_t steps() {
  __m512i acc[12], x[4];
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_epi32(i);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) x[i] = _mm512_set1_epi32(0x3f800000 + i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
  // About 0.9999 as a float, so the float kinds stay finite; as a vpsrlvd count it is over 31
  // (the result is zero, which changes nothing about where the instruction issues).
  const __m512i c = _mm512_set1_epi32(0x3f7ff000);
  for (int64_t s = 0; s < kSteps; ++s) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) {
      acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
      __asm__ volatile("" : "+v"(acc[i]));  // keeps the chains in registers, every call
    }
    if constexpr (K != Kind::kNone) {
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        x[i] = extra<K>(x[i], c);
        __asm__ volatile("" : "+v"(x[i]));
      }
    }
  }
  __m512i sum = x[0];
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i) sum = _mm512_add_epi32(sum, acc[i]);
  return _mm_cvtsi128_si32(_mm512_castsi512_si128(sum));
}

template <Kind K>
void ports(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512bw") ||
      ((K == Kind::kGfni) && !__builtin_cpu_supports("gfni"))) {
    state.SkipWithError("this CPU lacks AVX-512 VNNI (or GFNI for ports/gf2p8affineqb)");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(steps<K>());
  state.counters["dpbusd"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kSteps * 12, benchmark::Counter::kIsRate);
}

BENCHMARK(ports<Kind::kNone>)->Name("ports/none");
BENCHMARK(ports<Kind::kAnd>)->Name("ports/vpandd");
BENCHMARK(ports<Kind::kAdd>)->Name("ports/vpaddd");
BENCHMARK(ports<Kind::kShift>)->Name("ports/vpsrlw");
BENCHMARK(ports<Kind::kVarShift>)->Name("ports/vpsrlvd");
BENCHMARK(ports<Kind::kCvt>)->Name("ports/vcvtdq2ps");
BENCHMARK(ports<Kind::kAddPs>)->Name("ports/vaddps");
BENCHMARK(ports<Kind::kMulPs>)->Name("ports/vmulps");
BENCHMARK(ports<Kind::kFma>)->Name("ports/vfmadd231ps");
BENCHMARK(ports<Kind::kShuffleB>)->Name("ports/vpshufb");
BENCHMARK(ports<Kind::kGfni>)->Name("ports/gf2p8affineqb");
BENCHMARK(ports<Kind::kInsert>)->Name("ports/vinserti64x4");
BENCHMARK(ports<Kind::kCvtPh>)->Name("ports/vcvtph2ps");
BENCHMARK(ports<Kind::kPermD>)->Name("ports/vpermd");
BENCHMARK(ports<Kind::kPermT2D>)->Name("ports/vpermt2d");
BENCHMARK(ports<Kind::kShufI32x4>)->Name("ports/vshufi32x4");
BENCHMARK(ports<Kind::kMaddUbsW>)->Name("ports/vpmaddubsw");
BENCHMARK(ports<Kind::kMaddWD>)->Name("ports/vpmaddwd");
BENCHMARK(ports<Kind::kMulLoD>)->Name("ports/vpmulld");

}  // namespace

BENCHMARK_MAIN();

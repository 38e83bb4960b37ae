// The attention tile fold (attention/tile_kernels.h) per instruction set, KV type and
// working set: one KV head's query rows (GQA 32/4, head_dim 64, 16-slot blocks, the
// llama-1b shape; rows:8 = one token's 8 query heads as in decode, rows:32/64/128 =
// prefill groups of 4/8/16 tokens, paged attention's kQueryTile now being 16) folded over
// `blocks` consecutive tiles, the kernel set's fold_blocks per fold as paged attention
// does. blocks:4 (or 8) keeps the tiles in L1 (the kernel's arithmetic); blocks:512 is one
// KV head at 8K depth as a prefill group reads it (bf16: 2 MiB of K/V, L2/L3); blocks:16384
// (f32: 128 MiB) streams from memory, with the next fold's tiles prefetched as paged
// attention does (FoldTile::next).
//
// Element types: f32, f16, bf16 tiles, and q8_keys / q4_keys (a q8_0 / q4_0 cache's keys as
// stored, with bf16 values: the fold after paged attention has dequantized the values).
// Counters: `flops` = 2 x 2 x rows x keys x head_dim (scores and values) as a rate,
// `kv` = K/V bytes read as a rate.
// Usage: attention_fold_bench [google benchmark flags]
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attention/tile_kernels.h"
#include "core/fp16.h"
#include "core/huge_buffer.h"
#include "kernels/quant/traits.h"
#include "kv/kv_quant.h"
#include "tools/isa_env.h"

namespace {

using strata::DType;
using strata::attention::FoldTile;
using strata::attention::TileElem;

constexpr int64_t kHeadDim = 64, kBlock = 16;

void bm_fold(benchmark::State& state, const strata::attention::TileKernels* kernels, TileElem elem,
             int64_t blocks, int64_t n_rows) {
  const int64_t kRows = n_rows;
  const size_t esz = elem == TileElem::f32 ? 4 : 2;
  const size_t tile_bytes = static_cast<size_t>(kBlock * kHeadDim) * esz;
  // q8_keys / q4_keys: keys as a q8_0 / q4_0 cache stores them, values as bf16 tiles: one
  // fold's, kept in L1 as paged attention's scratch is (the dequantization into it is not
  // timed here), while the cache's quantized value tiles are prefetched as the fold goes.
  const bool quant = elem == TileElem::q8_keys || elem == TileElem::q4_keys;
  const DType key_type = elem == TileElem::q4_keys ? DType::Q4_0 : DType::Q8_0;
  const size_t key_bytes =
      quant ? static_cast<size_t>(kBlock) * strata::kv_quant::row_bytes(key_type, kHeadDim)
            : tile_bytes;
  strata::HugePageBuffer k(key_bytes * static_cast<size_t>(blocks)),
      v(tile_bytes * static_cast<size_t>(blocks)), vq(quant ? k.size() : 0);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < v.size() / esz; ++i) {
    const float a = normal(rng), b = normal(rng);
    if (quant) {
      reinterpret_cast<uint16_t*>(v.data())[i] = strata::fp32_to_bf16(b);
    } else if (elem == TileElem::f16) {
      reinterpret_cast<uint16_t*>(k.data())[i] = strata::fp32_to_fp16(a);
      reinterpret_cast<uint16_t*>(v.data())[i] = strata::fp32_to_fp16(b);
    } else if (elem == TileElem::bf16) {
      reinterpret_cast<uint16_t*>(k.data())[i] = strata::fp32_to_bf16(a);
      reinterpret_cast<uint16_t*>(v.data())[i] = strata::fp32_to_bf16(b);
    } else {
      reinterpret_cast<float*>(k.data())[i] = a;
      reinterpret_cast<float*>(v.data())[i] = b;
    }
  }
  if (quant) {
    std::vector<float> key(kHeadDim);
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t slot = 0; slot < kBlock; ++slot) {
        for (auto& x : key) x = normal(rng);
        strata::kv_quant::store(key_type, k.data() + static_cast<size_t>(b) * key_bytes, true,
                                key.data(), slot, kBlock, kHeadDim);
      }
    }
  }
  const auto rows = static_cast<size_t>(kRows);
  std::vector<float> q(rows * kHeadDim), acc(rows * kHeadDim), mx(rows), sum(rows),
      p(rows * strata::attention::fold_scratch_row(kBlock));
  for (auto& x : q) x = normal(rng);
  const int64_t n_groups = kHeadDim / strata::kv_quant::group_size(kHeadDim);
  std::vector<int8_t> q8(q.size());
  std::vector<float> q8_scale(rows * static_cast<size_t>(n_groups));
  std::vector<int32_t> q8_sum(q8_scale.size());
  strata::attention::quantize_query_q8(q.data(), kRows, kHeadDim, q8.data(), q8_scale.data(),
                                       q8_sum.data());
  int64_t b = 0;
  for (auto _ : state) {
    if (b == 0) {  // a new pass over the context
      std::fill(mx.begin(), mx.end(), -INFINITY);
      std::fill(sum.begin(), sum.end(), 0.0f);
      std::fill(acc.begin(), acc.end(), 0.0f);
    }
    const int64_t kPer = kernels->fold_blocks;
    const int64_t next = (b + kPer) % blocks;
    FoldTile t;
    for (int64_t nb = next; nb < next + kPer; ++nb) {  // prefetched as the fold goes
      t.next[t.n_next++] = k.data() + static_cast<size_t>(nb) * key_bytes;
      t.next[t.n_next++] = quant ? vq.data() + static_cast<size_t>(nb) * key_bytes
                                 : v.data() + static_cast<size_t>(nb) * tile_bytes;
    }
    t.next_bytes = static_cast<int64_t>(key_bytes);
    t.q = q.data();
    t.q8 = {q8.data(), q8_scale.data(), q8_sum.data()};
    t.n_q = kRows;
    t.n_blocks = static_cast<int>(kPer);
    for (int64_t i = 0; i < kPer; ++i) {
      t.kt[i] = k.data() + static_cast<size_t>(b + i) * key_bytes;
      t.v[i] = v.data() + static_cast<size_t>(quant ? i : b + i) * tile_bytes;
    }
    t.elem = elem;
    t.block_size = kBlock;
    t.head_dim = kHeadDim;
    t.j0 = 0;
    t.j1 = kPer * kBlock;
    t.scale = 0.125f;
    t.max = mx.data();
    t.sum = sum.data();
    t.acc = acc.data();
    t.p = p.data();
    kernels->fold(t);
    benchmark::DoNotOptimize(acc.data());
    b = next;
  }
  const auto per = static_cast<double>(kernels->fold_blocks);
  state.counters["flops"] =
      benchmark::Counter(4.0 * per * static_cast<double>(kRows * kBlock * kHeadDim),
                         benchmark::Counter::kIsIterationInvariantRate);
  // Quantized: the bytes of the cache's K and V tiles (V as q8_0 / q4_0 too).
  state.counters["kv"] = benchmark::Counter(2.0 * per * static_cast<double>(key_bytes),
                                            benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  strata::kernels::init_cpu_kernels(strata::tools::isa_overrides_from_env());
  using strata::attention::TileKernels;
  std::vector<const TileKernels*> sets = {&strata::attention::reference_tile_kernels()};
  static TileKernels avx2{strata::attention::avx2::fold, "avx2"};
  static TileKernels avx512{strata::attention::avx512::fold, "avx512", 8};
  static TileKernels avx512bf16{strata::attention::avx512bf16::fold, "avx512-bf16", 8};
  const auto isa = strata::kernels::cpu_kernel_isa();
  if (isa >= strata::kernels::KernelIsa::avx2) sets.push_back(&avx2);
  if (isa >= strata::kernels::KernelIsa::avx512_vnni) sets.push_back(&avx512);
  if (strata::kernels::cpu_has_avx512_bf16()) sets.push_back(&avx512bf16);
  const std::pair<TileElem, const char*> elems[] = {{TileElem::f32, "f32"},
                                                    {TileElem::f16, "f16"},
                                                    {TileElem::bf16, "bf16"},
                                                    {TileElem::q8_keys, "q8_keys"},
                                                    {TileElem::q4_keys, "q4_keys"}};
  for (const TileKernels* k : sets) {
    for (const auto& [elem, elem_name] : elems) {
      for (int64_t blocks : {static_cast<int64_t>(k->fold_blocks), int64_t{512}, int64_t{16384}}) {
        for (int64_t rows : {8, 32, 64, 128}) {
          const std::string name = std::string("fold/") + k->name + "/" + elem_name +
                                   "/blocks:" + std::to_string(blocks) +
                                   "/rows:" + std::to_string(rows);
          benchmark::RegisterBenchmark(name.c_str(), bm_fold, k, elem, blocks, rows);
        }
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

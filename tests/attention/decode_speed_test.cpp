// Decode attention speed per KV cache type (a measurement, not a check: DISABLED_, run with
// --gtest_also_run_disabled_tests --gtest_filter='*DecodeSpeed*'). One layer of the
// llama-1b shape (32 query heads, 8 KV heads, head_dim 64, 16-slot blocks) at 16K and 32K
// context, one decode token, 1 and 2 threads; the best and median of 25 calls per type, the
// types interleaved call by call so that a shared machine's load hits them alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attention/paged_attention.h"

namespace strata {
namespace {

TEST(DecodeSpeed, DISABLED_PerKvType) {
  const int64_t n_heads = 32, n_kv = 8, hd = 64, bs = 16;
  const DType types[] = {DType::BF16, DType::Q8_0, DType::Q4_0, DType::F32};
  for (int64_t ctx : {16384, 32768}) {
    const int64_t n_blocks = ctx / bs;
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<int32_t> table(static_cast<size_t>(n_blocks));
    for (int32_t i = 0; i < n_blocks; ++i) table[static_cast<size_t>(i)] = i;
    std::shuffle(table.begin(), table.end(), rng);
    const std::vector<SequenceView> views = {{table, static_cast<int32_t>(ctx), {}}};
    std::vector<std::unique_ptr<KvCache>> caches;
    {
      // Fill: all positions in one write (chunks of 1024 tokens).
      std::vector<int32_t> tok(1024, 0), pos(1024), seq(1024, 0);
      std::vector<float> k(static_cast<size_t>(1024 * n_kv * hd)), v(k.size());
      for (DType t : types)
        caches.push_back(
            std::make_unique<KvCache>(KvCacheConfig{1, n_kv, hd, bs, n_blocks, t, {}, 0}));
      for (int64_t p0 = 0; p0 < ctx; p0 += 1024) {
        for (auto& x : k) x = normal(rng);
        for (auto& x : v) x = normal(rng);
        for (int i = 0; i < 1024; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(p0 + i);
        const ForwardBatch fill{tok, pos, seq, views, {}};
        for (auto& c : caches) write_kv(*c, 0, fill, k.data(), v.data());
      }
    }
    const std::vector<int32_t> tok = {0}, pos = {static_cast<int32_t>(ctx - 1)}, seq = {0};
    const ForwardBatch batch{tok, pos, seq, views, {}};
    const AttentionShape shape{n_heads, n_kv, hd, 0.125f};
    std::vector<float> q(static_cast<size_t>(n_heads * hd)), out(q.size());
    for (auto& x : q) x = normal(rng);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      AttentionScratch scratch;
      scratch.reserve(pool.size(), shape, bs);
      constexpr int kReps = 25;
      std::vector<std::vector<double>> ms(std::size(types));
      for (int r = 0; r < kReps; ++r) {
        for (size_t i = 0; i < std::size(types); ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          paged_attention(*caches[i], 0, batch, shape, q.data(), out.data(), pool, scratch);
          ms[i].push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count());
        }
      }
      for (size_t i = 0; i < std::size(types); ++i) {
        std::sort(ms[i].begin(), ms[i].end());
        const std::string name(dtype_name(types[i]));
        std::printf("ctx %6lld %-5s threads %d best %7.3f ms  median %7.3f ms  (one layer)\n",
                    static_cast<long long>(ctx), name.c_str(), threads, ms[i][0], ms[i][kReps / 2]);
      }
    }
  }
}

}  // namespace
}  // namespace strata

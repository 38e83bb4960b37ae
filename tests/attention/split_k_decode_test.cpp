// Split-K decode (paged_attention.h, kChunkSegments): a one-token decode with fewer KV heads
// than threads folds each head's key chunks on different threads and merges them after.
// Its output must be the same bits as one thread's pass, which merges the same chunks in
// the same order, and as the same token's row inside a prefill group; and, like every
// fold, near the naive softmax over the whole context.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "attention/paged_attention.h"
#include "core/fp16.h"

namespace strata {
namespace {

struct SplitCase {
  int64_t n_heads, n_kv_heads;
  DType dtype;
};

class SplitKDecode : public ::testing::TestWithParam<SplitCase> {};

TEST_P(SplitKDecode, MatchesOneThreadPrefillRowsAndNaive) {
  const SplitCase c = GetParam();
  const int64_t hd = 64, bs = 16;
  // Several chunks at every kernel set's chunk size (2048 or 4096 keys), a ragged end.
  const int64_t len = 9000;
  const int64_t n_blocks = (len + bs - 1) / bs;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<int32_t> table(static_cast<size_t>(n_blocks));
  for (int32_t i = 0; i < n_blocks; ++i) table[static_cast<size_t>(i)] = i;
  std::shuffle(table.begin(), table.end(), rng);
  const std::vector<SequenceView> views = {{table, static_cast<int32_t>(len), {}}};
  KvCache cache({1, c.n_kv_heads, hd, bs, n_blocks, c.dtype, {}, 0});
  const int64_t q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;

  // The whole context's K/V, written as one prefill.
  std::vector<int32_t> tokens(static_cast<size_t>(len), 0), positions(static_cast<size_t>(len)),
      seq(static_cast<size_t>(len), 0);
  for (int64_t p = 0; p < len; ++p) positions[static_cast<size_t>(p)] = static_cast<int32_t>(p);
  std::vector<float> k(static_cast<size_t>(len * kv_dim)), v(k.size());
  for (auto* buf : {&k, &v})
    for (auto& x : *buf) x = normal(rng);
  write_kv(cache, 0, ForwardBatch{tokens, positions, seq, views, {}}, k.data(), v.data());

  // The last 16 tokens' queries: a prefill group; the last one alone is the decode.
  const int64_t group = 16;
  std::vector<float> q(static_cast<size_t>(group * q_dim));
  for (auto& x : q) x = normal(rng);
  const float* q_last = q.data() + (group - 1) * q_dim;
  const AttentionShape shape{c.n_heads, c.n_kv_heads, hd, 1.0f / std::sqrt(float(hd))};

  auto decode = [&](int threads) {
    const std::vector<int32_t> tok = {0}, pos = {static_cast<int32_t>(len - 1)}, s = {0};
    ThreadPool pool(threads);
    AttentionScratch scratch;
    scratch.reserve(pool.size(), shape, bs);
    std::vector<float> out(static_cast<size_t>(q_dim));
    const ForwardBatch batch{tok, pos, s, views, {}};
    paged_attention(cache, 0, batch, shape, q_last, out.data(), pool, scratch);
    // The keys are split exactly where the query rows were: more threads than KV heads.
    const AttentionPass pass(cache, 0, batch, shape, q_last, out.data(), threads, scratch);
    EXPECT_EQ(pass.n_merge_items() > 0, threads > c.n_kv_heads) << threads << " threads";
    return out;
  };
  const std::vector<float> one = decode(1), two = decode(2), three = decode(3);
  EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(one.data(), three.data(), one.size() * sizeof(float)));

  {  // The same token as the last row of a prefill group.
    std::vector<int32_t> tok(static_cast<size_t>(group), 0), pos(static_cast<size_t>(group)),
        s(static_cast<size_t>(group), 0);
    for (int64_t i = 0; i < group; ++i)
      pos[static_cast<size_t>(i)] = static_cast<int32_t>(len - group + i);
    ThreadPool pool(2);
    AttentionScratch scratch;
    scratch.reserve(pool.size(), shape, bs);
    std::vector<float> out(q.size());
    paged_attention(cache, 0, ForwardBatch{tok, pos, s, views, {}}, shape, q.data(), out.data(),
                    pool, scratch);
    EXPECT_EQ(
        0, std::memcmp(one.data(), out.data() + (group - 1) * q_dim, one.size() * sizeof(float)));
  }

  // Naive softmax in double over what the cache holds (bf16 rounds K, V and the query;
  // its softmax weights are bf16 too: the looser tolerance). A q8_0 cache's arithmetic
  // has its exact model in paged_attention_test; here its bits are checked above.
  if (c.dtype == DType::Q8_0) return;
  const bool bf16 = c.dtype == DType::BF16;
  auto stored = [&](float x) { return bf16 ? bf16_to_fp32(fp32_to_bf16(x)) : x; };
  const double tol = bf16 ? 8e-3 : 2e-5;
  const int64_t rep = c.n_heads / c.n_kv_heads;
  for (int64_t h = 0; h < c.n_heads; ++h) {
    const int64_t g = h / rep;
    std::vector<double> w(static_cast<size_t>(len));
    double mx = -1e300, sum = 0;
    for (int64_t j = 0; j < len; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < hd; ++d)
        dot += double(stored(q_last[h * hd + d])) * stored(k[size_t(j * kv_dim + g * hd + d)]);
      w[size_t(j)] = dot * shape.scale;
      mx = std::max(mx, w[size_t(j)]);
    }
    for (auto& x : w) sum += (x = std::exp(x - mx));
    for (int64_t d = 0; d < hd; ++d) {
      double ref = 0;
      for (int64_t j = 0; j < len; ++j)
        ref += w[size_t(j)] / sum * stored(v[size_t(j * kv_dim + g * hd + d)]);
      ASSERT_NEAR(one[size_t(h * hd + d)], ref, tol) << "head " << h << " dim " << d;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SplitKDecode,
                         ::testing::Values(SplitCase{8, 1, DType::F32},
                                           SplitCase{8, 1, DType::BF16},
                                           SplitCase{8, 2, DType::BF16},
                                           SplitCase{8, 1, DType::Q8_0}));

}  // namespace
}  // namespace strata

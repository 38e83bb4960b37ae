// Latent (MLA) attention against a naive softmax over the same rows, on every cache
// element type, across several 256-position chunks; and the same bits whatever the
// thread count or the rest of the batch.
#include "attention/latent_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "core/fp16.h"

namespace strata {
namespace {

constexpr int64_t kBlock = 16;

struct Fixture {
  LatentShape shape{12, 64, 16, 0.1f};  // one 8-head block and a 4-head tail
  KvCacheConfig kc;
  std::vector<std::vector<float>> rows;  // [position] as stored (rounded to the cache type)
  std::unique_ptr<KvCache> cache;
  std::vector<int32_t> table;

  Fixture(DType type, int64_t n_pos) {
    kc.n_layers = 2;
    kc.n_kv_heads = 1;
    kc.head_dim = shape.row();
    kc.block_size = kBlock;
    kc.n_blocks = (n_pos + kBlock - 1) / kBlock + 1;
    kc.dtype = type;
    kc.latent = true;
    cache = std::make_unique<KvCache>(kc);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    // Blocks in reverse order, so the table is what attention follows.
    for (int64_t b = 0; b < kc.n_blocks - 1; ++b)
      table.push_back(static_cast<int32_t>(kc.n_blocks - 1 - b));
    for (int64_t p = 0; p < n_pos; ++p) {
      std::vector<float> r(static_cast<size_t>(shape.row()));
      for (auto& x : r) {
        x = normal(rng);
        if (type == DType::F16) x = fp16_to_fp32(fp32_to_fp16(x));
        if (type == DType::BF16) x = bf16_to_fp32(fp32_to_bf16(x));
      }
      KvSlot at;
      at.full_block = table[static_cast<size_t>(p / kBlock)];
      at.slot = p % kBlock;
      write_latent_row(*cache, 1, at, r.data());
      rows.push_back(std::move(r));
    }
  }

  // softmax(scale q . rows[0..pos]) . rows[..][:L] per head.
  std::vector<float> naive(const float* q, int64_t pos) const {
    const int64_t H = shape.n_heads, L = shape.kv_lora_rank;
    std::vector<float> out(static_cast<size_t>(H * L));
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> s(static_cast<size_t>(pos + 1));
      for (int64_t j = 0; j <= pos; ++j) {
        double d = 0;
        for (int64_t i = 0; i < shape.row(); ++i)
          d += static_cast<double>(q[h * shape.row() + i]) *
               rows[static_cast<size_t>(j)][static_cast<size_t>(i)];
        s[static_cast<size_t>(j)] = d * shape.scale;
      }
      const double m = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (auto& x : s) sum += (x = std::exp(x - m));
      for (int64_t i = 0; i < L; ++i) {
        double o = 0;
        for (int64_t j = 0; j <= pos; ++j)
          o += s[static_cast<size_t>(j)] * rows[static_cast<size_t>(j)][static_cast<size_t>(i)];
        out[static_cast<size_t>(h * L + i)] = static_cast<float>(o / sum);
      }
    }
    return out;
  }
};

// Queries at `positions` of one sequence; returns out [T][H][L].
std::vector<float> run(const Fixture& f, const std::vector<int32_t>& positions,
                       const std::vector<float>& q, int threads) {
  ThreadPool pool(threads);
  LatentScratch scratch;
  const std::vector<int32_t> tokens(positions.size(), 0), seq(positions.size(), 0);
  const SequenceView view{f.table, static_cast<int32_t>(f.rows.size()), {}};
  const ForwardBatch b{tokens, positions, seq, {&view, 1}, {}};
  std::vector<float> out(positions.size() *
                         static_cast<size_t>(f.shape.n_heads * f.shape.kv_lora_rank));
  latent_attention(*f.cache, 1, b, f.shape, q.data(), out.data(), pool, scratch);
  return out;
}

std::vector<float> queries(const Fixture& f, size_t n) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> q(n * static_cast<size_t>(f.shape.n_heads * f.shape.row()));
  for (auto& x : q) x = normal(rng);
  return q;
}

class LatentAttention : public ::testing::TestWithParam<DType> {};

TEST_P(LatentAttention, MatchesNaiveSoftmaxAcrossChunks) {
  const Fixture f(GetParam(), 600);  // three 256-position chunks
  const std::vector<int32_t> positions = {0, 15, 16, 255, 256, 300, 599};
  const auto q = queries(f, positions.size());
  const auto got = run(f, positions, q, 2);
  const size_t per = static_cast<size_t>(f.shape.n_heads * f.shape.kv_lora_rank);
  for (size_t t = 0; t < positions.size(); ++t) {
    const auto want =
        f.naive(q.data() + t * static_cast<size_t>(f.shape.n_heads * f.shape.row()), positions[t]);
    for (size_t i = 0; i < per; ++i)
      ASSERT_NEAR(got[t * per + i], want[i], 2e-5)
          << "position " << positions[t] << " element " << i;
  }
}

// Few tokens spread their chunks over threads; many take a token per thread. Both give
// every output the same bits, so neither the thread count nor the batch changes a logit.
TEST_P(LatentAttention, SameBitsWhateverTheThreadsAndBatch) {
  const Fixture f(GetParam(), 600);
  const std::vector<int32_t> one = {599}, many = {3, 599, 256, 40, 511};
  const size_t per_q = static_cast<size_t>(f.shape.n_heads * f.shape.row());
  const auto q_many = queries(f, many.size());
  const std::vector<float> q_one(q_many.begin() + static_cast<ptrdiff_t>(per_q),
                                 q_many.begin() + static_cast<ptrdiff_t>(2 * per_q));
  const auto alone1 = run(f, one, q_one, 1);
  const auto alone3 = run(f, one, q_one, 3);
  const auto batch2 = run(f, many, q_many, 2);
  const auto batch8 = run(f, many, q_many, 8);  // fewer tokens than threads: chunk items
  const size_t per = static_cast<size_t>(f.shape.n_heads * f.shape.kv_lora_rank);
  for (size_t i = 0; i < per; ++i) {
    ASSERT_EQ(alone1[i], alone3[i]);
    ASSERT_EQ(alone1[i], batch2[per + i]);
    ASSERT_EQ(alone1[i], batch8[per + i]);
  }
  EXPECT_EQ(batch2, batch8);
}

INSTANTIATE_TEST_SUITE_P(Types, LatentAttention,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(LatentCache, HoldsOneRowPerTokenAndLayer) {
  KvCacheConfig kc;
  kc.n_layers = 3;
  kc.n_kv_heads = 1;
  kc.head_dim = 576;
  kc.n_blocks = 4;
  kc.dtype = DType::BF16;
  kc.latent = true;
  const KvCache cache(kc);
  EXPECT_EQ(cache.bytes_per_token(), size_t{576 * 3 * 2});
  EXPECT_EQ(cache.full_bytes_per_token(), size_t{576 * 3 * 2});
  EXPECT_EQ(cache.total_bytes(), size_t{576 * 3 * 2 * 16 * 4});  // no V pool
  kc.n_kv_heads = 2;
  EXPECT_THROW(KvCache cache2(kc), Error);
}

}  // namespace
}  // namespace strata

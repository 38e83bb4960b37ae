// Paged attention against a naive reference: random Q/K/V, scattered block tables,
// GQA groups, several sequences in one batch, f32, f16, bf16, q8_0 and q4_0 KV storage.
#include "attention/paged_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.h"
#include "core/fp16.h"

namespace strata {
namespace {

struct Case {
  int64_t n_heads, n_kv_heads, head_dim, block_size;
  DType dtype;
};

class PagedAttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(PagedAttentionTest, MatchesNaiveAttention) {
  const Case c = GetParam();
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::vector<int32_t> lens = {1, 5, 37, 70};  // context per sequence
  const int64_t n_blocks = 64;
  KvCache cache({1, c.n_kv_heads, c.head_dim, c.block_size, n_blocks, c.dtype, {}, 0});

  // Scatter blocks: hand them out in a shuffled order.
  std::vector<int32_t> ids(n_blocks);
  for (int32_t i = 0; i < n_blocks; ++i) ids[static_cast<size_t>(i)] = i;
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next_id = 0;
  std::vector<std::vector<int32_t>> tables(lens.size());
  std::vector<SequenceView> views;
  std::vector<int32_t> tokens, positions, seq_index;
  for (size_t s = 0; s < lens.size(); ++s) {
    while (static_cast<int64_t>(tables[s].size()) * c.block_size < lens[s])
      tables[s].push_back(ids[next_id++]);
    for (int32_t p = 0; p < lens[s]; ++p) {
      tokens.push_back(0);
      positions.push_back(p);
      seq_index.push_back(static_cast<int32_t>(s));
    }
  }
  for (size_t s = 0; s < lens.size(); ++s) views.push_back({tables[s], lens[s], {}});
  ForwardBatch batch{tokens, positions, seq_index, views, {}};
  const int64_t T = batch.n_tokens();
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  std::vector<float> q(static_cast<size_t>(T * q_dim)), k(static_cast<size_t>(T * kv_dim)),
      v(static_cast<size_t>(T * kv_dim));
  for (auto* buf : {&q, &k, &v}) {
    for (auto& x : *buf) x = normal(rng);
  }
  // What the cache will hold (f16 and bf16 storage round K and V); bf16 attention rounds the
  // query too, and its softmax weights (up to 2^-9 relative each: the looser bound). q8_0
  // and q4_0 values are dequantized to bf16 and folded as bf16 tiles, while their keys are
  // scored against the query quantized to int8 (below).
  const bool bf16 = c.dtype == DType::BF16 || c.dtype == DType::Q8_0 || c.dtype == DType::Q4_0;
  auto stored = [&](float x) {
    return c.dtype == DType::F16 ? fp16_to_fp32(fp32_to_fp16(x))
           : bf16                ? bf16_to_fp32(fp32_to_bf16(x))
                                 : x;
  };
  const double tol = bf16 ? 8e-3 : 2e-5;
  // q8_0 storage: each token head's row in groups of 32, scale max|x|/127 rounded to f16,
  // elements rounded to the nearest multiple of it (then to bf16, by stored()).
  std::vector<float> ks = k, vs = v;
  if (c.dtype == DType::Q8_0) {
    for (auto* buf : {&ks, &vs}) {
      const size_t gs = c.head_dim % 32 == 0 ? 32 : 16;
      for (size_t g0 = 0; g0 < buf->size(); g0 += gs) {
        float amax = 0;
        for (size_t i = 0; i < gs; ++i) amax = std::max(amax, std::fabs((*buf)[g0 + i]));
        const float sc = fp16_to_fp32(fp32_to_fp16(amax / 127.0f));
        for (size_t i = 0; i < gs; ++i) {
          float& x = (*buf)[g0 + i];
          x = sc > 0 ? std::nearbyint(x / sc) * sc : 0.0f;
        }
      }
    }
  }
  // q4_0: scale = (the group's largest-magnitude element) / -8 rounded to f16, elements
  // x * (1 / scale) rounded and clamped to [-8, 7], times the scale.
  if (c.dtype == DType::Q4_0) {
    for (auto* buf : {&ks, &vs}) {
      const size_t gs = c.head_dim % 32 == 0 ? 32 : 16;
      for (size_t g0 = 0; g0 < buf->size(); g0 += gs) {
        float amax = 0, m = 0;
        for (size_t i = 0; i < gs; ++i) {
          if (std::fabs((*buf)[g0 + i]) > amax) amax = std::fabs(m = (*buf)[g0 + i]);
        }
        const float sc = fp16_to_fp32(fp32_to_fp16(m / -8.0f));
        const float inv = sc != 0 ? 1.0f / sc : 0.0f;
        for (size_t i = 0; i < gs; ++i) {
          float& x = (*buf)[g0 + i];
          x = std::clamp(std::nearbyint(x * inv), -8.0f, 7.0f) * sc;
        }
      }
    }
  }

  // q8_0 and q4_0 keys meet the query in int8: per group of 32 (or 16), scale max|q| / 127
  // and elements round(q * 127 / max|q|); the stored keys are not rounded to bf16.
  const bool quant = c.dtype == DType::Q8_0 || c.dtype == DType::Q4_0;
  std::vector<double> qq(q.begin(), q.end());
  if (quant) {
    const size_t gs = c.head_dim % 32 == 0 ? 32 : 16;
    for (size_t g0 = 0; g0 < qq.size(); g0 += gs) {
      float amax = 0;
      for (size_t i = 0; i < gs; ++i) amax = std::max(amax, std::fabs(q[g0 + i]));
      for (size_t i = 0; i < gs; ++i) {
        qq[g0 + i] =
            amax > 0 ? std::nearbyint(q[g0 + i] * (127.0f / amax)) * double(amax / 127.0f) : 0.0;
      }
    }
  } else if (bf16) {
    for (size_t i = 0; i < q.size(); ++i) qq[i] = stored(q[i]);
  }
  auto stored_key = [&](float x) { return quant ? double(x) : stored(x); };

  write_kv(cache, 0, batch, k.data(), v.data());
  ThreadPool pool(2);
  AttentionScratch scratch;
  const AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim,
                             1.0f / std::sqrt(float(c.head_dim))};
  scratch.reserve(pool.size(), shape, c.block_size);
  std::vector<float> out(q.size());
  paged_attention(cache, 0, batch, shape, q.data(), out.data(), pool, scratch);

  const int64_t rep = c.n_heads / c.n_kv_heads;
  int64_t first = 0;  // first batch token of the current sequence
  for (int64_t t = 0; t < T; ++t) {
    if (t > 0 && seq_index[static_cast<size_t>(t)] != seq_index[static_cast<size_t>(t - 1)])
      first = t;
    const int64_t pos = positions[static_cast<size_t>(t)];
    for (int64_t h = 0; h < c.n_heads; ++h) {
      const int64_t g = h / rep;
      std::vector<double> w(static_cast<size_t>(pos + 1));
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j <= pos; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < c.head_dim; ++d) {
          dot += qq[size_t(t * q_dim + h * c.head_dim + d)] *
                 stored_key(ks[size_t((first + j) * kv_dim + g * c.head_dim + d)]);
        }
        w[size_t(j)] = dot * shape.scale;
        mx = std::max(mx, w[size_t(j)]);
      }
      for (auto& x : w) sum += (x = std::exp(x - mx));
      for (int64_t d = 0; d < c.head_dim; ++d) {
        double ref = 0;
        for (int64_t j = 0; j <= pos; ++j) {
          ref += w[size_t(j)] / sum * stored(vs[size_t((first + j) * kv_dim + g * c.head_dim + d)]);
        }
        ASSERT_NEAR(out[size_t(t * q_dim + h * c.head_dim + d)], ref, tol)
            << "token " << t << " head " << h << " dim " << d;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PagedAttentionTest,
    ::testing::Values(Case{4, 4, 16, 16, DType::F32}, Case{8, 2, 32, 16, DType::F32},
                      Case{8, 1, 64, 8, DType::F32}, Case{6, 3, 16, 4, DType::F16},
                      Case{8, 2, 64, 16, DType::BF16}, Case{6, 3, 16, 4, DType::BF16},
                      Case{8, 2, 64, 16, DType::Q8_0}, Case{4, 4, 32, 8, DType::Q8_0},
                      Case{8, 1, 128, 16, DType::Q8_0}, Case{4, 2, 16, 16, DType::Q8_0},
                      Case{8, 2, 64, 16, DType::Q4_0}, Case{4, 4, 32, 8, DType::Q4_0},
                      Case{8, 1, 128, 16, DType::Q4_0}, Case{4, 2, 48, 16, DType::Q4_0},
                      Case{4, 2, 32, 6, DType::Q4_0}));

TEST(PagedAttention, Q8CacheRejectsMlaAndOddHeadDim) {
  KvCacheConfig c{1, 1, 40, 16, 4, DType::Q8_0, {}, 0};
  EXPECT_THROW(KvCache{c}, Error);  // head_dim not a multiple of 16
  c.head_dim = 64;
  c.latent = true;
  EXPECT_THROW(KvCache{c}, Error);  // MLA's latent cache stays f32/f16/bf16
  c.latent = false;
  const KvCache cache(c);
  EXPECT_EQ(cache.tile_bytes(), size_t{16 * (64 + 2 * 2)});
  EXPECT_EQ(cache.bytes_per_token(), size_t{2 * (64 + 4)});
}

TEST(PagedAttention, Q4CacheSizesAndRejects) {
  KvCacheConfig c{1, 1, 40, 16, 4, DType::Q4_0, {}, 0};
  EXPECT_THROW(KvCache{c}, Error);  // head_dim not a multiple of 16
  c.head_dim = 64;
  c.latent = true;
  EXPECT_THROW(KvCache{c}, Error);  // MLA's latent cache stays f32/f16/bf16
  c.latent = false;
  c.block_size = 15;
  EXPECT_THROW(KvCache{c}, Error);  // two keys to a byte
  c.block_size = 16;
  const KvCache cache(c);
  EXPECT_EQ(cache.tile_bytes(), size_t{16 * (32 + 2 * 2)});  // 0.5625 B/element
  EXPECT_EQ(cache.bytes_per_token(), size_t{2 * (32 + 4)});
}

TEST(PagedAttention, WriteOutsideBlockTableThrows) {
  KvCache cache({1, 1, 4, 4, 2, DType::F32, {}, 0});
  const std::vector<int32_t> table = {0};
  const std::vector<SequenceView> views = {{table, 8, {}}};
  const std::vector<int32_t> tokens = {0}, positions = {5}, seq = {0};
  ForwardBatch batch{tokens, positions, seq, views, {}};
  std::vector<float> kv(4, 0.0f);
  EXPECT_THROW(write_kv(cache, 0, batch, kv.data(), kv.data()), Error);
}

}  // namespace
}  // namespace strata

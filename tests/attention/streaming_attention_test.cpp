// Streaming heads (sparse attention) against a naive masked reference: a streaming KV
// head attends to keys [0, sink) and (pos - window, pos] only; full heads to everything.
// Also: with the window covering the whole context a streaming head is bit-identical
// to a full one, and a head map with every head full is bit-identical to dense.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "attention/paged_attention.h"
#include "kv/head_modes.h"

namespace strata {
namespace {

struct Shape {
  int64_t n_heads = 4, n_kv_heads = 2, head_dim = 16, block_size = 4;
  std::vector<int32_t> lens = {3, 29, 45};
};

// Runs one layer of attention over all positions of every sequence (a full prefill)
// with the given modes. Full heads get blocks from the paged pool, streaming heads from
// the stream pool (every block held: this test checks the math, not the release).
std::vector<float> run(const Shape& s, const HeadModes& modes, const std::vector<float>& q,
                       const std::vector<float>& k, const std::vector<float>& v) {
  const int64_t n_blocks = 64;
  KvCache cache({1, s.n_kv_heads, s.head_dim, s.block_size, n_blocks, DType::F32, modes,
                 modes.n_streaming() > 0 ? n_blocks : 0});
  std::vector<std::vector<int32_t>> tables(s.lens.size()), streams(s.lens.size());
  std::vector<int32_t> tokens, positions, seq_index;
  int32_t next = 0, next_stream = 63;  // different ids in each pool
  for (size_t i = 0; i < s.lens.size(); ++i) {
    while (static_cast<int64_t>(tables[i].size()) * s.block_size < s.lens[i]) {
      tables[i].push_back(next++);
      streams[i].push_back(next_stream--);
    }
    for (int32_t p = 0; p < s.lens[i]; ++p) {
      tokens.push_back(0);
      positions.push_back(p);
      seq_index.push_back(static_cast<int32_t>(i));
    }
  }
  std::vector<SequenceView> views;
  for (size_t i = 0; i < s.lens.size(); ++i) views.push_back({tables[i], s.lens[i], streams[i]});
  ForwardBatch batch{tokens, positions, seq_index, views, {}};
  write_kv(cache, 0, batch, k.data(), v.data());
  ThreadPool pool(2);
  AttentionScratch scratch;
  const AttentionShape shape{s.n_heads, s.n_kv_heads, s.head_dim,
                             1.0f / std::sqrt(float(s.head_dim))};
  scratch.reserve(pool.size(), shape, s.block_size);
  std::vector<float> out(q.size());
  paged_attention(cache, 0, batch, shape, q.data(), out.data(), pool, scratch);
  return out;
}

struct Data {
  std::vector<float> q, k, v;
};

Data random_data(const Shape& s) {
  int64_t T = 0;
  for (int32_t l : s.lens) T += l;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Data d;
  d.q.resize(static_cast<size_t>(T * s.n_heads * s.head_dim));
  d.k.resize(static_cast<size_t>(T * s.n_kv_heads * s.head_dim));
  d.v.resize(d.k.size());
  for (auto* buf : {&d.q, &d.k, &d.v}) {
    for (auto& x : *buf) x = normal(rng);
  }
  return d;
}

HeadModes modes_of(const Shape& s, std::vector<uint8_t> streaming, int32_t sink, int32_t window) {
  HeadModes m;
  m.n_layers = 1;
  m.n_kv_heads = s.n_kv_heads;
  m.sink = sink;
  m.window = window;
  m.streaming = std::move(streaming);
  return m;
}

TEST(StreamingAttention, MatchesMaskedReference) {
  const Shape s;
  const Data d = random_data(s);
  for (auto [sink, window] : {std::pair{4, 8}, std::pair{0, 5}, std::pair{2, 1}, std::pair{6, 3}}) {
    const HeadModes m = modes_of(s, {0, 1}, sink, window);  // KV head 1 streaming
    const std::vector<float> out = run(s, m, d.q, d.k, d.v);
    const int64_t rep = s.n_heads / s.n_kv_heads, q_dim = s.n_heads * s.head_dim,
                  kv_dim = s.n_kv_heads * s.head_dim;
    int64_t first = 0;
    for (size_t seq = 0; seq < s.lens.size(); ++seq) {
      for (int64_t pos = 0; pos < s.lens[seq]; ++pos) {
        const int64_t t = first + pos;
        for (int64_t h = 0; h < s.n_heads; ++h) {
          const int64_t g = h / rep;
          std::vector<int64_t> keys;
          for (int64_t j = 0; j <= pos; ++j) {
            if (!m.is_streaming(0, g) || j < sink || j > pos - window) keys.push_back(j);
          }
          std::vector<double> w;
          double mx = -1e300, sum = 0;
          for (int64_t j : keys) {
            double dot = 0;
            for (int64_t e = 0; e < s.head_dim; ++e) {
              dot += double(d.q[size_t(t * q_dim + h * s.head_dim + e)]) *
                     d.k[size_t((first + j) * kv_dim + g * s.head_dim + e)];
            }
            w.push_back(dot / std::sqrt(double(s.head_dim)));
            mx = std::max(mx, w.back());
          }
          for (auto& x : w) sum += (x = std::exp(x - mx));
          for (int64_t e = 0; e < s.head_dim; ++e) {
            double ref = 0;
            for (size_t i = 0; i < keys.size(); ++i) {
              ref += w[i] / sum * d.v[size_t((first + keys[i]) * kv_dim + g * s.head_dim + e)];
            }
            ASSERT_NEAR(out[size_t(t * q_dim + h * s.head_dim + e)], ref, 2e-5)
                << "sink " << sink << " window " << window << " seq " << seq << " pos " << pos
                << " head " << h;
          }
        }
      }
      first += s.lens[seq];
    }
  }
}

TEST(StreamingAttention, WindowCoveringTheContextIsBitIdenticalToDense) {
  const Shape s;
  const Data d = random_data(s);
  const std::vector<float> dense = run(s, HeadModes{}, d.q, d.k, d.v);
  for (int32_t sink : {0, 3, 4, 100}) {
    const std::vector<float> streaming = run(s, modes_of(s, {1, 1}, sink, 45), d.q, d.k, d.v);
    ASSERT_EQ(0, std::memcmp(dense.data(), streaming.data(), dense.size() * sizeof(float)))
        << "sink " << sink;
  }
}

TEST(StreamingAttention, AllFullHeadMapIsBitIdenticalToDense) {
  const Shape s;
  const Data d = random_data(s);
  const std::vector<float> dense = run(s, HeadModes{}, d.q, d.k, d.v);
  const std::vector<float> all_full = run(s, modes_of(s, {0, 0}, 4, 8), d.q, d.k, d.v);
  ASSERT_EQ(0, std::memcmp(dense.data(), all_full.data(), dense.size() * sizeof(float)));
}

TEST(StreamingAttention, StreamingHeadsLiveInTheirOwnPool) {
  const Shape s;
  HeadModes m = modes_of(s, {0, 1, 1, 1}, 4, 8);
  m.n_layers = 2;
  // Layer 0: one full and one streaming head; layer 1: both streaming.
  KvCache cache({2, s.n_kv_heads, s.head_dim, s.block_size, 10, DType::F32, m, 3});
  EXPECT_EQ(cache.full_bytes_per_token(), size_t(2 * 1 * 16 * 4));
  EXPECT_EQ(cache.stream_bytes_per_token(), size_t(2 * 3 * 16 * 4));
  EXPECT_EQ(cache.total_bytes(), size_t(2 * (10 * 1 + 3 * 3) * 4 * 16 * 4));
  EXPECT_TRUE(cache.streaming(1, 0));
  EXPECT_FALSE(cache.streaming(0, 0));
}

TEST(StreamingRange, SinksAndWindow) {
  auto r = streaming_range(100, 4, 10);
  EXPECT_EQ(r.sink_end, 4);
  EXPECT_EQ(r.window_begin, 91);
  r = streaming_range(2, 4, 10);  // early positions: everything
  EXPECT_EQ(r.sink_end, 3);
  EXPECT_EQ(r.window_begin, 3);
  r = streaming_range(12, 4, 10);  // the window reaches back into the sinks
  EXPECT_EQ(r.window_begin, 4);
}

}  // namespace
}  // namespace strata

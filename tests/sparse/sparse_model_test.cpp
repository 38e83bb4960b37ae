// Sparse attention on a real trained model (gqa260K: 5 layers, 4 KV heads, 512
// context): equivalences that must hold bit for bit, chunking invariance, and the
// serving engine with streaming heads (bounded KV, prefix caching stays exact).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/engine_core.h"
#include "model/model.h"
#include "support/engine_runs.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

std::vector<int32_t> random_prompt(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(3, 511);
  std::vector<int32_t> p = {1};
  while (static_cast<int>(p.size()) < n) p.push_back(tok(rng));
  return p;
}

HeadModes modes(const Model& m, std::vector<uint8_t> streaming, int32_t sink, int32_t window) {
  HeadModes h;
  h.n_layers = m.config().n_layers;
  h.n_kv_heads = m.config().n_kv_heads;
  h.sink = sink;
  h.window = window;
  h.streaming = std::move(streaming);
  return h;
}

// Every layer: KV heads 0 full, 1-3 streaming.
std::vector<uint8_t> one_full_per_layer(const Model& m) {
  std::vector<uint8_t> s;
  for (int64_t l = 0; l < m.config().n_layers; ++l) {
    for (int64_t h = 0; h < m.config().n_kv_heads; ++h) s.push_back(h == 0 ? 0 : 1);
  }
  return s;
}

std::vector<float> all_logits(Model& model, const HeadModes& m, const std::vector<int32_t>& prompt,
                              int64_t chunk) {
  ThreadPool pool(2);
  EngineConfig c = testing::one_request_config();
  c.head_modes = m;
  c.scheduler.prefill_chunk = chunk;
  c.scheduler.max_batch_tokens = chunk;
  return testing::prompt_logits(model, pool, prompt, c);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class SparseModel : public ::testing::Test {
 protected:
  void SetUp() override { model_ = Model::load(testing::gqa_gguf()); }
  std::unique_ptr<Model> model_;
};

TEST_F(SparseModel, AllFullHeadMapEqualsDenseBitForBit) {
  const auto prompt = random_prompt(300, 1);
  const auto dense = all_logits(*model_, {}, prompt, 64);
  const std::vector<uint8_t> none(
      static_cast<size_t>(model_->config().n_layers * model_->config().n_kv_heads), 0);
  EXPECT_TRUE(same_bits(dense, all_logits(*model_, modes(*model_, none, 4, 16), prompt, 64)));
}

TEST_F(SparseModel, WindowCoveringTheContextEqualsDenseBitForBit) {
  const auto prompt = random_prompt(300, 2);
  const auto dense = all_logits(*model_, {}, prompt, 64);
  const auto m = modes(*model_, one_full_per_layer(*model_), 4, 300);
  EXPECT_TRUE(same_bits(dense, all_logits(*model_, m, prompt, 64)));
}

TEST_F(SparseModel, SmallWindowChangesTheOutputButNotWithChunking) {
  const auto prompt = random_prompt(300, 3);
  const auto m = modes(*model_, one_full_per_layer(*model_), 4, 32);
  const auto a = all_logits(*model_, m, prompt, 64);
  EXPECT_FALSE(same_bits(a, all_logits(*model_, {}, prompt, 64)));  // the mask is real
  EXPECT_TRUE(same_bits(a, all_logits(*model_, m, prompt, 7)));
  EXPECT_TRUE(same_bits(a, all_logits(*model_, m, prompt, 300)));
}

std::vector<int32_t> greedy(EngineCore& engine, const std::vector<int32_t>& prompt, int n,
                            int32_t* cached) {
  RequestOptions o;
  o.sampling.temperature = 0;
  o.stop.max_tokens = n;
  o.stop.ignore_eos = true;
  const RequestId id = engine.add_request(prompt, o);
  std::vector<int32_t> out;
  while (engine.has_work()) {
    for (const auto& r : engine.step()) {
      if (r.id != id) continue;
      out.insert(out.end(), r.new_tokens.begin(), r.new_tokens.end());
      if (r.finished() && cached) *cached = r.n_cached_prompt;
    }
  }
  return out;
}

EngineConfig sparse_config(const Model& model, bool prefix_cache) {
  EngineConfig c;
  c.kv_cache_tokens = 4096;
  c.scheduler.prefill_chunk = 48;
  c.prefix_cache = prefix_cache;
  c.head_modes = modes(model, one_full_per_layer(model), 4, 32);
  return c;
}

TEST_F(SparseModel, EngineMatchesTheRunnerAndPrefixHitsAreExact) {
  ThreadPool pool(2);
  const auto shared = random_prompt(200, 4);
  auto prompt_b = shared;
  for (int32_t t : random_prompt(30, 5)) prompt_b.push_back(t);

  // Reference: no prefix cache.
  EngineCore cold(*model_, pool, sparse_config(*model_, false));
  const auto ref_b = greedy(cold, prompt_b, 40, nullptr);

  // A single sequence prefilled in one big chunk agrees with the serving configuration.
  {
    EngineConfig c = testing::one_request_config();
    c.head_modes = sparse_config(*model_, false).head_modes;
    EXPECT_EQ(testing::greedy_tokens(*model_, pool, prompt_b, 40, c), ref_b);
  }

  EngineCore warm(*model_, pool, sparse_config(*model_, true));
  greedy(warm, shared, 10, nullptr);
  int32_t cached = 0;
  const auto hit_b = greedy(warm, prompt_b, 40, &cached);
  EXPECT_GE(cached, 160);  // the shared prefix came from the cache (sinks + window cached)
  EXPECT_EQ(hit_b, ref_b);
  const auto m = warm.metrics();
  EXPECT_EQ(m.kv.used, 0);
  EXPECT_EQ(m.kv_stream.used, 0);
}

TEST_F(SparseModel, StreamingHeadsStopGrowing) {
  ThreadPool pool(2);
  EngineConfig dense;
  dense.kv_cache_tokens = 4096;
  dense.scheduler.prefill_chunk = 48;
  EngineCore d(*model_, pool, dense);
  EngineCore s(*model_, pool, sparse_config(*model_, false));
  RequestOptions o;
  o.sampling.temperature = 0;
  o.stop.max_tokens = 1;
  o.stop.ignore_eos = true;
  d.add_request(random_prompt(480, 6), o);
  s.add_request(random_prompt(480, 6), o);
  uint64_t dense_peak = 0, sparse_peak = 0;
  while (d.has_work()) {
    d.step();
    dense_peak = std::max(dense_peak, d.metrics().kv_bytes_in_use);
  }
  while (s.has_work()) {
    s.step();
    sparse_peak = std::max(sparse_peak, s.metrics().kv_bytes_in_use);
  }
  // One of four heads full; the streaming three hold at most sink + window + a chunk.
  EXPECT_LT(static_cast<double>(sparse_peak), 0.5 * static_cast<double>(dense_peak));
}

}  // namespace
}  // namespace strata

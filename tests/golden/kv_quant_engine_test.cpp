// The serving engine over quantized KV caches (q8_0, q4_0) on the real tiny models: the
// same requests give exactly the same tokens one at a time, continuously batched, with a
// tiny prefill chunk, under preemption (recompute) and with prefix-cache hits on
// quantized blocks; sparse attention's streaming heads keep chunking invariance and
// exact prefix hits; the metrics' KV bytes per token follow the cache type.
// Exactness holds because every token's K/V is quantized once when written, and
// attention (the token's own chunk included) reads it back through the cache, so what
// a position sees does not depend on how the work was split.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "kv/kv_quant.h"
#include "serving/engine_test_util.h"
#include "support/engine_runs.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

void check_equivalence(const std::string& path, DType kv, int32_t max_prompt, int32_t max_new) {
  auto model = Model::load(path);
  ASSERT_EQ(model->config().head_dim % 16, 0);
  const auto requests =
      testing::random_requests(24, model->config().n_vocab, max_prompt, max_new, false, 11);
  EngineConfig base;
  base.kv_type = kv;
  base.scheduler.max_seqs = 32;
  const int64_t roomy = 16 * model->config().context_length;
  const auto ref = testing::run_scenario(*model, requests, {"one at a time", true}, base, roomy);
  const int64_t small_pool = (max_prompt + max_new) * 3 / 2;
  for (const auto& s : testing::batching_scenarios(small_pool)) {
    SCOPED_TRACE(std::string(dtype_name(kv)) + ": " + s.name);
    testing::expect_same_tokens(testing::run_scenario(*model, requests, s, base, roomy), ref, s);
  }
}

TEST(QuantizedKvEngine, Q4EquivalenceAidreams) {
  check_equivalence(testing::aidreams_gguf(), DType::Q4_0, 90, 20);
}
TEST(QuantizedKvEngine, Q8EquivalenceAidreams) {
  check_equivalence(testing::aidreams_gguf(), DType::Q8_0, 90, 20);
}
// gqa260K's head_dim of 8 has no 16-element group: quantized caches are refused with a
// clear error when the engine is built, not at the first request.
TEST(QuantizedKvEngine, HeadDim8IsRejectedClearly) {
  auto model = Model::load(testing::gqa_gguf());
  ThreadPool pool(2);
  for (DType kv : {DType::Q8_0, DType::Q4_0}) {
    EngineConfig c = testing::one_request_config(kv);
    try {
      EngineCore engine(*model, pool, c);
      ADD_FAILURE() << dtype_name(kv) << " accepted at head_dim 8";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("multiple of 16"), std::string::npos) << e.what();
    }
  }
}

// A cold prompt and the same prompt after a warm-up request that cached its prefix: the
// second takes the quantized blocks from the prefix cache and gives the same tokens.
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

std::vector<int32_t> prompt_of(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(3, 511);
  std::vector<int32_t> p = {1};
  while (static_cast<int>(p.size()) < n) p.push_back(tok(rng));
  return p;
}

EngineConfig sparse_config(const Model& m, DType kv, bool prefix_cache, int64_t chunk) {
  EngineConfig c;
  c.kv_type = kv;
  c.kv_cache_tokens = 4096;
  c.scheduler.prefill_chunk = chunk;
  c.prefix_cache = prefix_cache;
  HeadModes h;  // every layer: KV head 0 full, the rest streaming (sink 4, window 16)
  h.n_layers = m.config().n_layers;
  h.n_kv_heads = m.config().n_kv_heads;
  h.sink = 4;
  h.window = 16;
  for (int64_t l = 0; l < h.n_layers; ++l) {
    for (int64_t k = 0; k < h.n_kv_heads; ++k) h.streaming.push_back(k == 0 ? 0 : 1);
  }
  c.head_modes = h;
  return c;
}

// aidreams260K (context 128, 4 KV heads of 16): head 0 full, the rest streaming.
TEST(QuantizedKvEngine, StreamingHeadsChunkingAndPrefixHitsAreExact) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(2);
  const auto shared = prompt_of(64, 4);
  auto prompt_b = shared;
  for (int32_t t : prompt_of(16, 5)) prompt_b.push_back(t);
  for (DType kv : {DType::Q8_0, DType::Q4_0}) {
    SCOPED_TRACE(dtype_name(kv));
    EngineCore cold(*model, pool, sparse_config(*model, kv, false, 48));
    const auto ref_b = greedy(cold, prompt_b, 30, nullptr);
    EngineCore chunked(*model, pool, sparse_config(*model, kv, false, 7));
    EXPECT_EQ(greedy(chunked, prompt_b, 30, nullptr), ref_b);
    EngineCore warm(*model, pool, sparse_config(*model, kv, true, 48));
    greedy(warm, shared, 10, nullptr);
    int32_t cached = 0;
    EXPECT_EQ(greedy(warm, prompt_b, 30, &cached), ref_b);
    EXPECT_GE(cached, 32);
    // The sparse quantized run differs from the dense f32 one (the mask and the rounding
    // are real), so the equalities above are not vacuous.
    EngineConfig dense = testing::one_request_config();
    EXPECT_NE(testing::greedy_tokens(*model, pool, prompt_b, 30, dense), ref_b);
  }
}

TEST(QuantizedKvEngine, MetricsBytesPerTokenFollowTheCacheType) {
  auto model = Model::load(testing::aidreams_gguf());
  ThreadPool pool(2);
  const auto& mc = model->config();
  for (DType kv : {DType::F32, DType::BF16, DType::Q8_0, DType::Q4_0}) {
    SCOPED_TRACE(dtype_name(kv));
    EngineConfig c;
    c.kv_type = kv;
    c.kv_cache_tokens = 2048;
    c.prefix_cache = false;
    EngineCore engine(*model, pool, c);
    RequestOptions o;
    o.sampling.temperature = 0;
    o.stop.max_tokens = 64;  // keeps the request running while it is measured
    o.stop.ignore_eos = true;
    engine.add_request(prompt_of(64, 9), o);
    engine.step();  // the prompt's 64 tokens: 4 whole blocks
    const auto m = engine.metrics();
    ASSERT_GT(m.kv_context_tokens, 0);
    const double per_token =
        static_cast<double>(m.kv_bytes_in_use) / static_cast<double>(m.kv_context_tokens);
    const double want = static_cast<double>(2 * mc.n_layers * mc.n_kv_heads) *
                        static_cast<double>(kv_quant::row_bytes(kv, mc.head_dim));
    EXPECT_NEAR(per_token, want, want * 0.3);  // up to one partial block
  }
}

}  // namespace
}  // namespace strata

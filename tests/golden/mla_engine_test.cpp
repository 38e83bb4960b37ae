// deepseek2 (MLA) through the engine: the latent cache's bytes in the engine's metrics
// are (kv_lora_rank + rope dims) x layers x element size per token, and chunked prefill,
// prefix caching and continuous batching run unchanged on latent blocks.
#include <gtest/gtest.h>

#include "convert/make_model.h"
#include "engine/engine_core.h"
#include "model/model.h"
#include "support/paths.h"

namespace strata {
namespace {

const std::string& mla_model() {
  static const std::string path = [] {
    MakeModelOptions o;
    o.preset = "deepseek2-tiny";
    o.output_path = testing::scratch_dir() + "/mla-engine.gguf";
    o.vocab_path = testing::shared_dir() + "/vocab/ggml-vocab-llama-spm.gguf";
    o.context_length = 2048;
    o.type = DType::Q8_0;
    make_model(o);
    return o.output_path;
  }();
  return path;
}

EngineConfig config() {
  EngineConfig c;
  c.kv_cache_tokens = 4096;
  c.kv_type = DType::F16;
  c.scheduler.prefill_chunk = 256;  // a 1000-token prompt takes four chunks
  return c;
}

RequestOptions greedy(int max_tokens) {
  RequestOptions o;
  o.sampling.temperature = 0;
  o.stop.max_tokens = max_tokens;
  o.stop.ignore_eos = true;
  return o;
}

std::vector<int32_t> prompt(int n) {
  std::vector<int32_t> p = {1};
  for (int i = 1; i < n; ++i) p.push_back(100 + (i * 7919) % 30000);
  return p;
}

std::vector<int32_t> run_to_end(EngineCore& engine, RequestId id, EngineMetrics* mid = nullptr) {
  std::vector<int32_t> tokens;
  for (int step = 0; step < 200; ++step) {
    bool done = false;
    for (const auto& o : engine.step()) {
      if (o.id != id) continue;
      tokens.insert(tokens.end(), o.new_tokens.begin(), o.new_tokens.end());
      done = o.finish != FinishReason::kNone;
    }
    if (mid && tokens.size() == 2) *mid = engine.metrics();
    if (done) return tokens;
  }
  ADD_FAILURE() << "request did not finish";
  return tokens;
}

TEST(MlaEngine, KvBytesPerTokenAreTheLatentRow) {
  auto model = Model::load(mla_model());
  const auto& c = model->config();
  ThreadPool pool(2);
  EngineCore engine(*model, pool, config());
  // 64 + 32 latent dims, 3 layers, f16.
  EXPECT_EQ(model->kv_bytes_per_token(2), size_t{(64 + 32) * 3 * 2});
  EXPECT_EQ(c.n_kv_heads, 1);
  EngineMetrics mid;
  const RequestId id = engine.add_request(prompt(1000), greedy(8));
  run_to_end(engine, id, &mid);
  ASSERT_GT(mid.kv.used, 0);
  EXPECT_EQ(mid.kv_bytes_in_use, static_cast<uint64_t>(mid.kv.used) * 16 * 576);
  EXPECT_EQ(mid.kv_context_tokens, 1001);
  // Whole blocks: 1001 tokens take 63 blocks of 16.
  EXPECT_EQ(mid.kv.used, 63);
}

TEST(MlaEngine, MemoryBudgetIsSizedByTheLatentRow) {
  auto model = Model::load(mla_model());
  ThreadPool pool(2);
  EngineConfig c = config();
  c.kv_cache_tokens = 0;
  c.kv_cache_mem = 576 * 1024;  // 1024 latent rows of (64 + 32) x 3 layers x f16
  EngineCore engine(*model, pool, c);
  EXPECT_EQ(engine.kv_capacity_tokens(), 1024);
}

TEST(MlaEngine, PrefixHitsAndBatchingGiveTheSameTokens) {
  auto model = Model::load(mla_model());
  ThreadPool pool(2);
  EngineCore engine(*model, pool, config());
  const auto p = prompt(300);
  const auto alone = run_to_end(engine, engine.add_request(p, greedy(12)));
  // The same prompt again: served from cached latent blocks.
  const int64_t hits_before = engine.metrics().prefix_hits_tokens;
  const RequestId again = engine.add_request(p, greedy(12));
  const RequestId other = engine.add_request(prompt(90), greedy(12));  // batched with it
  std::vector<int32_t> got, got_other;
  for (int step = 0; step < 100 && (got.size() < 12 || got_other.size() < 12); ++step) {
    for (const auto& o : engine.step()) {
      auto& dst = o.id == again ? got : got_other;
      if (o.id == again || o.id == other)
        dst.insert(dst.end(), o.new_tokens.begin(), o.new_tokens.end());
    }
  }
  EXPECT_GE(engine.metrics().prefix_hits_tokens - hits_before, 288);
  EXPECT_EQ(got, alone);
  EXPECT_EQ(got_other.size(), 12u);
}

}  // namespace
}  // namespace strata

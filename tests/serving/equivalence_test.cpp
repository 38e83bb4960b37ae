// The core serving-engine test: the same requests give exactly the same tokens when run
// (a) one at a time, (b) all at once with continuous batching, (c) with a tiny prefill
// chunk, (d) with a KV pool so small that preemption happens, (e) with prefix caching
// over shared prefixes — greedy and with seeded sampling — and nothing leaks.
#include <gtest/gtest.h>

#include "convert/make_model.h"
#include "serving/engine_test_util.h"
#include "support/paths.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

struct Scenario {
  const char* name;
  bool one_at_a_time = false;
  int64_t prefill_chunk = 512;
  int64_t kv_tokens = 0;  // 0 = roomy
  bool prefix_cache = false;
};

struct Outcome {
  std::vector<std::vector<int32_t>> tokens;
  EngineMetrics metrics;
};

Outcome run(Model& model, const std::vector<OfflineRequest>& requests, const Scenario& s) {
  ThreadPool pool(2);
  EngineConfig c;
  c.kv_cache_tokens = s.kv_tokens > 0 ? s.kv_tokens : 64 * model.config().context_length;
  c.prefix_cache = s.prefix_cache;
  c.scheduler.max_seqs = 64;
  c.scheduler.max_batch_tokens = 1024;
  c.scheduler.prefill_chunk = s.prefill_chunk;
  EngineCore engine(model, pool, c);
  Outcome out;
  if (s.one_at_a_time) {
    for (const auto& r : requests) {
      const auto res = generate(engine, nullptr, {r});
      out.tokens.push_back(res[0].tokens);
      testing::expect_no_leaks(engine);
    }
  } else {
    for (const auto& res : generate(engine, nullptr, requests)) out.tokens.push_back(res.tokens);
  }
  out.metrics = engine.metrics();
  testing::expect_no_leaks(engine);
  return out;
}

void check_equivalence(const std::string& path, int32_t max_prompt, int32_t max_new, bool sampled) {
  auto model = Model::load(path);
  const auto requests =
      testing::random_requests(50, model->config().n_vocab, max_prompt, max_new, sampled, 7);
  const Outcome ref = run(*model, requests, {"one at a time", true});
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(static_cast<int32_t>(ref.tokens[i].size()), requests[i].options.stop.max_tokens);
  }
  // A pool of about one and a half of the longest requests forces preemption when 50
  // arrive at once, yet always fits any single request.
  const int64_t small_pool = (max_prompt + max_new) * 3 / 2;
  const Scenario scenarios[] = {
      {"continuous batching"},
      {"prefill chunk 7", false, 7},
      {"preemption", false, 512, small_pool},
      {"prefix caching", false, 512, 0, true},
      {"prefix caching + chunk 7 + preemption", false, 7, small_pool, true},
  };
  for (const auto& s : scenarios) {
    SCOPED_TRACE(s.name);
    const Outcome got = run(*model, requests, s);
    for (size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(got.tokens[i], ref.tokens[i]) << "request " << i;
    if (s.kv_tokens > 0) {
      EXPECT_GT(got.metrics.preemptions, 0);
    }
    if (s.prefix_cache) {
      EXPECT_GT(got.metrics.prefix_hits_tokens, 0);
    }
  }
}

TEST(EngineEquivalence, AidreamsGreedy) {
  check_equivalence(testing::aidreams_gguf(), 90, 30, false);
}
TEST(EngineEquivalence, AidreamsSeededSampling) {
  check_equivalence(testing::aidreams_gguf(), 90, 30, true);
}
TEST(EngineEquivalence, GqaGreedy) {
  check_equivalence(testing::gqa_gguf(), 250, 40, false);
}

const std::string& tiny_random_model() {
  static const std::string path = [] {
    MakeModelOptions o;
    o.preset = "tiny";
    o.output_path = testing::scratch_dir() + "/tiny.gguf";
    o.vocab_path = testing::shared_dir() + "/vocab/ggml-vocab-llama-spm.gguf";
    o.context_length = 1024;
    o.seed = 5;
    o.type = DType::Q8_0;  // the quantized path, and faster than f32
    make_model(o);
    return o.output_path;
  }();
  return path;
}

TEST(EngineEquivalence, MadeTinyModelLongerContextGreedy) {
  check_equivalence(tiny_random_model(), 400, 24, false);
}
TEST(EngineEquivalence, MadeTinyModelSeededSampling) {
  check_equivalence(tiny_random_model(), 200, 24, true);
}

}  // namespace
}  // namespace strata

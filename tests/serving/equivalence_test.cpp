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

void check_equivalence(const std::string& path, int32_t max_prompt, int32_t max_new, bool sampled) {
  auto model = Model::load(path);
  const auto requests =
      testing::random_requests(50, model->config().n_vocab, max_prompt, max_new, sampled, 7);
  EngineConfig base;
  base.scheduler.max_seqs = 64;
  const int64_t roomy = 64 * model->config().context_length;
  const auto ref = testing::run_scenario(*model, requests, {"one at a time", true}, base, roomy);
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(static_cast<int32_t>(ref.tokens[i].size()), requests[i].options.stop.max_tokens);
  }
  // A pool of about one and a half of the longest requests forces preemption when 50
  // arrive at once, yet always fits any single request.
  const int64_t small_pool = (max_prompt + max_new) * 3 / 2;
  for (const auto& s : testing::batching_scenarios(small_pool)) {
    SCOPED_TRACE(s.name);
    testing::expect_same_tokens(testing::run_scenario(*model, requests, s, base, roomy), ref, s);
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

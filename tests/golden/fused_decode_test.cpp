// The decode path (a decode matmul's RMSNorm or SwiGLU and input conversion inside
// its pool job, kernels::MatmulHooks; RoPE, K/V writes and attention of a layer in one
// pool job split by KV head, Model::attention_by_head) on 1, 2 and 3 threads: one thread
// prepares a matmul's input before the job, several overlap it with their weight
// prefetches, and attention's threads own their KV heads or share the work items. The
// logits of every prompt token and every decode step must be the same bits whichever way,
// on both real tiny models, with every KV cache type, quantized (repacked) weights and
// streaming heads.
#include <gtest/gtest.h>

#include <cstring>

#include "model/model.h"
#include "runner/model_runner.h"
#include "support/engine_runs.h"
#include "support/process.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

struct DecodeSetup {
  DType kv_type = DType::F32;
  HeadModes modes;  // dense by default
};

// A prompt (the logits of all its tokens), then `steps` greedy tokens one at a time (the
// logits of each), through the ModelRunner with plans built here so every step's logits
// can be read.
std::vector<std::vector<float>> decode(Model& model, int threads, const DecodeSetup& s, int steps) {
  ThreadPool pool(threads);
  EngineConfig c = testing::one_request_config(s.kv_type);
  c.head_modes = s.modes;
  const KvPlan plan = plan_kv(model, c);
  ModelRunner runner(model, pool, plan.cache, {});
  KvManager kv(plan.manager);
  RequestOptions greedy;
  greedy.sampling.temperature = 0.0f;
  greedy.prompt_logits = 12;
  Request r(1, {1, 303, 281, 269, 435, 447, 328, 446, 299, 303, 266, 358}, greedy,
            model.config().n_vocab);
  std::vector<std::vector<float>> out;
  for (int step = 0; step <= steps; ++step) {
    SchedulerOutput p;
    p.scheduled.push_back({&r, static_cast<int32_t>(r.n_pending())});
    if (!kv.allocate(r.kv, static_cast<int64_t>(r.tokens.size())))
      throw Error("test: KV cache full");
    const RunnerOutput& o = runner.execute(p);
    out.emplace_back(o.logits.begin(), o.logits.end());  // every prompt row, then one per step
    r.n_computed = static_cast<int64_t>(r.tokens.size());
    r.first_token_s = 0;  // started: no more prompt rows
    kv.commit(r.kv, r.tokens);
    r.tokens.push_back(o.produced(0)[0]);
  }
  return out;
}

void expect_same_bits_on_1_to_3_threads(Model& model, const DecodeSetup& s, int steps = 40) {
  const auto one = decode(model, 1, s, steps);
  for (int threads : {2, 3}) {
    const auto many = decode(model, threads, s, steps);
    ASSERT_EQ(many.size(), one.size());
    for (size_t i = 0; i < many.size(); ++i) {
      ASSERT_EQ(many[i].size(), one[i].size());
      EXPECT_EQ(std::memcmp(many[i].data(), one[i].data(), many[i].size() * sizeof(float)), 0)
          << "step " << i << ", " << threads << " threads, kv " << dtype_name(s.kv_type);
    }
  }
}

TEST(FusedDecode, AidreamsSameBitsOnAnyThreadCount) {
  auto model = Model::load(testing::aidreams_gguf());
  expect_same_bits_on_1_to_3_threads(*model, {DType::F32, {}});
}

TEST(FusedDecode, GqaSameBitsOnAnyThreadCountWithEveryKvType) {
  auto model = Model::load(testing::gqa_gguf());
  for (DType kv : {DType::F32, DType::F16, DType::BF16})
    expect_same_bits_on_1_to_3_threads(*model, {kv, {}});
}

// Streaming heads: KV heads 1-3 of every layer keep 4 sinks and a 16-token window, so
// the decode steps past 20 tokens read both the stream table and the full blocks.
TEST(FusedDecode, GqaWithStreamingHeadsSameBitsOnAnyThreadCount) {
  auto model = Model::load(testing::gqa_gguf());
  DecodeSetup s;
  s.modes.n_layers = model->config().n_layers;
  s.modes.n_kv_heads = model->config().n_kv_heads;
  s.modes.sink = 4;
  s.modes.window = 16;
  for (int64_t l = 0; l < s.modes.n_layers; ++l) {
    for (int64_t h = 0; h < s.modes.n_kv_heads; ++h) s.modes.streaming.push_back(h == 0 ? 0 : 1);
  }
  expect_same_bits_on_1_to_3_threads(*model, s);
}

// Q8_0 and Q4_0 weights, repacked at load where the CPU has the interleaved kernels.
std::unique_ptr<Model> quantized_aidreams(const char* type) {
  const std::string out = testing::scratch_dir() + "/aidreams260K.fused." + type + ".gguf";
  const auto r =
      testing::run_command(testing::strata_bin() + " quantize '" + testing::aidreams_gguf() +
                           "' '" + out + "' --type " + type + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return Model::load(out);
}

TEST(FusedDecode, QuantizedWeightsSameBitsOnAnyThreadCount) {
  for (const char* type : {"q8_0", "q4_0"}) {
    auto model = quantized_aidreams(type);
    for (DType kv : {DType::F16, DType::BF16}) expect_same_bits_on_1_to_3_threads(*model, {kv, {}});
  }
}

}  // namespace
}  // namespace strata

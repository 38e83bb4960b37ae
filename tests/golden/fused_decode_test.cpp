// Model::attention_by_head (RoPE, K/V writes and attention of a layer in one pool job,
// split by KV head) against the unfused steps (RoPE and K/V writes on one thread, then
// paged_attention): the logits of every prompt token and every decode step must be the
// same bits, on both real tiny models, with every KV cache type, quantized (repacked)
// weights, streaming heads and 2 or 3 threads. The same for fused matmul steps (a decode
// matmul's RMSNorm or SwiGLU and input conversion inside its pool job,
// kernels::MatmulHooks) against those steps run before the job.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "model/model.h"
#include "runner/sequence_runner.h"
#include "sample/sampler.h"
#include "support/process.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

enum class Switch { fused_attention, fused_matmul_steps };

struct DecodeSetup {
  int threads = 2;
  Switch which = Switch::fused_attention;
  DType kv_type = DType::F32;
  HeadModes modes;  // dense by default
};

// A prompt (the logits of all its tokens), then `steps` greedy tokens one at a time (the
// logits of each).
std::vector<std::vector<float>> decode(Model& model, bool fused, const DecodeSetup& s, int steps) {
  model.set_fused_attention(s.which != Switch::fused_attention || fused);
  model.set_fused_matmul_steps(s.which != Switch::fused_matmul_steps || fused);
  ThreadPool pool(s.threads);
  SequenceRunnerOptions o;
  o.kv_type = s.kv_type;
  o.head_modes = s.modes;
  SequenceRunner runner(model, pool, o);
  std::vector<int32_t> tokens = {1, 303, 281, 269, 435, 447, 328, 446, 299, 303, 266, 358};
  std::vector<std::vector<float>> out(1);
  auto logits = runner.feed(tokens, &out[0]);
  logits = logits.last(static_cast<size_t>(model.config().n_vocab));
  for (int step = 0; step < steps; ++step) {
    out.emplace_back(logits.begin(), logits.end());
    tokens.push_back(argmax(logits));
    logits = runner.feed(std::span<const int32_t>(&tokens.back(), 1));
  }
  out.emplace_back(logits.begin(), logits.end());
  return out;
}

void expect_same_bits(Model& model, const DecodeSetup& s, int steps = 40) {
  const auto unfused = decode(model, false, s, steps);
  const auto fused = decode(model, true, s, steps);
  ASSERT_EQ(fused.size(), unfused.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    ASSERT_EQ(fused[i].size(), unfused[i].size());
    EXPECT_EQ(std::memcmp(fused[i].data(), unfused[i].data(), fused[i].size() * sizeof(float)), 0)
        << "step " << i << ", " << s.threads << " threads, kv " << dtype_name(s.kv_type);
  }
}

TEST(FusedAttention, AidreamsMatchesUnfusedBitForBit) {
  auto model = Model::load(testing::aidreams_gguf());
  expect_same_bits(*model, {2, Switch::fused_attention, DType::F32, {}});
}

TEST(FusedAttention, GqaMatchesUnfusedWithEveryKvType) {
  auto model = Model::load(testing::gqa_gguf());
  for (DType kv : {DType::F32, DType::F16, DType::BF16}) expect_same_bits(*model, {2, Switch::fused_attention, kv, {}});
  expect_same_bits(*model, {3, Switch::fused_attention, DType::F16, {}});
}

// Streaming heads: KV heads 1-3 of every layer keep 4 sinks and a 16-token window, so
// the decode steps past 20 tokens read both the stream table and the full blocks.
TEST(FusedAttention, GqaWithStreamingHeadsMatchesUnfused) {
  auto model = Model::load(testing::gqa_gguf());
  DecodeSetup s;
  s.modes.n_layers = model->config().n_layers;
  s.modes.n_kv_heads = model->config().n_kv_heads;
  s.modes.sink = 4;
  s.modes.window = 16;
  for (int64_t l = 0; l < s.modes.n_layers; ++l) {
    for (int64_t h = 0; h < s.modes.n_kv_heads; ++h) s.modes.streaming.push_back(h == 0 ? 0 : 1);
  }
  expect_same_bits(*model, s);
}

// Q8_0 and Q4_0 weights, repacked at load where the CPU has the interleaved kernels.
std::unique_ptr<Model> quantized_aidreams(const char* type) {
  const std::string out = testing::scratch_dir() + "/aidreams260K.fused." + type + ".gguf";
  const auto r = testing::run_command(testing::strata_bin() + " quantize '" + testing::aidreams_gguf() + "' '" +
                                      out + "' --type " + type + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return Model::load(out);
}

TEST(FusedAttention, QuantizedWeightsMatchUnfused) {
  for (const char* type : {"q8_0", "q4_0"}) expect_same_bits(*quantized_aidreams(type), {2, Switch::fused_attention, DType::F16, {}});
}

// Decode matmuls with their input steps inside the pool job, on 1-3 threads (one thread
// takes the separate path), float and quantized (repacked) weights.
TEST(FusedMatmulSteps, MatchSeparateStepsBitForBit) {
  auto gqa = Model::load(testing::gqa_gguf());
  for (int threads : {1, 2, 3}) expect_same_bits(*gqa, {threads, Switch::fused_matmul_steps, DType::F16, {}});
  for (const char* type : {"q8_0", "q4_0"}) {
    expect_same_bits(*quantized_aidreams(type), {2, Switch::fused_matmul_steps, DType::BF16, {}});
  }
}

TEST(FusedMatmulSteps, OnByDefaultAndSwitchable) {
  EXPECT_TRUE(Model::load(testing::gqa_gguf())->fused_matmul_steps());
  Model::LoadOptions o;
  o.fused_matmul_steps = false;
  EXPECT_FALSE(Model::load(testing::gqa_gguf(), o)->fused_matmul_steps());
}

TEST(FusedAttention, OnByDefaultAndSwitchable) {
  auto model = Model::load(testing::gqa_gguf());
  EXPECT_TRUE(model->fused_attention());
  Model::LoadOptions o;
  o.fused_attention = false;
  EXPECT_FALSE(Model::load(testing::gqa_gguf(), o)->fused_attention());
}

}  // namespace
}  // namespace strata

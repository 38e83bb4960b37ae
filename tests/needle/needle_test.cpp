// The accuracy instrument of long-context attention: the constructed induction model
// (make-model --preset induction) and the needle-in-a-haystack evaluation. Dense
// attention must retrieve every needle; with the retrieval head's output removed the
// same prompts must fall to chance, so the instrument provably can fail.
#include "eval/needle.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "convert/induction_model.h"
#include "convert/make_model.h"
#include "model/model.h"
#include "support/paths.h"
#include "support/process.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

std::vector<uint8_t> induction_bytes(DType type = DType::F32) {
  InductionModelOptions o;
  o.type = type;
  return build_induction_model(o).write_to_buffer();
}

std::unique_ptr<Model> load(std::vector<uint8_t> bytes) {
  return Model::from_file(gguf::GgufFile::from_buffer(std::move(bytes), "induction.gguf"));
}

// Zeroes the columns of `tensor` (an attention output matrix, one row per residual dim)
// that read query heads [first_head, first_head + n_heads): those heads no longer write
// anything into the residual stream.
std::vector<uint8_t> zero_head_outputs(std::vector<uint8_t> bytes, const std::string& tensor,
                                       int64_t first_head, int64_t n_heads, int64_t head_dim) {
  const auto file = gguf::GgufFile::from_buffer(bytes, "probe.gguf");
  const auto& t = file.tensor(tensor);
  EXPECT_EQ(t.type, DType::F32);
  const int64_t cols = t.ne[0], rows = t.ne[1];
  auto* w = reinterpret_cast<float*>(bytes.data() + file.data_offset() + t.offset);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = first_head * head_dim; c < (first_head + n_heads) * head_dim; ++c) {
      float zero = 0.0f;
      std::memcpy(w + r * cols + c, &zero, sizeof zero);
    }
  }
  return bytes;
}

ThreadPool& pool() {
  static ThreadPool p(2);
  return p;
}

TEST(InductionModel, PresetWritesAValidModelAndHeadMap) {
  const std::string dir = testing::scratch_dir();
  MakeModelOptions o;
  o.preset = kInductionPreset;
  o.output_path = dir + "/induction.gguf";
  o.head_map_path = dir + "/induction.heads.json";
  make_model(o);

  auto model = Model::load(o.output_path);
  const auto& c = model->config();
  const auto& info = induction_model_info();
  EXPECT_EQ(c.arch, "llama");
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(info.needle_tokens.size(), 100u);
  EXPECT_EQ(info.filler_tokens.size(), 676u);
  EXPECT_EQ(c.context_length, kInductionMaxContext);
  EXPECT_EQ(c.n_vocab, info.n_vocab);
  EXPECT_EQ(model->weights().rope_freq_factors.size(), static_cast<size_t>(c.rope_dim / 2));
  EXPECT_EQ(model->file().get_int_array(kInductionRetrievalHeadsKey), std::vector<int64_t>{2});
  EXPECT_EQ(model->file().get_string_array(kInductionHeadRolesKey)[2], "induction");
  EXPECT_EQ(info.retrieval_layer * info.n_kv_heads + info.retrieval_kv_head, 2);

  // The vocabulary is a working SPM tokenizer: filler words and needle numbers are
  // single tokens of the declared sets.
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  const auto ids = tok.encode("ab zz 17 99", false, false);
  ASSERT_EQ(ids.size(), 4u);
  const auto is_in = [](const std::vector<int32_t>& set, int32_t id) {
    return std::find(set.begin(), set.end(), id) != set.end();
  };
  EXPECT_TRUE(is_in(info.filler_tokens, ids[0]));
  EXPECT_TRUE(is_in(info.filler_tokens, ids[1]));
  EXPECT_TRUE(is_in(info.needle_tokens, ids[2]));
  EXPECT_EQ(ids[3], info.needle_tokens.back());
  EXPECT_EQ(tok.decode(ids), "ab zz 17 99");

  std::ifstream in(o.head_map_path);
  const auto map = nlohmann::json::parse(in);
  EXPECT_EQ(map["sink"], 4);
  EXPECT_EQ(map["window"], 64);
  EXPECT_EQ(map["modes"],
            nlohmann::json::parse(R"([["streaming","streaming"],["full","streaming"]])"));
  EXPECT_EQ(map["scores"][1][0], 1.0);
  EXPECT_EQ(map["scores"][0][0], 0.0);
}

TEST(InductionModel, EveryTokenHasTheSameNormAndNeedleCodesAreApart) {
  // Equal norms keep RMSNorm from turning any token into an attention sink; needle codes
  // at most half-aligned keep the induction match 30+ nats above any other needle.
  auto model = load(induction_bytes());
  const auto& e = model->weights().token_embd;
  ASSERT_EQ(e.type, DType::F32);
  const int64_t dim = model->config().dim;
  auto row = [&](int32_t t) { return reinterpret_cast<const float*>(e.row(t)); };
  auto dot = [&](int32_t a, int32_t b) {
    double s = 0.0;
    for (int64_t i = 0; i < dim; ++i) s += static_cast<double>(row(a)[i]) * row(b)[i];
    return s;
  };
  const double norm2 = dot(0, 0);
  for (int32_t t = 1; t < model->config().n_vocab; ++t) ASSERT_NEAR(dot(t, t), norm2, 1e-3) << t;
  const auto& needle = induction_model_info().needle_tokens;
  const auto& filler = induction_model_info().filler_tokens;
  // Needle and filler codes are orthogonal: their dot is the shared constant part alone.
  const double shared = dot(needle[0], filler[0]);
  EXPECT_NEAR(dot(needle[7], filler[100]), shared, 1e-3);
  for (size_t a = 0; a < needle.size(); ++a) {
    for (size_t b = a + 1; b < needle.size(); ++b) {
      EXPECT_LE(dot(needle[a], needle[b]) - shared, 0.5 * (norm2 - shared) + 1e-3);
    }
  }
}

TEST(InductionModel, RejectsWhatItCannotBuild) {
  InductionModelOptions o;
  o.type = DType::Q8_0;
  EXPECT_THROW(build_induction_model(o), Error);
  o.type = DType::F32;
  o.context_length = kInductionMaxContext + 1;
  EXPECT_THROW(build_induction_model(o), Error);
}

TEST(InductionModel, PositionalHeadsAreSharpAcross64K) {
  // With the forward pass's own f32 RoPE, the previous-token and current-token heads
  // put essentially all their weight on p-1 / p at every probed position up to 64K.
  EXPECT_GT(induction_positional_min_weight(kInductionMaxContext), 1.0 - 1e-9);
}

TEST(NeedlePrompt, PlacesKeyAndValueAtTheDepth) {
  NeedleTask task;
  task.filler_tokens = {10, 11, 12};
  task.needle_tokens = {20, 21, 22, 23};
  task.bos = 1;
  for (double depth : {0.0, 0.5, 1.0}) {
    const auto p = make_needle_prompt(task, 100, depth, 7);
    ASSERT_EQ(p.tokens.size(), 100u);
    EXPECT_EQ(p.tokens[0], 1);
    EXPECT_NE(p.key, p.value);
    EXPECT_EQ(p.tokens[static_cast<size_t>(p.key_pos)], p.key);
    EXPECT_EQ(p.tokens[static_cast<size_t>(p.key_pos + 1)], p.value);
    EXPECT_EQ(p.tokens.back(), p.key);
    int needles = 0;
    for (int32_t t : p.tokens) needles += t >= 20;
    EXPECT_EQ(needles, 3);
    EXPECT_EQ(p.tokens, make_needle_prompt(task, 100, depth, 7).tokens);  // seeded
  }
  EXPECT_EQ(make_needle_prompt(task, 100, 0.0, 1).key_pos, 1);
  EXPECT_EQ(make_needle_prompt(task, 100, 1.0, 1).key_pos, 97);  // "K V K" at the end
  EXPECT_THROW(make_needle_prompt(task, 3, 0.5, 1), Error);
  EXPECT_THROW(make_needle_prompt(task, 100, 1.5, 1), Error);
}

TEST(Needle, DenseAttentionRetrievesAtEveryContextAndDepth) {
  auto model = load(induction_bytes());
  EngineConfig ro;
  for (int64_t ctx : {256, 1000, 4000}) {
    for (double depth : {0.05, 0.5, 0.95}) {
      const int64_t trials = ctx >= 4000 ? 1 : ctx >= 1000 ? 3 : 4;
      const auto r = needle_accuracy(*model, ro, ctx, depth, trials, 1, pool());
      EXPECT_EQ(r.correct, trials) << "ctx " << ctx << " depth " << depth;
    }
  }
}

TEST(Needle, F16ModelAndF16CacheRetrieveToo) {
  auto model = load(induction_bytes(DType::F16));
  EngineConfig ro;
  ro.kv_type = DType::F16;
  for (double depth : {0.05, 0.95}) {
    const auto r = needle_accuracy(*model, ro, 1000, depth, 3, 2, pool());
    EXPECT_EQ(r.correct, 3) << "depth " << depth;
  }
}

TEST(Needle, WithoutTheRetrievalHeadAccuracyFallsToChance) {
  // Ablation by weight editing: zero the output columns of query heads 0-1 of layer 1
  // (the retrieval KV head's group). Nothing else changes, and the same prompts that
  // dense attention answers perfectly now score about chance (1/99).
  const auto& info = induction_model_info();
  const int64_t group = info.n_heads / info.n_kv_heads;
  auto ablated = load(zero_head_outputs(induction_bytes(), "blk.1.attn_output.weight",
                                        info.retrieval_kv_head * group, group, info.head_dim));
  auto intact = load(induction_bytes());
  EngineConfig ro;
  int64_t correct = 0, trials = 0;
  for (double depth : {0.05, 0.5, 0.95}) {
    const auto a = needle_accuracy(*ablated, ro, 500, depth, 20, 3, pool());
    // The first prompts of the same (ctx, depth, seed) are the same prompts.
    const auto b = needle_accuracy(*intact, ro, 500, depth, 5, 3, pool());
    EXPECT_EQ(b.correct, 5) << "depth " << depth;
    correct += a.correct;
    trials += a.trials;
  }
  const double chance = needle_task_from_model(*intact).chance();
  EXPECT_NEAR(chance, 1.0 / 99.0, 1e-12);
  // The ablated model answers the first needle token whatever the prompt, so it is right
  // only when V happens to be that token: about 1 trial in 99.
  EXPECT_LE(static_cast<double>(correct) / static_cast<double>(trials), 0.1)
      << correct << "/" << trials;

  // The other heads do not matter for retrieval: removing the layer-1 local head's
  // output leaves accuracy at 100%.
  auto no_local =
      load(zero_head_outputs(induction_bytes(), "blk.1.attn_output.weight",
                             (1 - info.retrieval_kv_head) * group, group, info.head_dim));
  EXPECT_EQ(needle_accuracy(*no_local, ro, 500, 0.5, 5, 4, pool()).correct, 5);
}

TEST(Needle, OtherModelsAreRejectedWithTheMissingKey) {
  InductionModelOptions o;
  auto w = build_induction_model(o);
  // A copy of the model without the ground-truth metadata.
  gguf::GgufWriter stripped;
  for (const auto& [key, value] : w.metadata()) {
    if (key != kInductionNeedleTokensKey) stripped.set_value(key, value);
  }
  const auto file = gguf::GgufFile::from_buffer(w.write_to_buffer(), "full.gguf");
  for (const auto& t : file.tensors()) {
    const auto bytes = file.tensor_bytes(t);
    stripped.add_tensor(t.name, t.type, t.ne, bytes.data(), bytes.size());
  }
  auto model = load(stripped.write_to_buffer());
  try {
    needle_task_from_model(*model);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(kInductionNeedleTokensKey), std::string::npos);
  }
}

TEST(Needle, CliMakesTheModelAndReportsAccuracy) {
  const std::string dir = testing::scratch_dir();
  const std::string model = dir + "/cli-induction.gguf";
  auto r = testing::run_command(testing::strata_bin() + " make-model " + model +
                                " --preset induction --ctx 4096 --head-map " + dir +
                                "/cli-heads.json 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("retrieval head: layer 1, kv head 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("strata.induction.retrieval_heads = [2]"), std::string::npos) << r.out;
  r = testing::run_command(testing::strata_bin() + " eval needle -m " + model +
                           " --ctx 200,300 --depths 0,0.5,1 --trials 2 -t 1 -o json 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cells"].size(), 6u);
  EXPECT_EQ(j["overall"]["correct"], 12);
  EXPECT_EQ(j["overall"]["accuracy"], 1.0);
  EXPECT_EQ(j["retrieval_heads"], nlohmann::json::parse("[2]"));
  r = testing::run_command(testing::strata_bin() + " eval needle -m " + model +
                           " --ctx 5000 --trials 1 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("exceeds the model's context length 4096"), std::string::npos) << r.out;
  r = testing::run_command(testing::strata_bin() + " eval needle -m " + model +
                           " --ctx 300 --depths 0.5 --trials 1 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("| 300 | 100.0% | 100.0% |"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace strata

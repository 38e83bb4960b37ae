// Golden tests on real trained weights: strata's conversion of llama2.c's aidreams260K
// must reproduce the fp32 reference implementation's tokens, logits and greedy text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "model/model.h"
#include "sample/sampler.h"
#include "support/engine_runs.h"
#include "support/paths.h"
#include "support/process.h"
#include "support/tiny_models.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

using testing::aidreams_gguf;
using testing::aidreams_ref;

// Max |a - b| over the row, relative to the row's max |b|.
double relative_row_error(std::span<const float> got, const nlohmann::json& want) {
  double max_abs = 0.0, max_diff = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double w = want[i].get<double>();
    max_abs = std::max(max_abs, std::abs(w));
    max_diff = std::max(max_diff, std::abs(w - static_cast<double>(got[i])));
  }
  return max_diff / max_abs;
}

TEST(AidreamsGolden, PromptTokensMatchReference) {
  auto model = Model::load(aidreams_gguf());
  const Tokenizer tok = Tokenizer::from_gguf(model->file());
  for (const auto& c : aidreams_ref()["cases"]) {
    const auto ids = tok.encode(c["prompt_text"].get<std::string>(), true, false);
    EXPECT_EQ(ids, c["prompt_tokens"].get<std::vector<int32_t>>()) << c["prompt_text"];
  }
}

TEST(AidreamsGolden, LogitsAtEveryPromptPositionWithin1e4) {
  auto model = Model::load(aidreams_gguf());
  ThreadPool pool(2);
  EngineCore engine(*model, pool, testing::one_request_config());
  const int64_t n_vocab = model->config().n_vocab;
  for (const auto& c : aidreams_ref()["cases"]) {
    const auto prompt = c["prompt_tokens"].get<std::vector<int32_t>>();
    const std::vector<float> all = testing::prompt_logits(engine, prompt);
    const auto& rows = c["logits"];
    ASSERT_EQ(rows.size(), prompt.size());
    for (size_t p = 0; p < prompt.size(); ++p) {
      const std::span<const float> row(all.data() + p * static_cast<size_t>(n_vocab),
                                       static_cast<size_t>(n_vocab));
      EXPECT_LT(relative_row_error(row, rows[p]), 1e-4) << c["prompt_text"] << " position " << p;
    }
  }
}

TEST(AidreamsGolden, GreedyContinuationMatchesReference) {
  auto model = Model::load(aidreams_gguf());
  ThreadPool pool(2);
  EngineCore engine(*model, pool, testing::one_request_config());
  for (const auto& c : aidreams_ref()["cases"]) {
    const auto prompt = c["prompt_tokens"].get<std::vector<int32_t>>();
    const auto want = c["greedy_tokens"].get<std::vector<int32_t>>();
    const auto got = testing::greedy_tokens(engine, prompt, static_cast<int32_t>(want.size()));
    EXPECT_EQ(got, want) << c["prompt_text"];
  }
}

TEST(AidreamsGolden, CliRunPrintsExactlyTheGreedyText) {
  for (const auto& c : aidreams_ref()["cases"]) {
    const auto n = c["greedy_tokens"].size();
    const std::string cmd = testing::strata_bin() + " run -m '" + aidreams_gguf() + "' -p '" +
                            c["prompt_text"].get<std::string>() + "' --temp 0 -n " +
                            std::to_string(n) + " 2>/dev/null";
    const auto r = testing::run_command(cmd);
    ASSERT_EQ(r.exit_code, 0) << cmd;
    EXPECT_EQ(r.out, c["greedy_text"].get<std::string>()) << cmd;
  }
}

TEST(AidreamsGolden, CliTokensFlagPrintsIds) {
  const auto& c = aidreams_ref()["cases"][0];
  const std::string cmd = testing::strata_bin() + " run -m '" + aidreams_gguf() + "' -p '" +
                          c["prompt_text"].get<std::string>() +
                          "' --temp 0 -n 10 --tokens 2>/dev/null";
  const auto r = testing::run_command(cmd);
  ASSERT_EQ(r.exit_code, 0);
  std::string want;
  for (size_t i = 0; i < 10; ++i) {
    want += (i ? " " : "") + std::to_string(c["greedy_tokens"][i].get<int>());
  }
  EXPECT_EQ(r.out, want);
}

TEST(AidreamsGolden, Q8_0QuantizedKeepsFirst40GreedyTokens) {
  const std::string q8 = testing::scratch_dir() + "/aidreams260K.q8_0.gguf";
  const auto r = testing::run_command(testing::strata_bin() + " quantize '" + aidreams_gguf() +
                                      "' '" + q8 + "' --type q8_0 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto model = Model::load(q8);
  // Every layer matrix whose rows divide into 32-element blocks is Q8_0 (ffn_down's
  // rows of 172 do not); the tied embedding/classifier is F16 (see classifier_type).
  int n_q8 = 0;
  for (const auto& t : model->file().tensors()) {
    if (t.ne.size() == 2 && t.name.rfind("blk.", 0) == 0 && t.ne[0] % 32 == 0) {
      EXPECT_EQ(t.type, DType::Q8_0) << t.name;
      ++n_q8;
    }
  }
  EXPECT_EQ(n_q8, 4 * 6);
  EXPECT_EQ(model->file().tensor("token_embd.weight").type, DType::F16);
  ThreadPool pool(2);
  EngineCore engine(*model, pool, testing::one_request_config());
  for (const auto& c : aidreams_ref()["cases"]) {
    const auto got =
        testing::greedy_tokens(engine, c["prompt_tokens"].get<std::vector<int32_t>>(), 40);
    const auto want = c["greedy_tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(got, std::vector<int32_t>(want.begin(), want.begin() + 40)) << c["prompt_text"];
  }
}

// --target-bpw plans over a --ladder: only its types (and F16 for the rows none of them
// divides), within the budget; an unknown ladder type is refused before any work.
TEST(AidreamsGolden, TargetBpwPlanKeepsToTheLadder) {
  const std::string dir = testing::scratch_dir();
  const std::string calib = dir + "/ladder_calib.txt";
  {
    std::ofstream out(calib);
    for (int i = 0; i < 4; ++i)
      out << "Once upon a time there was a little girl named Lily. She liked to play in the "
             "park with her dog. One day the sun was hot and they sat under a big tree. ";
  }
  const std::string q = dir + "/aidreams_ladder.gguf";
  const auto r = testing::run_command(testing::strata_bin() + " quantize '" + aidreams_gguf() +
                                      "' '" + q + "' --calib '" + calib +
                                      "' -c 32 -t 2 --target-bpw 7.5 --ladder q4_0,q8_0 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto model = Model::load(q);
  int n_q4 = 0;
  for (const auto& t : model->file().tensors()) {
    if (t.ne.size() != 2) continue;
    EXPECT_TRUE(t.type == DType::Q4_0 || t.type == DType::Q8_0 || t.type == DType::F16)
        << t.name << " " << dtype_name(t.type);
    n_q4 += t.type == DType::Q4_0;
  }
  EXPECT_GT(n_q4, 0);
  EXPECT_NE(r.out.find("plan:"), std::string::npos) << r.out;
  const auto bad =
      testing::run_command(testing::strata_bin() + " quantize '" + aidreams_gguf() + "' '" + q +
                           "' --calib '" + calib + "' --target-bpw 6 --ladder q4_0,nope 2>&1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("--ladder"), std::string::npos) << bad.out;
  EXPECT_EQ(bad.out.find("calibration:"), std::string::npos) << bad.out;  // refused first
}

}  // namespace
}  // namespace strata

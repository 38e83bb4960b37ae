// gqa260K: 8 query heads sharing 4 KV heads. Reference logits at BOS and the 200-token
// greedy continuation must match exactly.
#include <gtest/gtest.h>

#include <cmath>

#include "model/model.h"
#include "sample/sampler.h"
#include "support/engine_runs.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

TEST(GqaGolden, ConfigHasGroupedQueryAttention) {
  auto model = Model::load(testing::gqa_gguf());
  EXPECT_EQ(model->config().n_heads, 8);
  EXPECT_EQ(model->config().n_kv_heads, 4);
}

TEST(GqaGolden, LogitsAndGreedyContinuationMatchReference) {
  auto model = Model::load(testing::gqa_gguf());
  ThreadPool pool(2);
  for (const auto& c : testing::gqa_ref()["cases"]) {
    EngineCore engine(*model, pool, testing::one_request_config());
    const auto prompt = c["prompt_tokens"].get<std::vector<int32_t>>();
    const std::vector<float> all = testing::prompt_logits(engine, prompt);
    const auto& rows = c["logits"];
    const auto n_vocab = static_cast<size_t>(model->config().n_vocab);
    for (size_t p = 0; p < rows.size(); ++p) {
      double max_abs = 0, max_diff = 0;
      for (size_t i = 0; i < n_vocab; ++i) {
        const double w = rows[p][i].get<double>();
        max_abs = std::max(max_abs, std::abs(w));
        max_diff = std::max(max_diff, std::abs(w - all[p * n_vocab + i]));
      }
      EXPECT_LT(max_diff / max_abs, 1e-4) << "position " << p;
    }
    const auto want = c["greedy_tokens"].get<std::vector<int32_t>>();
    const auto got = testing::greedy_tokens(engine, prompt, static_cast<int32_t>(want.size()));
    EXPECT_EQ(got, want);
  }
}

}  // namespace
}  // namespace strata

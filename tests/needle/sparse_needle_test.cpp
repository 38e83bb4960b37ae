// Sparse attention on the constructed induction model: with the recorded retrieval
// head full and every other head streaming (sink 4, window 64) needles are still found;
// with the retrieval head streaming they are not (chance); `heads score` ranks the
// retrieval head first.
#include <gtest/gtest.h>

#include "convert/induction_model.h"
#include "eval/head_score.h"
#include "eval/needle.h"
#include "model/model.h"

namespace strata {
namespace {

std::unique_ptr<Model> induction_model() {
  return Model::from_file(
      gguf::GgufFile::from_buffer(build_induction_model({}).write_to_buffer(), "induction.gguf"));
}

ThreadPool& pool() {
  static ThreadPool p(2);
  return p;
}

HeadModes modes_with(const Model& m, const NeedleTask& task, bool retrieval_streaming) {
  HeadModes h;
  h.n_layers = m.config().n_layers;
  h.n_kv_heads = m.config().n_kv_heads;
  h.sink = 4;
  h.window = 64;
  h.streaming.assign(static_cast<size_t>(h.n_layers * h.n_kv_heads), 1);
  for (int64_t r : task.retrieval_heads)
    h.streaming[static_cast<size_t>(r)] = retrieval_streaming ? 1 : 0;
  return h;
}

double accuracy(Model& model, const HeadModes& modes, int64_t ctx,
                std::initializer_list<double> depths = {0.05, 0.5, 0.95}) {
  EngineConfig o;
  o.head_modes = modes;
  int64_t correct = 0, trials = 0;
  for (double depth : depths) {
    const NeedleResult r = needle_accuracy(model, o, ctx, depth, 4, 11, pool());
    correct += r.correct;
    trials += r.trials;
  }
  return static_cast<double>(correct) / static_cast<double>(trials);
}

TEST(SparseNeedle, RetrievalHeadFullKeepsEveryNeedle) {
  auto model = induction_model();
  const NeedleTask task = needle_task_from_model(*model);
  ASSERT_FALSE(task.retrieval_heads.empty());
  const HeadModes m = modes_with(*model, task, false);
  ASSERT_GT(m.n_streaming(), 0);
  for (int64_t ctx : {256, 1000, 3000}) EXPECT_EQ(accuracy(*model, m, ctx), 1.0) << "ctx " << ctx;
}

TEST(SparseNeedle, RetrievalHeadStreamingFallsToChance) {
  auto model = induction_model();
  const NeedleTask task = needle_task_from_model(*model);
  const HeadModes m = modes_with(*model, task, true);
  // Needles farther back than the window are invisible: chance is 1%, so at most one
  // lucky guess in the 12 trials. (At ctx 1000, depth 0.95 puts the needle ~50 tokens
  // back, inside the window, where it is found.)
  EXPECT_LE(accuracy(*model, m, 1000, {0.05, 0.5}), 1.0 / 8.0 + 1e-9);
  EXPECT_LE(accuracy(*model, m, 3000), 1.0 / 12.0 + 1e-9);
  EXPECT_EQ(accuracy(*model, m, 1000, {0.95}), 1.0);
}

TEST(SparseNeedle, HeadScoreRanksTheRetrievalHeadFirst) {
  auto model = induction_model();
  const NeedleTask task = needle_task_from_model(*model);
  HeadScoreOptions o;
  const HeadScores s = score_heads(*model, synthetic_calibration(*model, 600, 3, 5), o, pool(), {});
  const int64_t n_kv = model->config().n_kv_heads;
  const int64_t best = task.retrieval_heads.front();
  const double best_score =
      s.kl[static_cast<size_t>(best / n_kv)][static_cast<size_t>(best % n_kv)];
  for (int64_t l = 0; l < model->config().n_layers; ++l) {
    for (int64_t h = 0; h < n_kv; ++h) {
      if (l * n_kv + h == best) continue;
      EXPECT_LT(s.kl[static_cast<size_t>(l)][static_cast<size_t>(h)], best_score)
          << "layer " << l << " head " << h;
    }
  }
  EXPECT_GT(best_score, 0.1);
}

}  // namespace
}  // namespace strata

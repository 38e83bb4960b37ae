// Several sequences of different lengths run as one batch must give the same logits
// (within 1e-5) and greedy tokens as the same sequences run one at a time.
#include <gtest/gtest.h>

#include <cmath>

#include "kv/block_pool.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "support/tiny_models.h"

namespace strata {
namespace {

struct Seq {
  std::vector<int32_t> tokens;  // prompt, then generated
  std::vector<int32_t> table;
  size_t n_computed = 0;
  std::vector<std::vector<float>> logits;  // logits of every step's last token
};

// Runs all sequences together: first one batch with every prompt, then `steps` decode
// batches with one token per sequence. Records each step's last-token logits.
void run_batched(Model& model, ThreadPool& pool, std::vector<Seq>& seqs, int steps, DType kv_type) {
  const int64_t bs = 16;
  KvCache cache(model.kv_config(64, bs, kv_type));
  BlockPool blocks(64);
  const auto n_vocab = static_cast<size_t>(model.config().n_vocab);
  for (int step = 0; step <= steps; ++step) {
    std::vector<int32_t> tokens, positions, seq_index, logit_rows;
    std::vector<SequenceView> views;
    for (size_t s = 0; s < seqs.size(); ++s) {
      Seq& q = seqs[s];
      while (q.table.size() * bs < q.tokens.size()) q.table.push_back(*blocks.allocate());
      for (size_t p = q.n_computed; p < q.tokens.size(); ++p) {
        tokens.push_back(q.tokens[p]);
        positions.push_back(static_cast<int32_t>(p));
        seq_index.push_back(static_cast<int32_t>(s));
      }
      logit_rows.push_back(static_cast<int32_t>(tokens.size() - 1));
      views.push_back({q.table, static_cast<int32_t>(q.tokens.size()), {}});
    }
    ForwardBatch b{tokens, positions, seq_index, views, logit_rows};
    const auto logits = model.forward(b, cache, pool);
    for (size_t s = 0; s < seqs.size(); ++s) {
      Seq& q = seqs[s];
      std::vector<float> row(logits.begin() + static_cast<ptrdiff_t>(s * n_vocab),
                             logits.begin() + static_cast<ptrdiff_t>((s + 1) * n_vocab));
      q.n_computed = q.tokens.size();
      q.tokens.push_back(argmax(row));
      q.logits.push_back(std::move(row));
    }
  }
}

void check_model(const std::string& path, int threads, DType kv_type = DType::F32) {
  auto model = Model::load(path);
  ThreadPool pool(threads);
  const std::vector<std::vector<int32_t>> prompts = {
      {1},
      {1, 303, 281, 269, 435, 447, 328},
      {1, 429, 489, 430, 315, 374, 351, 308, 305, 434},
      {1,   303, 281, 269, 435, 447, 328, 446, 299, 303,
       266, 358, 430, 312, 379, 441, 260, 446, 262, 421}};
  const int steps = 12;
  std::vector<Seq> batched(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) batched[i].tokens = prompts[i];
  run_batched(*model, pool, batched, steps, kv_type);

  // Each sequence alone, through the same forward-pass contract: a batch of one.
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<Seq> alone(1);
    alone[0].tokens = prompts[i];
    run_batched(*model, pool, alone, steps, kv_type);
    for (int step = 0; step <= steps; ++step) {
      const auto& want = batched[i].logits[static_cast<size_t>(step)];
      const auto& got = alone[0].logits[static_cast<size_t>(step)];
      double max_diff = 0.0;
      for (size_t v = 0; v < want.size(); ++v) {
        max_diff = std::max(max_diff, static_cast<double>(std::abs(want[v] - got[v])));
      }
      EXPECT_LE(max_diff, 1e-5) << "sequence " << i << " step " << step;
    }
    EXPECT_EQ(alone[0].tokens, batched[i].tokens) << "sequence " << i;
  }
}

TEST(BatchInvariance, AidreamsOneBatchEqualsOneAtATime) {
  check_model(testing::aidreams_gguf(), 2);
}
TEST(BatchInvariance, GqaOneBatchEqualsOneAtATime) {
  check_model(testing::gqa_gguf(), 2);
}
TEST(BatchInvariance, GqaWithOneThread) {
  check_model(testing::gqa_gguf(), 1);
}
// bf16 attention (bf16 dot products where the CPU has them) is batch-invariant too.
TEST(BatchInvariance, GqaWithBf16Cache) {
  check_model(testing::gqa_gguf(), 2, DType::BF16);
}

}  // namespace
}  // namespace strata

// Model-free tests of the two per-request options of issue 25 in
// Scheduler::update_from_output: prompt logprobs (scored from the prompt rows of each
// prefill chunk, delivered with the first output) and a grammar constraint (advanced
// with each appended token).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "grammar/compiled.h"
#include "sched/scheduler.h"

namespace strata {
namespace {

constexpr int32_t kEos = 2;
constexpr int64_t kVocab = 4;

struct Harness {
  explicit Harness(int64_t chunk) {
    kv = std::make_unique<KvManager>(KvManagerConfig{32, 4, false, 1});
    SchedulerConfig c;
    c.max_batch_tokens = 64;
    c.prefill_chunk = chunk;
    c.eog_tokens = {kEos};
    sched = std::make_unique<Scheduler>(c, *kv);
  }

  // One step: every logits row is [0, 1, 2, 3] (so token t has logprob t - log(sum e^i)),
  // each prompt row the runner would produce is passed on, and `token` is sampled where
  // a request reached its last token.
  std::span<const RequestOutput> step(int32_t token) {
    const SchedulerOutput plan = sched->schedule();
    RunnerOutput r;
    r.n_vocab = kVocab;
    r.reset(plan.scheduled.size());
    logits.clear();
    for (const auto& e : plan.scheduled) {
      const Request& q = *e.request;
      const int64_t end = q.n_computed + e.n_tokens;
      if (end == static_cast<int64_t>(q.tokens.size())) r.push(token);
      r.end_entry();
      PromptLogitRows rows;
      const int64_t from = std::max(q.n_computed, q.prompt_logits_from());
      const int64_t to = std::min<int64_t>(end, q.n_prompt);
      if (!q.started() && from < to) {
        rows.first_row = static_cast<int32_t>(logits.size() / kVocab);
        rows.n_rows = static_cast<int32_t>(to - from);
        for (int32_t i = 0; i < rows.n_rows; ++i)
          for (int32_t v = 0; v < kVocab; ++v) logits.push_back(static_cast<float>(v));
      }
      r.prompt_rows.push_back(rows);
    }
    r.logits = logits;
    r.started_s = r.finished_s = 1.0;
    outputs.clear();
    sched->update_from_output(plan, r, outputs);
    return outputs.view();
  }

  std::unique_ptr<KvManager> kv;
  std::unique_ptr<Scheduler> sched;
  StepOutputs outputs;
  std::vector<float> logits;
};

TEST(ConstrainedOutput, PromptLogprobsCoverEveryPromptTokenAcrossChunks) {
  Harness h(/*chunk=*/3);
  RequestOptions o;
  o.stop.max_tokens = 0;
  o.prompt_logprobs = 2;
  const std::vector<int32_t> prompt = {1, 3, 0, 3, 1, 2, 0};  // 7 tokens: 3 chunks
  h.sched->add(std::make_unique<Request>(1, prompt, o, kVocab));
  std::span<const RequestOutput> out;
  for (int i = 0; i < 3; ++i) {
    out = h.step(1);
    if (i < 2) {
      EXPECT_TRUE(out.empty()) << "chunk " << i;
    }
  }
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].finish, FinishReason::kLength);
  ASSERT_EQ(out[0].prompt_logprobs.size(), prompt.size() - 1);
  const double log_z = std::log(1 + std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  for (size_t i = 0; i < out[0].prompt_logprobs.size(); ++i) {
    const TokenLogprob& lp = out[0].prompt_logprobs[i];
    EXPECT_EQ(lp.token, prompt[i + 1]);
    EXPECT_NEAR(lp.logprob, prompt[i + 1] - log_z, 1e-6);
    ASSERT_EQ(lp.top.size(), 2u);
    EXPECT_EQ(lp.top[0].first, 3);
  }
  EXPECT_TRUE(out[0].prompt_logits.empty());
}

TEST(ConstrainedOutput, TheGrammarAdvancesWithEachAppendedToken) {
  // Vocabulary: 0 "a", 1 "b", 2 end of generation, 3 "c". Grammar: "ab" then the end.
  auto vocab = std::make_shared<const grammar::VocabIndex>(
      std::vector<std::string>{"a", "b", "", "c"}, std::vector<int32_t>{kEos});
  Harness h(/*chunk=*/0);
  RequestOptions o;
  o.stop.max_tokens = 8;
  o.grammar = grammar::compile_gbnf("root ::= \"ab\"", vocab);
  h.sched->add(std::make_unique<Request>(1, std::vector<int32_t>{3, 3}, o, kVocab));
  Request* r = h.sched->find(1);
  ASSERT_NE(r->constraint, nullptr);
  EXPECT_TRUE(r->constraint->state().accepts(0));
  EXPECT_FALSE(r->constraint->state().accepts(1));
  h.step(0);  // "a"
  EXPECT_TRUE(r->constraint->state().accepts(1));
  EXPECT_FALSE(r->constraint->state().accepts(0));
  h.step(1);  // "b": complete
  EXPECT_TRUE(r->constraint->state().accepting());
  EXPECT_TRUE(r->constraint->state().accepts(kEos));
  const auto out = h.step(kEos);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].finish, FinishReason::kStop);
}

}  // namespace
}  // namespace strata

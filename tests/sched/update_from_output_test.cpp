// Model-free tests of Scheduler::update_from_output, the one place a request changes
// state after a step: tokens appended, stop rules, length limits, blocks freed and
// committed, prompt logits and logprobs handed to the first output.
#include <gtest/gtest.h>

#include <numeric>

#include "sched/scheduler.h"

namespace strata {
namespace {

constexpr int32_t kEos = 2;
constexpr int64_t kVocab = 4;

class UpdateFromOutput : public ::testing::Test {
 protected:
  void make(bool prefix_cache = false, int64_t max_model_len = 0) {
    kv_ = std::make_unique<KvManager>(KvManagerConfig{32, 4, prefix_cache, 1});
    SchedulerConfig c;
    c.max_batch_tokens = 64;
    c.prefill_chunk = 0;
    c.max_model_len = max_model_len;
    c.eog_tokens = {kEos};
    sched_ = std::make_unique<Scheduler>(c, *kv_);
  }

  RequestId add(int32_t n_prompt, const RequestOptions& o) {
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    std::iota(prompt.begin(), prompt.end(), 10);
    const RequestId id = next_id_++;
    sched_->add(std::make_unique<Request>(id, std::move(prompt), o, kVocab));
    return id;
  }

  // One step in which every request that reached its last token samples `token`; each
  // logits row holds its own row index, so tests can tell which rows a request got.
  std::span<const RequestOutput> step(int32_t token, bool with_prompt_rows = false) {
    const SchedulerOutput plan = sched_->schedule();
    RunnerOutput r;
    r.n_vocab = kVocab;
    r.reset(plan.scheduled.size());
    logits_.clear();
    for (const auto& e : plan.scheduled) {
      const Request& q = *e.request;
      const bool last = q.n_computed + e.n_tokens == static_cast<int64_t>(q.tokens.size());
      if (last) r.push(token).logprob = -0.5f;
      r.end_entry();
      PromptLogitRows rows;
      if (with_prompt_rows && !q.started()) {
        rows.first_row = static_cast<int32_t>(logits_.size() / kVocab);
        rows.n_rows = q.options.prompt_logits;
        for (int32_t i = 0; i < rows.n_rows; ++i)
          logits_.insert(logits_.end(), kVocab, static_cast<float>(rows.first_row + i));
      }
      r.prompt_rows.push_back(rows);
    }
    r.logits = logits_;
    r.started_s = r.finished_s = 1.0;
    outputs_.clear();
    sched_->update_from_output(plan, r, outputs_);
    return outputs_.view();
  }

  std::unique_ptr<KvManager> kv_;
  std::unique_ptr<Scheduler> sched_;
  StepOutputs outputs_;
  std::vector<float> logits_;
  RequestId next_id_ = 1;
};

TEST_F(UpdateFromOutput, AppendsSampledTokensAndStopsAtMaxTokens) {
  make();
  RequestOptions o;
  o.stop.max_tokens = 2;
  const RequestId id = add(5, o);
  auto out = step(7);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, id);
  EXPECT_EQ(out[0].new_tokens, (std::vector<int32_t>{7}));
  EXPECT_EQ(out[0].n_prompt, 5);
  EXPECT_FALSE(out[0].finished());
  EXPECT_EQ(sched_->find(id)->tokens.size(), 6u);
  EXPECT_EQ(sched_->find(id)->n_computed, 5);
  out = step(8);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].new_tokens, (std::vector<int32_t>{8}));
  EXPECT_EQ(out[0].finish, FinishReason::kLength);
  EXPECT_EQ(out[0].n_generated, 2);
  EXPECT_EQ(sched_->find(id), nullptr);  // forgotten, blocks freed
  EXPECT_EQ(kv_->usage().used, 0);
  EXPECT_EQ(sched_->stats().generation_tokens, 2);
  EXPECT_EQ(sched_->stats().prompt_tokens, 5);
}

TEST_F(UpdateFromOutput, EndOfGenerationStopsWithoutEmittingTheToken) {
  make();
  const RequestId id = add(3, {});
  step(5);
  const auto out = step(kEos);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].new_tokens.empty());
  EXPECT_EQ(out[0].finish, FinishReason::kStop);
  EXPECT_EQ(out[0].n_generated, 1);
  EXPECT_EQ(sched_->find(id), nullptr);
}

TEST_F(UpdateFromOutput, RequestStopIdsMinTokensAndIgnoreEos) {
  make();
  RequestOptions stop_on_6;
  stop_on_6.stop.stop_token_ids = {6};
  RequestOptions late;
  late.stop.min_tokens = 2;  // an EOS before 2 tokens is kept as a token
  RequestOptions ignore;
  ignore.stop.ignore_eos = true;
  const RequestId a = add(3, stop_on_6), b = add(3, late), c = add(3, ignore);
  auto out = step(6);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].finish, FinishReason::kStop);
  EXPECT_EQ(out[1].new_tokens, (std::vector<int32_t>{6}));
  out = step(kEos);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].id, b);
  EXPECT_EQ(out[0].new_tokens, (std::vector<int32_t>{kEos}));  // only 1 generated before it
  EXPECT_FALSE(out[0].finished());
  EXPECT_EQ(out[1].id, c);
  EXPECT_FALSE(out[1].finished());
  out = step(kEos);
  EXPECT_EQ(out[0].finish, FinishReason::kStop);  // b: min_tokens reached
  EXPECT_FALSE(out[1].finished());                // c ignores EOS
  EXPECT_EQ(sched_->find(a), nullptr);
  EXPECT_EQ(sched_->find(b), nullptr);
  EXPECT_NE(sched_->find(c), nullptr);
}

TEST_F(UpdateFromOutput, ContextLimitEndsWithLength) {
  make(false, 7);
  RequestOptions o;
  o.stop.max_tokens = 100;
  add(5, o);
  EXPECT_FALSE(step(4)[0].finished());
  EXPECT_FALSE(step(4)[0].finished());                  // 7 tokens: the 7th still fits the KV
  EXPECT_EQ(step(4)[0].finish, FinishReason::kLength);  // the 8th would not: it ends the request
}

TEST_F(UpdateFromOutput, CommitsFullBlocksToThePrefixCache) {
  make(true);
  RequestOptions o;
  o.stop.max_tokens = 1;
  add(9, o);  // blocks [10..13] [14..17] and a partial one
  step(3);
  EXPECT_EQ(kv_->usage().cached, 2);  // the finished request's full blocks stay cached
  add(9, o);                          // same prompt: both full blocks hit
  const auto out = step(3);
  EXPECT_EQ(out[0].n_cached_prompt, 8);
}

TEST_F(UpdateFromOutput, PromptLogitsAndLogprobsGoToTheFirstOutput) {
  make(true);
  RequestOptions o;
  o.stop.max_tokens = 3;
  o.prompt_logits = 2;
  o.logprobs = 0;
  add(9, o);
  auto out = step(3, true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].prompt_logits, (std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1}));
  ASSERT_EQ(out[0].logprobs.size(), 1u);
  EXPECT_EQ(out[0].logprobs[0].token, 3);
  out = step(3, true);
  EXPECT_TRUE(out[0].prompt_logits.empty());
  EXPECT_EQ(out[0].logprobs.size(), 1u);
  // A second request for the same prompt with prompt logits may not take cached blocks
  // that cover those positions: the hit stops at position 9 - 2 = 7, one block.
  add(9, o);
  out = step(3, true);
  EXPECT_EQ(out.back().n_cached_prompt, 4);
}

TEST_F(UpdateFromOutput, FinishEndsAQueuedRequestWithItsReason) {
  make();
  const RequestId id = add(3, {});
  EXPECT_TRUE(sched_->finish(id, FinishReason::kAbort, outputs_, 2.0));
  ASSERT_EQ(outputs_.view().size(), 1u);
  EXPECT_EQ(outputs_.view()[0].finish, FinishReason::kAbort);
  EXPECT_EQ(outputs_.view()[0].n_prompt, 3);
  EXPECT_FALSE(sched_->has_work());
  EXPECT_FALSE(sched_->finish(id, FinishReason::kAbort, outputs_, 2.0));
}

}  // namespace
}  // namespace strata

// Model-free scheduler tests: exactly which requests run with how many tokens.
#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <map>

namespace strata {
namespace {

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kv_ = std::make_unique<KvManager>(KvManagerConfig{64, 4, false, 0, 0, 0, 0});
  }

  Scheduler make(int32_t max_seqs, int64_t budget, int64_t chunk,
                 SchedulePolicy p = SchedulePolicy::kFcfs) {
    return Scheduler({max_seqs, budget, chunk, p}, *kv_);
  }

  static void add(Scheduler& s, RequestId id, int32_t prompt_len, int32_t priority = 0) {
    RequestOptions o;
    o.priority = priority;
    o.stop.max_tokens = 1000;
    s.add(std::make_unique<Request>(id, std::vector<int32_t>(static_cast<size_t>(prompt_len), 7), o,
                                    16));
  }

  // Runs a step through the real transition (Scheduler::update_from_output), as if the
  // model sampled token 9 for every request whose step reached its last token.
  static std::map<RequestId, int32_t> apply(Scheduler& s, const SchedulerOutput& out) {
    std::map<RequestId, int32_t> ran;
    RunnerOutput result;
    result.reset(out.scheduled.size());
    for (const auto& e : out.scheduled) {
      ran[e.request->id] = e.n_tokens;
      const bool last =
          e.request->n_computed + e.n_tokens == static_cast<int64_t>(e.request->tokens.size());
      if (last) result.push(9);
      result.end_entry();
    }
    StepOutputs outputs;
    s.update_from_output(out, result, outputs);
    return ran;
  }

  std::unique_ptr<KvManager> kv_;
};

using Ran = std::map<RequestId, int32_t>;

TEST_F(SchedulerTest, ChunkedPrefillSharesTheBudgetAndDecodesGoFirst) {
  auto s = make(8, 10, 6);
  add(s, 1, 3);
  add(s, 2, 20);
  auto out = s.schedule();
  EXPECT_EQ(apply(s, out), (Ran{{1, 3}, {2, 6}}));
  EXPECT_EQ(out.n_prefill_tokens, 9);
  out = s.schedule();  // 1 decodes first (1 token), then 2's next chunk (6)
  EXPECT_EQ(out.scheduled[0].request->id, 1u);
  EXPECT_EQ(apply(s, out), (Ran{{1, 1}, {2, 6}}));
  EXPECT_EQ(out.n_decode_tokens, 1);
  add(s, 3, 8);
  out = s.schedule();  // budget 10: decode 1, chunk 6 of 2, then 3 gets the last 3
  EXPECT_EQ(apply(s, out), (Ran{{1, 1}, {2, 6}, {3, 3}}));
  out = s.schedule();  // 2 has 2 prompt tokens left; 3 has 5 left
  EXPECT_EQ(apply(s, out), (Ran{{1, 1}, {2, 2}, {3, 5}}));
  out = s.schedule();  // everyone decodes
  EXPECT_EQ(apply(s, out), (Ran{{1, 1}, {2, 1}, {3, 1}}));
  EXPECT_EQ(out.n_decode_tokens, 3);
}

TEST_F(SchedulerTest, MaxSeqsCapsAdmission) {
  auto s = make(2, 100, 0);
  add(s, 1, 4);
  add(s, 2, 4);
  add(s, 3, 4);
  EXPECT_EQ(apply(s, s.schedule()), (Ran{{1, 4}, {2, 4}}));
  EXPECT_EQ(s.n_waiting(), 1u);
  ASSERT_TRUE(s.remove(1));
  EXPECT_EQ(apply(s, s.schedule()), (Ran{{2, 1}, {3, 4}}));
}

TEST_F(SchedulerTest, WithoutChunkingALongPromptWaitsForRoomThenRunsWhole) {
  auto s = make(8, 8, 0);
  add(s, 1, 2);
  add(s, 2, 30);
  EXPECT_EQ(apply(s, s.schedule()), (Ran{{1, 2}}));  // 2 does not fit beside 1
  ASSERT_TRUE(s.remove(1));
  EXPECT_EQ(apply(s, s.schedule()), (Ran{{2, 30}}));  // alone, over the budget, whole
}

TEST_F(SchedulerTest, PriorityPolicyOrdersWaitingRequests) {
  auto s = make(1, 100, 0, SchedulePolicy::kPriority);
  add(s, 1, 4, 5);
  add(s, 2, 4, 1);
  add(s, 3, 4, 1);
  EXPECT_EQ(apply(s, s.schedule()), (Ran{{2, 4}}));
  ASSERT_TRUE(s.remove(2));
  EXPECT_EQ(apply(s, s.schedule()), (Ran{{3, 4}}));
}

TEST_F(SchedulerTest, PreemptsLowestPriorityThenLatestArrivalWhenKvRunsOut) {
  kv_ = std::make_unique<KvManager>(KvManagerConfig{4, 4, false, 0, 0, 0, 0});  // 16 tokens
  auto s = make(8, 100, 0, SchedulePolicy::kPriority);
  add(s, 1, 4, 0);
  add(s, 2, 4, 0);
  add(s, 3, 3, 0);
  add(s, 4, 3, 0);
  EXPECT_EQ(apply(s, s.schedule()), (Ran{{1, 4}, {2, 4}, {3, 3}, {4, 3}}));  // 4 blocks, all used
  // 1 and 2 each need a second block to decode; 4 (latest) is preempted, then 3.
  auto out = s.schedule();
  EXPECT_EQ(out.preempted, (std::vector<RequestId>{4, 3}));
  EXPECT_EQ(apply(s, out), (Ran{{1, 1}, {2, 1}}));
  EXPECT_EQ(s.n_preemptions(), 2);
  Request* r4 = s.find(4);
  EXPECT_EQ(r4->n_computed, 0);
  EXPECT_EQ(r4->tokens.size(), 4u);  // keeps its generated token
  EXPECT_EQ(r4->status, RequestStatus::kWaiting);
  // Once 1 and 2 finish, 3 then 4 are recomputed (prompt plus generated token).
  ASSERT_TRUE(s.remove(1));
  ASSERT_TRUE(s.remove(2));
  EXPECT_EQ(apply(s, s.schedule()), (Ran{{3, 4}, {4, 4}}));
}

TEST_F(SchedulerTest, SelfPreemptionWhenAloneInTheWayOfHigherPriority) {
  kv_ = std::make_unique<KvManager>(KvManagerConfig{2, 4, false, 0, 0, 0, 0});
  auto s = make(8, 100, 0, SchedulePolicy::kPriority);
  add(s, 1, 4, 0);
  add(s, 2, 4, 9);
  EXPECT_EQ(apply(s, s.schedule()), (Ran{{1, 4}, {2, 4}}));
  auto out = s.schedule();  // 1 needs a block: the victim is 2 (lower priority)
  EXPECT_EQ(out.preempted, (std::vector<RequestId>{2}));
  EXPECT_EQ(apply(s, out), (Ran{{1, 1}}));
}

}  // namespace
}  // namespace strata

// Sampler behaviour on hand-made logits: greedy, seeds, filters and penalties.
#include "sample/sampler.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>

namespace strata {
namespace {

std::vector<float> logits_of(std::initializer_list<float> v) {
  return std::vector<float>(v);
}

TEST(Sampler, GreedyPicksArgmaxLowestIndexOnTies) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s(p, 4);
  auto l = logits_of({1.0f, 3.0f, 3.0f, -1.0f});
  EXPECT_EQ(s.sample(l, {}), 1);
}

// argmax: the first maximum; NaNs never win, and a NaN first entry is returned as is
// (nothing compares greater than it); all -inf or one entry gives 0.
TEST(Sampler, ArgmaxFirstMaximumSkipsNaNs) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(argmax(logits_of({0.5f, 2.0f, nan, 2.0f, 1.0f})), 1);
  EXPECT_EQ(argmax(logits_of({nan, 2.0f, 3.0f})), 0);
  EXPECT_EQ(argmax(logits_of({-inf, -inf, -inf})), 0);
  EXPECT_EQ(argmax(logits_of({-inf, -3.0f, inf, inf})), 2);
  EXPECT_EQ(argmax(logits_of({4.0f})), 0);
  std::vector<float> big(32000, -1.0f);
  big[31999] = 0.0f;
  big[17] = 0.0f;
  EXPECT_EQ(argmax(big), 17);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDiffers) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 7;
  std::vector<int32_t> a, b, c;
  Sampler s1(p, 8), s2(p, 8);
  p.seed = 8;
  Sampler s3(p, 8);
  for (int i = 0; i < 64; ++i) {
    auto l1 = logits_of({0, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f});
    auto l2 = l1, l3 = l1;
    a.push_back(s1.sample(l1, {}));
    b.push_back(s2.sample(l2, {}));
    c.push_back(s3.sample(l3, {}));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Sampler, TopKOneIsGreedy) {
  SamplingParams p;
  p.top_k = 1;
  p.seed = 3;
  Sampler s(p, 5);
  for (int i = 0; i < 50; ++i) {
    auto l = logits_of({0.5f, 0.1f, 2.0f, 1.9f, 0.0f});
    EXPECT_EQ(s.sample(l, {}), 2);
  }
}

TEST(Sampler, TopPKeepsOnlyTheNucleus) {
  // Probabilities ~ {0.64, 0.24, 0.09, 0.03}: top_p 0.8 keeps the first two.
  SamplingParams p;
  p.top_p = 0.8f;
  p.seed = 11;
  Sampler s(p, 4);
  std::map<int32_t, int> seen;
  for (int i = 0; i < 2000; ++i) {
    auto l = logits_of({3.0f, 2.0f, 1.0f, 0.0f});
    ++seen[s.sample(l, {})];
  }
  EXPECT_EQ(seen.count(2), 0u);
  EXPECT_EQ(seen.count(3), 0u);
  EXPECT_GT(seen[0], seen[1]);
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  SamplingParams p;
  p.min_p = 0.5f;  // keep tokens with prob >= half the top prob
  p.seed = 5;
  Sampler s(p, 3);
  for (int i = 0; i < 500; ++i) {
    auto l = logits_of({2.0f, 1.8f, -3.0f});
    EXPECT_NE(s.sample(l, {}), 2);
  }
}

TEST(Sampler, TemperatureSharpensDistribution) {
  SamplingParams cold;
  cold.temperature = 0.05f;
  cold.seed = 1;
  Sampler s(cold, 3);
  int top = 0;
  for (int i = 0; i < 500; ++i) {
    auto l = logits_of({1.0f, 0.8f, 0.0f});
    top += s.sample(l, {}) == 0;
  }
  EXPECT_GT(top, 480);
}

TEST(Sampler, PenaltiesPushDownRepeatedTokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  Sampler s(p, 3);
  auto l = logits_of({2.0f, 1.5f, 0.0f});
  const std::vector<int32_t> history = {0};
  EXPECT_EQ(s.sample(l, history), 1);  // 2.0 / 2 = 1.0 < 1.5
  EXPECT_FLOAT_EQ(l[0], 1.0f);

  SamplingParams f;
  f.temperature = 0.0f;
  f.frequency_penalty = 0.4f;
  f.presence_penalty = 0.1f;
  Sampler s2(f, 3);
  auto l2 = logits_of({2.0f, 1.5f, 0.0f});
  const std::vector<int32_t> h2 = {0, 0};
  EXPECT_EQ(s2.sample(l2, h2), 1);  // 2.0 - 0.1 - 2*0.4 = 1.1
  EXPECT_NEAR(l2[0], 1.1f, 1e-6);
  // Counts are reset between calls: the same history gives the same penalty again.
  auto l3 = logits_of({2.0f, 1.5f, 0.0f});
  s2.sample(l3, h2);
  EXPECT_NEAR(l3[0], 1.1f, 1e-6);
}

}  // namespace
}  // namespace strata

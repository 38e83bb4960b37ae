// The rejection-sampling rule of speculative verification, model-free: drafts drawn from
// a proposal q and verified against a target p give tokens distributed as p, for a
// sampled proposal (accept with min(1, p/q), resample from max(0, p - q)) and for a
// deterministic one (q a point mass); a deliberately wrong rule fails the same test,
// which shows the test can tell.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "sample/sampler.h"
#include "support/chi_square.h"

namespace strata {
namespace {

constexpr int64_t kVocab = 12;
constexpr double kAlpha = 1e-4;  // false-alarm rate per test

std::vector<float> logits_of(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.5f);
  std::vector<float> l(kVocab);
  for (auto& x : l) x = g(rng);
  return l;
}

// Draws `n` tokens from the target directly (speculation off).
std::vector<int32_t> direct(const SamplingParams& sp, const std::vector<float>& target, int n) {
  Sampler s(sp, kVocab);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    auto row = target;
    out.push_back(s.sample(row, {}));
  }
  return out;
}

enum class Rule { kCorrect, kAcceptAlways, kResampleFromP };

// Draws `n` tokens through one verified draft token each: the draft from q (the
// proposal sampler) or q's argmax (deterministic), then the verification rule.
std::vector<int32_t> speculative(const SamplingParams& sp, const std::vector<float>& target,
                                 const std::vector<float>& proposal, bool deterministic, Rule rule,
                                 int n) {
  SamplingParams qp = sp;
  qp.seed = sp.seed + 77;
  Sampler verifier(sp, kVocab), drafter(qp, kVocab);
  std::vector<float> q(kVocab);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    auto qrow = proposal;
    int32_t d;
    double q_d = 1.0;
    std::span<const float> qspan;
    if (deterministic) {
      d = argmax(proposal);
    } else {
      drafter.prepare(qrow, {});
      d = drafter.sample_prepared();
      drafter.write_probs(q);
      q_d = q[static_cast<size_t>(d)];
      qspan = q;
    }
    auto prow = target;
    verifier.prepare(prow, {});
    switch (rule) {
      case Rule::kCorrect:
        out.push_back(verifier.accept(d, q_d) ? d : verifier.sample_residual(qspan, d));
        break;
      case Rule::kAcceptAlways:
        out.push_back(d);
        break;
      case Rule::kResampleFromP:  // a rejection draws from p instead of the residual
        out.push_back(verifier.accept(d, q_d) ? d : verifier.sample_prepared());
        break;
    }
  }
  return out;
}

struct Case {
  const char* name;
  SamplingParams params;
};

std::vector<Case> cases() {
  SamplingParams t1;
  t1.temperature = 1.0f;
  t1.seed = 11;
  SamplingParams topk = t1;
  topk.top_k = 5;
  topk.seed = 12;
  SamplingParams mixed = t1;
  mixed.temperature = 0.7f;
  mixed.top_p = 0.9f;
  mixed.min_p = 0.02f;
  mixed.seed = 13;
  return {{"temperature 1", t1}, {"top-k 5", topk}, {"t 0.7, top-p 0.9, min-p", mixed}};
}

TEST(SpeculativeSampling, SampledProposalGivesTheTargetDistribution) {
  const int n = 40000;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto p = logits_of(1), q = logits_of(2);
    const auto want = direct(c.params, p, n);
    const auto got = speculative(c.params, p, q, false, Rule::kCorrect, n);
    const auto chi = testing::two_sample_chi_square(want, got, kAlpha);
    EXPECT_TRUE(chi.same()) << chi.statistic << " > " << chi.critical << " (df " << chi.df << ")";
  }
}

TEST(SpeculativeSampling, DeterministicProposalGivesTheTargetDistribution) {
  const int n = 40000;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto p = logits_of(3), q = logits_of(4);
    const auto want = direct(c.params, p, n);
    const auto got = speculative(c.params, p, q, true, Rule::kCorrect, n);
    const auto chi = testing::two_sample_chi_square(want, got, kAlpha);
    EXPECT_TRUE(chi.same()) << chi.statistic << " > " << chi.critical << " (df " << chi.df << ")";
  }
}

TEST(SpeculativeSampling, WrongRulesFailTheSameTest) {
  const int n = 40000;
  const auto c = cases()[0];
  const auto p = logits_of(1), q = logits_of(2);
  const auto want = direct(c.params, p, n);
  for (Rule rule : {Rule::kAcceptAlways, Rule::kResampleFromP}) {
    const auto got = speculative(c.params, p, q, false, rule, n);
    const auto chi = testing::two_sample_chi_square(want, got, kAlpha);
    EXPECT_FALSE(chi.same()) << "rule " << static_cast<int>(rule) << ": " << chi.statistic;
  }
}

TEST(SpeculativeSampling, GreedyAcceptsExactlyTheArgmax) {
  SamplingParams g;
  g.temperature = 0.0f;
  Sampler s(g, kVocab);
  auto row = logits_of(5);
  const int32_t best = argmax(row);
  s.prepare(row, {});
  EXPECT_TRUE(s.accept(best, 1.0));
  EXPECT_FALSE(s.accept((best + 1) % kVocab, 1.0));
  EXPECT_EQ(s.sample_residual({}, (best + 1) % kVocab), best);
  EXPECT_EQ(s.sample_prepared(), best);
}

TEST(SpeculativeSampling, PreparedDistributionMatchesSample) {
  // prepare() + sample_prepared() draws what sample() draws for the same seed.
  for (const auto& c : cases()) {
    Sampler a(c.params, kVocab), b(c.params, kVocab);
    for (int i = 0; i < 200; ++i) {
      auto r1 = logits_of(static_cast<uint32_t>(i)), r2 = r1;
      b.prepare(r2, {});
      EXPECT_EQ(a.sample(r1, {}), b.sample_prepared());
    }
  }
}

}  // namespace
}  // namespace strata

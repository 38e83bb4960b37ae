#include "spec/spec_controller.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata {
namespace {

TEST(ExpectedTokens, GeometricSeries) {
  EXPECT_DOUBLE_EQ(expected_tokens(0.0, 4), 1.0);
  EXPECT_NEAR(expected_tokens(0.5, 1), 1.5, 1e-12);
  EXPECT_NEAR(expected_tokens(0.5, 3), 1.875, 1e-12);
  EXPECT_NEAR(expected_tokens(1.0, 3), (1 - std::pow(0.999, 4)) / 0.001, 1e-9);
}

TEST(CostCurve, InterpolatesAndExtrapolates) {
  CostCurve c(64, 0.1);
  EXPECT_EQ(c.at(5), 0.0);  // nothing measured
  c.observe(2, 1.0);
  EXPECT_DOUBLE_EQ(c.at(2), 1.0);
  EXPECT_DOUBLE_EQ(c.at(1), 1.0);  // below: the nearest measurement
  // Beyond the only measurement: the prior slope, 10% of at(2)/2 per token.
  EXPECT_NEAR(c.at(6), 1.0 + 0.05 * 4, 1e-12);
  c.observe(10, 3.0);
  EXPECT_NEAR(c.at(6), 2.0, 1e-12);   // between: linear
  EXPECT_NEAR(c.at(14), 4.0, 1e-12);  // beyond two: their slope (steeper than the prior)
  c.observe(10, 8.0);                 // averaged: 0.8 * 3 + 0.2 * 8
  EXPECT_NEAR(c.at(10), 4.0, 1e-12);
}

struct Batch {
  std::vector<Request> reqs;
  std::vector<Request*> ptrs;
  explicit Batch(int n) {
    for (int i = 0; i < n; ++i) {
      RequestOptions o;
      o.stop.max_tokens = 100;
      reqs.emplace_back(i + 1, std::vector<int32_t>{1, 2, 3}, o, 8);
    }
    for (auto& r : reqs) ptrs.push_back(&r);
  }
  void accept(SpecController& ctl, int64_t drafted, int64_t accepted, int times) {
    for (auto& r : reqs)
      for (int i = 0; i < times; ++i) ctl.observe_acceptance(r, drafted, accepted);
  }
};

SpecConfig config(bool adaptive) {
  SpecConfig c;
  c.method = SpecMethod::kNgram;
  c.k = 4;
  c.adaptive = adaptive;
  return c;
}

TEST(SpecController, WithoutAdaptiveControlAlwaysK) {
  SpecController ctl(config(false), 256);
  Batch b(3);
  b.reqs[1].options.speculative = false;
  ctl.plan(b.ptrs);
  EXPECT_EQ(b.reqs[0].spec_k, 4);
  EXPECT_EQ(b.reqs[1].spec_k, 0);  // the request's own switch
  EXPECT_EQ(b.reqs[2].spec_k, 4);
}

TEST(SpecController, MeasuresThePlainStepFirst) {
  SpecController ctl(config(true), 256);
  Batch b(1);
  ctl.plan(b.ptrs);
  EXPECT_EQ(b.reqs[0].spec_k, 0);
}

TEST(SpecController, SpeculatesWhenVerifyIsCheapAndAcceptanceHigh) {
  SpecController ctl(config(true), 256);
  Batch b(1);
  // Bandwidth-bound: 5 tokens cost 10% more than 1.
  for (int t = 1; t <= 5; ++t) ctl.observe_step(t, true, 0.010 * (1 + 0.025 * (t - 1)));
  b.accept(ctl, 4, 4, 10);  // nearly everything accepted
  ctl.plan(b.ptrs);
  EXPECT_EQ(b.reqs[0].spec_k, 4);
}

TEST(SpecController, StopsWhenAcceptanceIsLowAndProbesLater) {
  SpecConfig c = config(true);
  c.probe_interval = 3;
  SpecController ctl(c, 256);
  Batch b(1);
  for (int t = 1; t <= 5; ++t) ctl.observe_step(t, true, 0.010 * (1 + 0.025 * (t - 1)));
  ctl.observe_draft(1, 1, 0.004);  // each draft pass costs 40% of a step
  b.accept(ctl, 4, 0, 10);         // nothing accepted
  ctl.plan(b.ptrs);
  EXPECT_EQ(b.reqs[0].spec_k, 0);
  ctl.plan(b.ptrs);
  EXPECT_EQ(b.reqs[0].spec_k, 0);
  ctl.plan(b.ptrs);
  EXPECT_EQ(b.reqs[0].spec_k, 1);  // the probe
}

TEST(SpecController, OffWhenTheStepIsComputeBound) {
  SpecController ctl(config(true), 1024);
  Batch b(16);
  // Compute-bound at 16 sequences: every token costs as much as the first.
  for (int t : {16, 32, 48, 64, 80}) ctl.observe_step(t, true, 0.001 * t);
  b.accept(ctl, 4, 3, 10);  // good acceptance (about 0.75) does not help
  ctl.plan(b.ptrs);
  for (const auto& r : b.reqs) EXPECT_EQ(r.spec_k, 0);
}

TEST(SpecController, ANewRequestStartsFromTheWorkloadsAcceptance) {
  SpecController ctl(config(true), 256);
  Batch old(1), fresh(1);
  EXPECT_NEAR(ctl.acceptance(fresh.reqs[0]), 0.5, 1e-12);  // nothing seen yet
  old.accept(ctl, 4, 4, 30);                               // the workload accepts everything
  EXPECT_GT(ctl.acceptance(fresh.reqs[0]), 0.9);
  for (int t = 1; t <= 9; ++t) ctl.observe_step(t, true, 0.010 * (1 + 0.05 * (t - 1)));
  ctl.plan(fresh.ptrs);
  EXPECT_EQ(fresh.reqs[0].spec_k, 4);  // drafts from its first step
}

}  // namespace
}  // namespace strata

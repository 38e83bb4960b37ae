// route_token: probabilities, top-k, renormalisation and scale as the file's metadata
// says; and the expert-load imbalance figure.
#include <gtest/gtest.h>

#include <cmath>

#include "model/moe_ffn.h"

namespace strata {
namespace {

MoeConfig config(int64_t n, int64_t k, bool norm, ExpertGating gating = ExpertGating::kSoftmax,
                 float scale = 1.0f) {
  MoeConfig m;
  m.n_experts = n;
  m.n_experts_used = k;
  m.norm_weights = norm;
  m.gating = gating;
  m.weights_scale = scale;
  return m;
}

TEST(RouteToken, SoftmaxTopKBestFirst) {
  const float logits[] = {0.0f, 2.0f, -1.0f, 1.0f};
  float probs[4];
  ExpertChoice out[2];
  route_token(config(4, 2, false), logits, nullptr, probs, out);
  const double z = 1 + std::exp(2.0) + std::exp(-1.0) + std::exp(1.0);
  EXPECT_EQ(out[0].expert, 1);
  EXPECT_EQ(out[1].expert, 3);
  EXPECT_NEAR(out[0].weight, std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(out[1].weight, std::exp(1.0) / z, 1e-6);
}

TEST(RouteToken, RenormalisedAndScaled) {
  const float logits[] = {0.0f, 2.0f, -1.0f, 1.0f};
  float probs[4];
  ExpertChoice out[2];
  route_token(config(4, 2, true, ExpertGating::kSoftmax, 2.5f), logits, nullptr, probs, out);
  const double w0 = std::exp(2.0) / (std::exp(2.0) + std::exp(1.0));
  EXPECT_NEAR(out[0].weight, 2.5 * w0, 1e-5);
  EXPECT_NEAR(out[1].weight, 2.5 * (1 - w0), 1e-5);
}

TEST(RouteToken, SigmoidGatingAndSelectionBias) {
  const float logits[] = {0.5f, 0.0f, 1.0f};
  const float bias[] = {0.0f, 10.0f, 0.0f};  // selects expert 1, weighs it by its own sigmoid
  float probs[3];
  ExpertChoice out[2];
  route_token(config(3, 2, false, ExpertGating::kSigmoid), logits, bias, probs, out);
  EXPECT_EQ(out[0].expert, 1);
  EXPECT_NEAR(out[0].weight, 0.5, 1e-6);
  EXPECT_EQ(out[1].expert, 2);
  EXPECT_NEAR(out[1].weight, 1 / (1 + std::exp(-1.0)), 1e-6);
}

TEST(RouteToken, TiesGoToTheLowerExpert) {
  const float logits[] = {1.0f, 3.0f, 3.0f, 3.0f};
  float probs[4];
  ExpertChoice out[2];
  route_token(config(4, 2, true), logits, nullptr, probs, out);
  EXPECT_EQ(out[0].expert, 1);
  EXPECT_EQ(out[1].expert, 2);
  EXPECT_FLOAT_EQ(out[0].weight, 0.5f);
}

TEST(ExpertLoad, ImbalanceIsMaxOverMean) {
  ExpertLoad load;
  load.reset(2, 4);
  EXPECT_EQ(load.max_imbalance(), 0.0);
  load.add(0, 0, 5);
  load.add(0, 1, 1);
  load.add(0, 2, 1);
  load.add(0, 3, 1);  // mean 2, max 5
  for (int e = 0; e < 4; ++e) load.add(1, e, 3);
  EXPECT_DOUBLE_EQ(load.layer_imbalance(0), 2.5);
  EXPECT_DOUBLE_EQ(load.layer_imbalance(1), 1.0);
  EXPECT_DOUBLE_EQ(load.max_imbalance(), 2.5);
  EXPECT_EQ(load.layer_counts(0)[0], 5);
}

}  // namespace
}  // namespace strata

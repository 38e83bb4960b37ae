#include "convert/quant_plan.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace strata {
namespace {

// Three tensors, types (4-bit, 5-bit, 8-bit) with convex (bytes, sensitivity) curves.
// Tensor 1 is the sensitive one. Budget 40 bytes: cheapest 30, so 10 extra bytes buy
// the best drops per byte: tensor 1 to 5-bit (0.9 per 4 bytes = 0.225/B), then tensor 1
// to 8-bit (+6 bytes, 0.015/B) beats tensor 0 to 5-bit (0.0125/B). Brute force agrees.
TEST(QuantPlan, ExactChoiceOnSmallProblem) {
  const std::vector<std::vector<PlanOption>> opts = {
      {{4, 10, 0.10}, {5, 14, 0.05}, {8, 20, 0.01}},
      {{4, 10, 1.00}, {5, 14, 0.10}, {8, 20, 0.01}},
      {{4, 10, 0.02}, {5, 14, 0.01}, {8, 20, 0.00}},
  };
  const auto pick = solve_quant_plan(opts, 40);
  EXPECT_EQ(pick, (std::vector<size_t>{0, 2, 0}));
  // Brute force over all 27 plans.
  double best = 1e9;
  std::vector<size_t> arg;
  for (size_t a = 0; a < 3; ++a)
    for (size_t b = 0; b < 3; ++b)
      for (size_t c = 0; c < 3; ++c) {
        const uint64_t bytes = opts[0][a].bytes + opts[1][b].bytes + opts[2][c].bytes;
        const double s = opts[0][a].sensitivity + opts[1][b].sensitivity + opts[2][c].sensitivity;
        if (bytes <= 40 && s < best) best = s, arg = {a, b, c};
      }
  EXPECT_EQ(pick, arg);
  // A larger budget upgrades everything; the cheapest plan over budget is an error.
  EXPECT_EQ(solve_quant_plan(opts, 60), (std::vector<size_t>{2, 2, 2}));
  EXPECT_EQ(solve_quant_plan(opts, 30), (std::vector<size_t>{0, 0, 0}));
  EXPECT_THROW(solve_quant_plan(opts, 29), Error);
}

}  // namespace
}  // namespace strata

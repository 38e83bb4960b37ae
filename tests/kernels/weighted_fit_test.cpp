// The importance-weighted scale search lowers the importance-weighted rounding error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/quant/quant_fit.h"

namespace strata::kernels::ref {
namespace {

double weighted_error(const float* x, const float* imp, int n, int nmax, float d) {
  double e = 0;
  for (int i = 0; i < n; ++i) {
    const int q = d == 0 ? 0 : std::clamp(static_cast<int>(std::lround(x[i] / d)), -nmax, nmax - 1);
    const double r = x[i] - d * q;
    e += imp[i] * r * r;
  }
  return e;
}

TEST(WeightedFit, ImportanceLowersWeightedErrorOnSyntheticData) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  double plain = 0, weighted = 0;
  for (int trial = 0; trial < 200; ++trial) {
    float x[16], imp[16];
    for (int i = 0; i < 16; ++i) {
      x[i] = g(rng);
      imp[i] = i < 3 ? 100.0f : 1.0f;  // three channels carry most activation mass
    }
    plain += weighted_error(x, imp, 16, 8, fit_symmetric(x, 16, 8));
    weighted += weighted_error(x, imp, 16, 8, fit_symmetric(x, imp, 16, 8));
  }
  EXPECT_LT(weighted, 0.9 * plain) << "plain " << plain << " weighted " << weighted;
  // Null importance is the unweighted search.
  float x[8] = {0.1f, -0.7f, 0.3f, 0.9f, -0.2f, 0.05f, 0.6f, -0.4f};
  EXPECT_EQ(fit_symmetric(x, nullptr, 8, 4), fit_symmetric(x, 8, 4));
}

}  // namespace
}  // namespace strata::kernels::ref

// The gamma arrival process: mean rate and coefficient of variation (1/sqrt(burstiness)
// for a gamma with shape = burstiness) over many samples, infinite rate, seeds.
#include "loadgen/arrival.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"

namespace strata::loadgen {
namespace {

struct Moments {
  double mean, cv;
};

Moments gaps(double rate, double burstiness, uint64_t seed, int n) {
  ArrivalProcess p(rate, burstiness, seed);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double g = p.next_gap_s();
    EXPECT_GE(g, 0);
    sum += g;
    sum2 += g * g;
  }
  const double mean = sum / n;
  const double var = sum2 / n - mean * mean;
  return {mean, std::sqrt(var) / mean};
}

TEST(Arrival, MeanRateAndBurstiness) {
  constexpr int kN = 200000;
  for (const double rate : {0.5, 4.0, 100.0}) {
    for (const double b : {0.25, 1.0, 4.0}) {
      const Moments m = gaps(rate, b, 42, kN);
      EXPECT_NEAR(m.mean * rate, 1.0, 0.02) << "rate " << rate << " burstiness " << b;
      EXPECT_NEAR(m.cv, 1.0 / std::sqrt(b), 0.05 / std::sqrt(b))
          << "rate " << rate << " burstiness " << b;
    }
  }
}

TEST(Arrival, PoissonGapsAreExponential) {
  // Burstiness 1: P(gap > mean) = e^-1.
  ArrivalProcess p(10, 1, 7);
  int above = 0;
  constexpr int kN = 100000;
  for (int i = 0; i < kN; ++i) above += p.next_gap_s() > 0.1;
  EXPECT_NEAR(static_cast<double>(above) / kN, std::exp(-1.0), 0.01);
}

TEST(Arrival, InfiniteRateSendsEverythingAtOnce) {
  const auto t = arrival_times(100, std::numeric_limits<double>::infinity(), 1, 3);
  ASSERT_EQ(t.size(), 100u);
  for (double x : t) EXPECT_EQ(x, 0.0);
  EXPECT_TRUE(std::isinf(parse_rate("inf")));
  EXPECT_TRUE(std::isinf(parse_rate("Infinity")));
  EXPECT_EQ(parse_rate("2.5"), 2.5);
  EXPECT_THROW(parse_rate("0"), Error);
  EXPECT_THROW(parse_rate("-1"), Error);
  EXPECT_THROW(parse_rate("fast"), Error);
  EXPECT_THROW(parse_rate("nan"), Error);
}

TEST(Arrival, SeedReproducibility) {
  const auto a = arrival_times(1000, 5, 0.5, 11);
  const auto b = arrival_times(1000, 5, 0.5, 11);
  const auto c = arrival_times(1000, 5, 0.5, 12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a[0], 0.0);
  for (size_t i = 1; i < a.size(); ++i) EXPECT_GE(a[i], a[i - 1]);
  EXPECT_NEAR(a.back() / 999.0, 0.2, 0.03);  // mean gap 1 / rate
}

TEST(Arrival, RejectsBadParameters) {
  EXPECT_THROW(ArrivalProcess(0, 1, 0), Error);
  EXPECT_THROW(ArrivalProcess(-2, 1, 0), Error);
  EXPECT_THROW(ArrivalProcess(1, 0, 0), Error);
  EXPECT_THROW(ArrivalProcess(1, std::nan(""), 0), Error);
}

}  // namespace
}  // namespace strata::loadgen

// Two-sample chi-square test of whether two sets of categorical draws come from the same
// distribution: categories with fewer than `min_count` draws in both samples together
// are pooled into one bin so the statistic's chi-square approximation holds.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace strata::testing {

struct ChiSquare {
  double statistic = 0;
  int df = 0;
  double critical = 0;  // at the false-alarm rate asked for
  bool same() const { return statistic <= critical; }
};

// Upper quantile of the standard normal for the tail probabilities the tests use.
inline double normal_upper_quantile(double alpha) {
  // Acklam-style rational approximation of the inverse normal CDF, upper tail.
  const double p = 1.0 - alpha;
  const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                      1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                      6.680131188771972e+01, -1.328068155288572e+01};
  const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                      -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                      3.754408661907416e+00};
  const double q = std::sqrt(-2.0 * std::log(1.0 - p));
  if (p > 0.97575) {
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  const double r = p - 0.5, s = r * r;
  return (((((a[0] * s + a[1]) * s + a[2]) * s + a[3]) * s + a[4]) * s + a[5]) * r /
         (((((b[0] * s + b[1]) * s + b[2]) * s + b[3]) * s + b[4]) * s + 1.0);
}

// Chi-square critical value (Wilson-Hilferty) for `df` degrees of freedom at `alpha`.
inline double chi_square_critical(int df, double alpha) {
  const double k = df, z = normal_upper_quantile(alpha);
  const double t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * t * t * t;
}

inline ChiSquare two_sample_chi_square(const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                                       double alpha, int min_count = 10) {
  std::map<int32_t, std::pair<double, double>> counts;
  for (int32_t x : a) counts[x].first += 1;
  for (int32_t x : b) counts[x].second += 1;
  std::vector<std::pair<double, double>> bins;
  std::pair<double, double> pooled{0, 0};
  for (const auto& [tok, c] : counts) {
    if (c.first + c.second >= min_count) {
      bins.push_back(c);
    } else {
      pooled.first += c.first;
      pooled.second += c.second;
    }
  }
  if (pooled.first + pooled.second > 0) bins.push_back(pooled);
  // Unequal sample sizes: the standard statistic with the ratio of totals.
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double ka = std::sqrt(nb / na), kb = std::sqrt(na / nb);
  ChiSquare out;
  for (const auto& [x, y] : bins) {
    if (x + y <= 0) continue;
    const double diff = ka * x - kb * y;
    out.statistic += diff * diff / (x + y);
  }
  out.df = std::max(1, static_cast<int>(bins.size()) - 1);
  out.critical = chi_square_critical(out.df, alpha);
  return out;
}

}  // namespace strata::testing

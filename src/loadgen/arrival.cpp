#include "loadgen/arrival.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "core/error.h"

namespace strata::loadgen {

ArrivalProcess::ArrivalProcess(double rate, double burstiness, uint64_t seed)
    : infinite_(std::isinf(rate)), rng_(seed) {
  if (!(rate > 0)) throw Error("--request-rate: must be > 0 or inf");
  if (!(burstiness > 0) || std::isinf(burstiness)) {
    throw Error("--burstiness: must be a finite number > 0");
  }
  if (!infinite_) {
    gamma_ = std::gamma_distribution<double>(burstiness, 1.0 / (rate * burstiness));
  }
}

double ArrivalProcess::next_gap_s() {
  return infinite_ ? 0.0 : gamma_(rng_);
}

std::vector<double> arrival_times(int64_t n, double rate, double burstiness, uint64_t seed) {
  ArrivalProcess p(rate, burstiness, seed);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
  double t = 0;
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(t);
    t += p.next_gap_s();
  }
  return out;
}

double parse_rate(const std::string& text, const char* flag) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "inf" || lower == "infinity") return std::numeric_limits<double>::infinity();
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(v > 0) || std::isnan(v)) {
    throw Error(std::string(flag) + ": expected a number > 0 or inf, got '" + text + "'");
  }
  return v;
}

}  // namespace strata::loadgen

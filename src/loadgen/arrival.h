// When each request of a benchmark is sent: a gamma-distributed gap between
// successive arrivals, as vLLM's benchmark_serving draws them (shape = burstiness,
// scale = 1 / (rate x burstiness), so the mean gap is 1 / rate whatever the
// burstiness; burstiness 1 is a Poisson process, below 1 burstier, above 1 steadier).
// An infinite rate sends everything at once.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace strata::loadgen {

class ArrivalProcess {
 public:
  // rate: requests per second, > 0 (infinity allowed); burstiness: > 0. Throws
  // strata::Error naming the flag otherwise.
  ArrivalProcess(double rate, double burstiness, uint64_t seed);

  double next_gap_s();  // seconds until the next arrival (0 for an infinite rate)

 private:
  bool infinite_;
  std::mt19937_64 rng_;
  std::gamma_distribution<double> gamma_;
};

// Send times relative to the start: the first request at 0, then cumulative gaps.
std::vector<double> arrival_times(int64_t n, double rate, double burstiness, uint64_t seed);

// "inf" (any case, also "infinity") or a positive number; throws strata::Error naming `flag`.
double parse_rate(const std::string& text, const char* flag = "--request-rate");

}  // namespace strata::loadgen

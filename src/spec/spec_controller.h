// Decides, before each step, how many draft tokens each decoding request verifies (0 = a
// plain decode). With adaptive control off it is always `k` (where the request allows
// speculation). With it on, the choice maximises expected tokens per second of the step
// from measurements, not guesses:
//  - acceptance: each request's per-token acceptance rate, exponentially averaged over
//    its verified drafts, starting from the engine-wide rate (the workload's) as a prior;
//  - verify cost: the step time measured at each step size (tokens per step), so the
//    cost of k more tokens per sequence is read off the curve, and where the step turns
//    compute-bound (large batches) the curve's slope makes every k > 0 lose;
//  - draft cost: the proposer's measured seconds per draft pass at each batch size.
// A step with B decoding sequences, S of them speculating with k tokens each, produces
// sum_r E_r(k) tokens, E(k) = (1 - a^(k+1)) / (1 - a), in t_verify(B + S k) + k t_draft(S)
// seconds; the k with the highest rate wins, 0 unless it beats plain decoding. A request
// left at 0 probes one draft token every probe_interval steps, so its estimate recovers
// when the text starts to repeat.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sched/request.h"
#include "spec/spec_config.h"

namespace strata {

// Step time (seconds) against a size (tokens per step, or sequences per draft pass), from
// exponentially averaged measurements; between measured sizes it interpolates, beyond them
// it extrapolates with the last slope (and a prior slope before there are two).
class CostCurve {
 public:
  CostCurve(int64_t max_size, double prior_slope);
  void observe(int64_t size, double seconds);
  double at(int64_t size) const;
  bool measured(int64_t size) const;

 private:
  std::vector<double> ema_;  // [size] seconds; < 0: not measured
  double prior_slope_;       // relative: at(n) = at(1) * (1 + prior_slope * (n - 1))
};

// Expected tokens a step gives a request with per-token acceptance `a` and k drafts.
double expected_tokens(double a, int32_t k);

class SpecController {
 public:
  SpecController(const SpecConfig& config, int64_t max_step_tokens);

  // Sets spec_k on every running decoding request (others get 0).
  void plan(std::span<Request* const> decoding);
  // After the step: the verify pass's time for `step_tokens` tokens when the step ran
  // only decodes, and the draft phase's time for `drafting` sequences (0: none).
  void observe_step(int64_t step_tokens, bool decode_only, double verify_s);
  void observe_draft(int64_t drafting, int32_t passes, double draft_s);
  // Updates a request's acceptance estimate, and the engine-wide one that is every new
  // request's prior, from one verified draft.
  void observe_acceptance(Request& r, int64_t drafted, int64_t accepted);
  double acceptance(const Request& r) const;

  const SpecConfig& config() const { return config_; }
  int32_t last_k() const { return last_k_; }

 private:
  SpecConfig config_;
  CostCurve verify_, draft_pass_;
  double all_accepted_ = 0.0, all_trials_ = 0.0;  // every request's drafts, averaged
  int32_t last_k_ = 0;
};

}  // namespace strata

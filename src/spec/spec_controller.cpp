#include "spec/spec_controller.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace strata {
namespace {

constexpr double kEma = 0.2;           // weight of a new cost measurement
constexpr double kAcceptDecay = 0.85;  // per verified draft, of the acceptance history
constexpr double kAllDecay = 0.98;     // per verified draft, of the engine-wide history
constexpr double kPriorTrials = 2.0;   // weight of the engine-wide rate in a request's
constexpr double kFirstPrior = 0.5;    // the engine-wide rate before any draft
constexpr double kMinGain = 1.05;      // speculate only for an expected gain of 5% or more

// A grammar-constrained request decodes plain: its mask would need the grammar state
// after each draft token.
bool may_speculate(const Request& r, const SpecConfig& c) {
  return r.options.speculative && !r.constraint && c.method != SpecMethod::kNone;
}

}  // namespace

CostCurve::CostCurve(int64_t max_size, double prior_slope)
    : ema_(static_cast<size_t>(std::max<int64_t>(1, max_size)) + 1, -1.0),
      prior_slope_(prior_slope) {}

void CostCurve::observe(int64_t size, double seconds) {
  if (size <= 0 || !(seconds >= 0.0)) return;
  auto& e =
      ema_[static_cast<size_t>(std::min<int64_t>(size, static_cast<int64_t>(ema_.size()) - 1))];
  e = e < 0.0 ? seconds : (1.0 - kEma) * e + kEma * seconds;
}

bool CostCurve::measured(int64_t size) const {
  return size > 0 && size < static_cast<int64_t>(ema_.size()) &&
         ema_[static_cast<size_t>(size)] >= 0.0;
}

double CostCurve::at(int64_t size) const {
  const auto n = static_cast<int64_t>(ema_.size()) - 1;
  size = std::clamp<int64_t>(size, 1, n);
  if (measured(size)) {
    double v = ema_[static_cast<size_t>(size)];
    for (int64_t s = size - 1; s >= 1; --s) {
      if (measured(s)) {
        v = std::max(v, ema_[static_cast<size_t>(s)]);  // monotone, as below
        break;
      }
    }
    return v;
  }
  int64_t lo = size - 1, hi = size + 1;
  while (lo >= 1 && !measured(lo)) --lo;
  while (hi <= n && !measured(hi)) ++hi;
  const bool has_lo = lo >= 1, has_hi = hi <= n;
  if (!has_lo && !has_hi) return 0.0;
  if (has_lo && has_hi) {
    // A larger step never costs less: noisy measurements must not make drafting look free.
    const double t = static_cast<double>(size - lo) / static_cast<double>(hi - lo);
    return std::max(ema_[static_cast<size_t>(lo)],
                    ema_[static_cast<size_t>(lo)] * (1.0 - t) + ema_[static_cast<size_t>(hi)] * t);
  }
  if (!has_lo) return ema_[static_cast<size_t>(hi)];
  // Beyond the largest measured size: the slope of the last two measurements, or the
  // prior's where there is only one, whichever is steeper (the optimistic one would keep
  // choosing an unmeasured size that it underrates).
  const double at_lo = ema_[static_cast<size_t>(lo)];
  double slope = prior_slope_ * at_lo / static_cast<double>(lo);
  int64_t lo2 = lo - 1;
  while (lo2 >= 1 && !measured(lo2)) --lo2;
  if (lo2 >= 1)
    slope =
        std::max(slope, (at_lo - ema_[static_cast<size_t>(lo2)]) / static_cast<double>(lo - lo2));
  return at_lo + slope * static_cast<double>(size - lo);
}

double expected_tokens(double a, int32_t k) {
  a = std::clamp(a, 0.0, 0.999);
  return (1.0 - std::pow(a, k + 1)) / (1.0 - a);
}

SpecController::SpecController(const SpecConfig& config, int64_t max_step_tokens)
    : config_(config),
      verify_(max_step_tokens + static_cast<int64_t>(config.k) * max_step_tokens, 0.02),
      draft_pass_(max_step_tokens, 0.02) {
  if (config.k < 1) throw Error("spec: --spec-k must be at least 1");
  if (config.probe_interval < 1) throw Error("spec: probe_interval must be at least 1");
}

double SpecController::acceptance(const Request& r) const {
  const double prior = all_trials_ > 0.0 ? all_accepted_ / all_trials_ : kFirstPrior;
  return (r.spec.ema_accepted + kPriorTrials * prior) / (r.spec.ema_trials + kPriorTrials);
}

void SpecController::observe_acceptance(Request& r, int64_t drafted, int64_t accepted) {
  if (drafted <= 0) return;
  const bool rejected = accepted < drafted;
  all_accepted_ = kAllDecay * all_accepted_ + static_cast<double>(accepted);
  all_trials_ = kAllDecay * all_trials_ + static_cast<double>(accepted + (rejected ? 1 : 0));
  r.spec.ema_accepted = kAcceptDecay * r.spec.ema_accepted + static_cast<double>(accepted);
  r.spec.ema_trials =
      kAcceptDecay * r.spec.ema_trials + static_cast<double>(accepted + (rejected ? 1 : 0));
}

void SpecController::observe_step(int64_t step_tokens, bool decode_only, double verify_s) {
  if (decode_only) verify_.observe(step_tokens, verify_s);
}

void SpecController::observe_draft(int64_t drafting, int32_t passes, double draft_s) {
  if (drafting > 0 && passes > 0) draft_pass_.observe(drafting, draft_s / passes);
}

void SpecController::plan(std::span<Request* const> decoding) {
  const auto B = static_cast<int64_t>(decoding.size());
  int64_t S = 0;
  for (Request* r : decoding) {
    r->spec_k = 0;
    if (may_speculate(*r, config_)) ++S;
  }
  if (S == 0) return;
  int32_t best = config_.k;
  if (config_.adaptive && !verify_.measured(B)) {
    best = 0;  // a plain step of this batch first: the baseline every k is judged against
  } else if (config_.adaptive) {
    // Rates relative to a plain step of the same batch.
    double best_rate = kMinGain * static_cast<double>(B) / verify_.at(B);
    best = 0;
    for (int32_t k = 1; k <= config_.k; ++k) {
      double tokens = static_cast<double>(B - S);
      for (Request* r : decoding) {
        if (may_speculate(*r, config_)) tokens += expected_tokens(acceptance(*r), k);
      }
      const double seconds = verify_.at(B + S * k) + k * draft_pass_.at(S);
      if (seconds > 0.0 && tokens / seconds > best_rate) {
        best_rate = tokens / seconds;
        best = k;
      }
    }
  }
  last_k_ = best;
  for (Request* r : decoding) {
    if (!may_speculate(*r, config_)) continue;
    if (best > 0) {
      r->spec_k = best;
      r->spec.steps_since_probe = 0;
    } else if (++r->spec.steps_since_probe >= config_.probe_interval) {
      r->spec_k = 1;
      r->spec.steps_since_probe = 0;
    }
  }
}

}  // namespace strata

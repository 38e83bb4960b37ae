#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace strata {

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  }
  return best;
}

Sampler::Sampler(const SamplingParams& params, int64_t n_vocab)
    : params_(params), rng_(params.seed) {
  if (n_vocab <= 0) throw Error("sampler: empty vocabulary");
  candidates_.resize(static_cast<size_t>(n_vocab));
  probs_.resize(static_cast<size_t>(n_vocab));
  counts_.assign(static_cast<size_t>(n_vocab), 0);
}

void Sampler::apply_penalties(std::span<float> logits, std::span<const int32_t> history) {
  const bool any = params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                   params_.frequency_penalty != 0.0f;
  if (!any || history.empty()) return;
  size_t start = 0;
  if (params_.penalty_last_n >= 0 && history.size() > static_cast<size_t>(params_.penalty_last_n)) {
    start = history.size() - static_cast<size_t>(params_.penalty_last_n);
  }
  const auto window = history.subspan(start);
  for (int32_t t : window) {
    if (t >= 0 && static_cast<size_t>(t) < counts_.size()) ++counts_[static_cast<size_t>(t)];
  }
  for (int32_t t : window) {
    if (t < 0 || static_cast<size_t>(t) >= counts_.size()) continue;
    const auto idx = static_cast<size_t>(t);
    const int32_t n = counts_[idx];
    if (n == 0) continue;  // already applied for an earlier occurrence
    float& l = logits[idx];
    if (params_.repetition_penalty != 1.0f) {
      l = l > 0.0f ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    }
    l -= params_.presence_penalty + params_.frequency_penalty * static_cast<float>(n);
    counts_[idx] = 0;  // reset as we go so the buffer is clean for the next call
  }
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  if (logits.size() != probs_.size()) throw Error("sampler: logits row has the wrong size");
  apply_penalties(logits, history);
  if (params_.greedy()) return argmax(logits);
  const float inv_t = 1.0f / params_.temperature;
  for (auto& l : logits) l *= inv_t;
  return sample_filtered(logits);
}

int32_t Sampler::sample_filtered(std::span<const float> logits) {
  const size_t n = logits.size();
  std::iota(candidates_.begin(), candidates_.end(), 0);
  size_t keep = n;
  auto by_logit = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<ptrdiff_t>(keep),
                      candidates_.end(), by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  // Softmax over the kept candidates (sorted, so the first is the maximum).
  const float max_l = logits[static_cast<size_t>(candidates_[0])];
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs_[i] = std::exp(logits[static_cast<size_t>(candidates_[i])] - max_l);
    total += probs_[i];
  }
  // min-p: drop tokens whose probability is below min_p times the top probability.
  if (params_.min_p > 0.0f) {
    const float floor_p = params_.min_p * probs_[0];
    size_t k = 1;
    while (k < keep && probs_[k] >= floor_p) ++k;
    for (size_t i = k; i < keep; ++i) total -= probs_[i];
    keep = k;
  }
  // top-p: the smallest prefix whose mass reaches top_p.
  if (params_.top_p < 1.0f) {
    double cum = 0.0;
    size_t k = 0;
    while (k < keep) {
      cum += probs_[k++];
      if (cum >= params_.top_p * total) break;
    }
    total = cum;
    keep = k;
  }
  std::uniform_real_distribution<double> uniform(0.0, total);
  const double r = uniform(rng_);
  double cum = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    cum += probs_[i];
    if (r < cum) return candidates_[i];
  }
  return candidates_[keep - 1];
}

}  // namespace strata

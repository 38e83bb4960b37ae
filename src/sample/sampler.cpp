#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "kernels/cpu/ops.h"

namespace strata {

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(kernels::argmax(logits.data(), static_cast<int64_t>(logits.size())));
}

Sampler::Sampler(const SamplingParams& params, int64_t n_vocab)
    : params_(params), rng_(params.seed) {
  if (n_vocab <= 0) throw Error("sampler: empty vocabulary");
  candidates_.resize(static_cast<size_t>(n_vocab));
  probs_.resize(static_cast<size_t>(n_vocab));
  counts_.assign(static_cast<size_t>(n_vocab), 0);
  dense_.assign(static_cast<size_t>(n_vocab), 0.0f);
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
  clear_dense();
  apply_penalties(logits, history);
  if (params_.greedy()) return argmax(logits);
  const float inv_t = 1.0f / params_.temperature;
  for (auto& l : logits) l *= inv_t;
  build_filtered(logits);
  return sample_prepared();
}

void Sampler::prepare(std::span<float> logits, std::span<const int32_t> history) {
  if (logits.size() != probs_.size()) throw Error("sampler: logits row has the wrong size");
  clear_dense();
  apply_penalties(logits, history);
  if (params_.greedy()) {
    argmax_ = argmax(logits);
    return;
  }
  const float inv_t = 1.0f / params_.temperature;
  for (auto& l : logits) l *= inv_t;
  build_filtered(logits);
  for (size_t i = 0; i < keep_; ++i) dense_[static_cast<size_t>(candidates_[i])] = probs_[i];
  dense_filled_ = true;
}

void Sampler::clear_dense() {
  if (!dense_filled_) return;
  for (size_t i = 0; i < keep_; ++i) dense_[static_cast<size_t>(candidates_[i])] = 0.0f;
  dense_filled_ = false;
}

double Sampler::prob(int32_t token) const {
  if (token < 0 || static_cast<size_t>(token) >= dense_.size()) return 0.0;
  if (params_.greedy()) return token == argmax_ ? 1.0 : 0.0;
  return dense_[static_cast<size_t>(token)] / total_;
}

bool Sampler::accept(int32_t token, double q_token) {
  if (params_.greedy()) return token == argmax_;
  const double p = prob(token);
  if (p <= 0.0) return false;
  if (q_token <= 0.0 || p >= q_token) return true;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  return uniform(rng_) < p / q_token;
}

int32_t Sampler::sample_prepared() {
  if (params_.greedy()) return argmax_;
  std::uniform_real_distribution<double> uniform(0.0, total_);
  const double r = uniform(rng_);
  double cum = 0.0;
  for (size_t i = 0; i < keep_; ++i) {
    cum += probs_[i];
    if (r < cum) return candidates_[i];
  }
  return candidates_[keep_ - 1];
}

int32_t Sampler::sample_residual(std::span<const float> q, int32_t rejected) {
  if (params_.greedy()) return argmax_;
  if (!q.empty() && q.size() != dense_.size())
    throw Error("sampler: proposal distribution has the wrong size");
  // Residual mass of candidate i: max(0, p_i - q_i), with p normalised.
  auto residual = [&](size_t i) {
    const auto tok = candidates_[i];
    const double p = probs_[i] / total_;
    const double qi = q.empty() ? (tok == rejected ? 1.0 : 0.0) : q[static_cast<size_t>(tok)];
    return std::max(0.0, p - qi);
  };
  double mass = 0.0;
  for (size_t i = 0; i < keep_; ++i) mass += residual(i);
  if (!(mass > 1e-12)) return sample_prepared();
  std::uniform_real_distribution<double> uniform(0.0, mass);
  const double r = uniform(rng_);
  double cum = 0.0;
  int32_t last = candidates_[0];
  for (size_t i = 0; i < keep_; ++i) {
    const double m = residual(i);
    if (m <= 0.0) continue;
    last = candidates_[i];
    cum += m;
    if (r < cum) return last;
  }
  return last;
}

void Sampler::write_probs(std::span<float> out) const {
  if (out.size() != dense_.size()) throw Error("sampler: output row has the wrong size");
  std::fill(out.begin(), out.end(), 0.0f);
  if (params_.greedy()) {
    out[static_cast<size_t>(argmax_)] = 1.0f;
    return;
  }
  for (size_t i = 0; i < keep_; ++i)
    out[static_cast<size_t>(candidates_[i])] = static_cast<float>(probs_[i] / total_);
}

void Sampler::build_filtered(std::span<const float> logits) {
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
  keep_ = keep;
  total_ = total;
}

}  // namespace strata

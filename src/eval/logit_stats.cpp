#include "eval/logit_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace strata {

void log_softmax(std::span<const float> logits, std::span<double> out) {
  if (logits.empty() || out.size() != logits.size())
    throw Error("log_softmax: empty row or size mismatch");
  double mx = -INFINITY;
  for (float x : logits) mx = std::max(mx, static_cast<double>(x));
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - mx);
  const double lse = mx + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - lse;
}

double token_nll(std::span<const float> logits, int32_t token) {
  if (token < 0 || static_cast<size_t>(token) >= logits.size())
    throw Error("token_nll: token " + std::to_string(token) + " outside the vocabulary");
  double mx = -INFINITY;
  for (float x : logits) mx = std::max(mx, static_cast<double>(x));
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - mx);
  return mx + std::log(sum) - static_cast<double>(logits[static_cast<size_t>(token)]);
}

double kl_divergence(std::span<const double> ref_logp, std::span<const double> logp) {
  if (ref_logp.size() != logp.size()) throw Error("kl_divergence: size mismatch");
  double kl = 0;
  for (size_t i = 0; i < ref_logp.size(); ++i) {
    const double p = std::exp(ref_logp[i]);
    if (p > 0) kl += p * (ref_logp[i] - logp[i]);
  }
  return std::max(kl, 0.0);  // rounding can leave -1e-17 for identical rows
}

int64_t argmax(std::span<const double> v) {
  return static_cast<int64_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

Summary summarize(std::vector<double> values) {
  Summary s;
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(n);
  s.median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(n)));
  s.p99 = values[std::max<size_t>(rank, 1) - 1];
  s.max = values.back();
  return s;
}

PplPlan plan_perplexity(int64_t n_tokens, int64_t n_ctx) {
  if (n_ctx < 4) throw Error("-c: the window must be at least 4 tokens");
  PplPlan p;
  p.n_ctx = n_ctx;
  p.n_chunks = n_tokens / n_ctx;
  p.first = n_ctx / 2;
  if (p.n_chunks == 0)
    throw Error("the text has " + std::to_string(n_tokens) + " tokens, fewer than one window of " +
                std::to_string(n_ctx));
  return p;
}

double perplexity(std::span<const double> nll) {
  if (nll.empty()) return NAN;
  return std::exp(std::accumulate(nll.begin(), nll.end(), 0.0) / static_cast<double>(nll.size()));
}

}  // namespace strata

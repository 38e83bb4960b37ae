// The math of `strata eval ppl` and `strata eval kld`: log-softmax of a logits row,
// the negative log-likelihood of a token, the KL divergence of one distribution from a
// reference, and the summary (mean, median, p99, count) of per-position values.
// Model-free, so tests can check it against hand-computed distributions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata {

// out[i] = logits[i] - logsumexp(logits), computed in double around the max so large
// logits do not overflow. out.size() must equal logits.size().
void log_softmax(std::span<const float> logits, std::span<double> out);

// -log p(token) under softmax(logits).
double token_nll(std::span<const float> logits, int32_t token);

// KL(P_ref || Q) = sum_i p_i (log p_i - log q_i), both given as log-probabilities.
double kl_divergence(std::span<const double> ref_logp, std::span<const double> logp);

// Index of the largest value (the first of ties).
int64_t argmax(std::span<const double> v);

struct Summary {
  int64_t count = 0;
  double mean = 0, median = 0, p99 = 0, max = 0;
};

// Median: the middle value (mean of the middle two for an even count); p99: the value at
// rank ceil(0.99 n) (nearest-rank). `values` is copied and sorted.
Summary summarize(std::vector<double> values);

// The windows llama.cpp's llama-perplexity scores: the token stream is cut into
// non-overlapping chunks of n_ctx tokens (a trailing partial chunk is dropped); within a
// chunk the logits at positions first .. n_ctx-2 (first = n_ctx / 2) predict the tokens
// at first+1 .. n_ctx-1, so every scored token sees at least n_ctx/2 tokens of context.
struct PplPlan {
  int64_t n_ctx = 0, n_chunks = 0, first = 0;
  int64_t scored_per_chunk() const { return n_ctx - 1 - first; }
};
PplPlan plan_perplexity(int64_t n_tokens, int64_t n_ctx);

// exp(mean NLL).
double perplexity(std::span<const double> nll);

}  // namespace strata

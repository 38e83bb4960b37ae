// Turns one row of logits into a token. One Sampler per sequence: it owns that
// sequence's random state and preallocated work buffers, so sampling allocates nothing
// per token and a seeded request gives the same tokens however it is batched.
//
// Speculative verification uses the same distribution in three calls: prepare() builds
// it for one row (penalties, temperature, top-k/p, min-p), accept() draws the
// rejection-sampling test min(1, p(d)/q(d)) for a proposed token, and sample_prepared()
// or sample_residual() draws the token that ends the step.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "strata/types.h"

namespace strata {

class Sampler {
 public:
  Sampler(const SamplingParams& params, int64_t n_vocab);

  // `logits` is modified in place (penalties, temperature). `history` is the sequence's
  // tokens so far (prompt and generated), for the penalties.
  int32_t sample(std::span<float> logits, std::span<const int32_t> history);

  // Builds the distribution sample() would draw from, without drawing.
  void prepare(std::span<float> logits, std::span<const int32_t> history);
  // Probability of `token` in the prepared distribution (greedy: 1 for the argmax).
  double prob(int32_t token) const;
  // Accepts a proposed token with probability min(1, p(token) / q_token), where q_token
  // is the probability the proposer drew it with (1 for a deterministic proposer).
  // Greedy: accepted exactly when it is the argmax; no random draw.
  bool accept(int32_t token, double q_token);
  // Draws from the prepared distribution.
  int32_t sample_prepared();
  // Draws from max(0, p - q) normalised, the rule after a rejection. `q` is the
  // proposer's distribution over the vocabulary; empty means a point mass at
  // `rejected`. Falls back to p where the residual is empty.
  int32_t sample_residual(std::span<const float> q, int32_t rejected);
  // The prepared distribution, normalised, into `out` (n_vocab; zero outside it).
  void write_probs(std::span<float> out) const;

  const SamplingParams& params() const { return params_; }

 private:
  void apply_penalties(std::span<float> logits, std::span<const int32_t> history);
  void build_filtered(std::span<const float> logits);
  void clear_dense();

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<int32_t> candidates_;  // (n_vocab) token ids, sorted by logit when needed
  std::vector<float> probs_;         // (n_vocab) unnormalised probabilities of candidates_
  std::vector<int32_t> counts_;      // (n_vocab) occurrences in the penalty window
  std::vector<float> dense_;         // (n_vocab) probs_ by token id, 0 outside the kept set
  size_t keep_ = 0;                  // prepared: candidates_[0, keep_) carry the mass
  double total_ = 0.0;               // prepared: their unnormalised sum
  int32_t argmax_ = -1;              // prepared, greedy: the token
  bool dense_filled_ = false;        // dense_ holds the prepared distribution
};

// Index of the largest logit (lowest index on ties).
int32_t argmax(std::span<const float> logits);

}  // namespace strata

// Turns one row of logits into a token. One Sampler per sequence: it owns that
// sequence's random state and preallocated work buffers, so sampling allocates nothing
// per token and a seeded request gives the same tokens however it is batched.
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

  const SamplingParams& params() const { return params_; }

 private:
  void apply_penalties(std::span<float> logits, std::span<const int32_t> history);
  int32_t sample_filtered(std::span<const float> logits);

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<int32_t> candidates_;  // (n_vocab) token ids, sorted by logit when needed
  std::vector<float> probs_;         // (n_vocab)
  std::vector<int32_t> counts_;      // (n_vocab) occurrences in the penalty window
};

// Index of the largest logit (lowest index on ties).
int32_t argmax(std::span<const float> logits);

}  // namespace strata

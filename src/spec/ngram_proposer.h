// Prompt lookup: the longest suffix of the sequence (ngram_max tokens down to
// ngram_min) that occurred before, most recent occurrence first, proposes the tokens
// that followed it. No model: it pays where the output quotes its input (editing,
// summaries, code, answers citing a document).
#pragma once

#include <cstdint>
#include <span>

#include "spec/proposer.h"

namespace strata {

// The tokens after the most recent earlier occurrence of the longest suffix of `tokens`
// of n in [n_min, n_max] tokens, at most `k` of them, into `out` (cleared first).
void ngram_lookup(std::span<const int32_t> tokens, int32_t n_min, int32_t n_max, int32_t k,
                  std::vector<int32_t>& out);

class NgramProposer final : public Proposer {
 public:
  NgramProposer(int32_t n_min, int32_t n_max);
  void propose(std::span<Request* const> requests) override;

 private:
  int32_t n_min_, n_max_;
};

}  // namespace strata

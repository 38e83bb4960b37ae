#include "spec/ngram_proposer.h"

#include <algorithm>

#include "core/error.h"

namespace strata {

void ngram_lookup(std::span<const int32_t> tokens, int32_t n_min, int32_t n_max, int32_t k,
                  std::vector<int32_t>& out) {
  out.clear();
  const auto len = static_cast<int64_t>(tokens.size());
  if (k <= 0) return;
  for (int64_t n = std::min<int64_t>(n_max, len - 1); n >= n_min && n > 0; --n) {
    const auto suffix = tokens.subspan(static_cast<size_t>(len - n));
    // Most recent occurrence first: nearby text is the likeliest to repeat.
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t to = std::min<int64_t>(len, from + k);
      out.assign(tokens.begin() + from, tokens.begin() + to);
      return;
    }
  }
}

NgramProposer::NgramProposer(int32_t n_min, int32_t n_max) : n_min_(n_min), n_max_(n_max) {
  if (n_min < 1 || n_max < n_min) throw Error("spec: ngram sizes must satisfy 1 <= min <= max");
}

void NgramProposer::propose(std::span<Request* const> requests) {
  for (Request* r : requests) {
    ngram_lookup(r->tokens, n_min_, n_max_, r->spec_k, r->draft);
    r->draft_probs.clear();
  }
}

}  // namespace strata

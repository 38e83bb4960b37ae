// What drafts tokens for speculative decoding: given the requests a step verifies a draft
// for (each with room for `spec_k` tokens, its KV blocks already allocated for them),
// fill each one's `draft` with up to spec_k tokens it guesses come next, and
// `draft_probs` with the distributions it drew them from when it sampled (a
// deterministic proposer leaves it empty: a point mass at each token).
#pragma once

#include <span>

#include "sched/request.h"

namespace strata {

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual void propose(std::span<Request* const> requests) = 0;
  // The request has ended: drop what the proposer keeps for it.
  virtual void release(RequestId /*id*/) {}
};

}  // namespace strata

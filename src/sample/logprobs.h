// Log-probabilities of one logits row: the scored token's and the top k. The one
// implementation both generation (ModelRunner) and prompt scoring (echo + logprobs) use,
// so a prompt token's logprob has the numerics of a generated token's.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "strata/types.h"

namespace strata {

// Fills out.logprob (of out.token, which the caller sets) and out.top (the k most likely,
// ties by lower id; tokens at -inf, masked by a grammar, are left out) from raw `logits`
// (log-sum-exp in double). `order` is scratch of
// logits.size() entries, reused across calls so that decode allocates nothing.
void fill_logprobs(std::span<const float> logits, int32_t k, std::vector<int32_t>& order,
                   TokenLogprob& out);

// Scores prompt tokens from the rows of a prefill step: row j holds the logits at prompt
// position first_pos + j, which predict token first_pos + j + 1. The row of the last
// prompt position predicts the first generated token and is skipped; the first prompt
// token has no row (it is never predicted). Appends one TokenLogprob per scored token.
void score_prompt_rows(std::span<const float> rows, int64_t n_vocab, int64_t first_pos,
                       std::span<const int32_t> prompt, int32_t k, std::vector<int32_t>& order,
                       std::vector<TokenLogprob>& out);

}  // namespace strata

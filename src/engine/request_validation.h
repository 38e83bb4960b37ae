// The checks every request passes before it reaches the scheduler: its prompt's ids and
// length against the vocabulary and the context, and its options' ranges. A free
// function of plain values, so that callers without an engine (the HTTP fuzz target)
// run exactly the engine's checks.
#pragma once

#include <cstdint>
#include <span>

#include "strata/types.h"

namespace strata {

// Throws strata::Error naming the field first ("prompt: ...", "top_p: ...").
void validate_request(std::span<const int32_t> prompt, const RequestOptions& options,
                      int64_t n_vocab, int64_t max_model_len);

}  // namespace strata

// Saved reference logits for `strata eval kld --ref-logits FILE` (written by
// `--save-logits FILE`). Only what KLD needs is stored: the token stream of the windows
// and the log-probabilities of the scored rows (the second half of each window,
// PplPlan), so the file is ~half the size of all logits. Layout, little-endian:
//   char magic[8] = "STRLGT01"; u32 n_vocab, n_ctx, n_chunks, first;
//   i32 tokens[n_chunks * n_ctx];
//   f32 logp[n_chunks * (n_ctx - 1 - first)][n_vocab]   (log-softmax of each row)
// A file read back is hostile: every field is checked, the size must match the header
// exactly, tokens must lie in the vocabulary and log-probs be finite and <= 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/logit_stats.h"

namespace strata {

struct RefLogits {
  int64_t n_vocab = 0;
  PplPlan plan;
  std::vector<int32_t> tokens;  // n_chunks * n_ctx
  std::vector<float> logp;      // n_chunks * scored_per_chunk * n_vocab
};

void write_ref_logits(const std::string& path, const RefLogits& r);
RefLogits read_ref_logits(const std::string& path);

}  // namespace strata

// The only input of Model::forward: a flattened batch of tokens from one or more
// sequences, and for each sequence its block table into the paged KV cache.
// A single-sequence generation is a batch of one. All spans point at memory owned by
// the caller (the runner reuses its buffers every step; nothing here allocates).
#pragma once

#include <cstdint>
#include <span>

namespace strata {

struct SequenceView {
  std::span<const int32_t> block_table;  // KV blocks of this sequence, in position order
  int32_t context_len = 0;               // tokens in KV once this batch is written
  // Sparse attention only: the streaming heads' blocks in the stream pool, indexed like
  // block_table (block i holds positions [i*B, (i+1)*B)); -1 where a block has left
  // the window and was released. Empty when every head is full.
  std::span<const int32_t> stream_table;
};

struct ForwardBatch {
  std::span<const int32_t> tokens;      // [n_tokens] token ids
  std::span<const int32_t> positions;   // [n_tokens] position of each token in its sequence
  std::span<const int32_t> seq_index;   // [n_tokens] index into `seqs`
  std::span<const SequenceView> seqs;   // [n_seqs]
  std::span<const int32_t> logit_rows;  // token indices whose logits are wanted, ascending
  // Layers to run, then the final norm and classifier; 0 = all. Early-exit drafting runs
  // the first few (their K/V are those the full model writes for the same tokens).
  int32_t n_layers = 0;

  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
};

}  // namespace strata

// Attention over the paged KV cache: K/V are written into the blocks a sequence's block
// table names and read back only through it. Tiled by KV block with an online softmax,
// so no score matrix is materialised however long the context; all query heads that
// share a KV head (GQA) are processed together so each K/V tile is read once per token.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/tile_kernels.h"
#include "core/thread_pool.h"
#include "kv/forward_batch.h"
#include "kv/kv_cache.h"

namespace strata {

struct AttentionShape {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
};

// A dense head's keys are folded in chunks of this many segments (a segment being one fold
// of TileKernels::fold_blocks blocks): each chunk's online softmax starts afresh and is
// merged into the row's running result at the chunk's end, at the same key positions for
// every token, group and thread split. So the chunks of a one-token decode can be folded
// by different threads and merged afterwards with the same bits (split-K): a decode with
// fewer KV heads than threads then reads each KV head once, where splitting a head's
// query rows between threads made every thread read all of it.
inline constexpr int64_t kChunkSegments = 32;

// Per-thread scratch for attention; sized once, reused every call.
class AttentionScratch {
 public:
  void reserve(int n_threads, const AttentionShape& shape, int64_t block_size);
  float* thread_buffer(int tid) { return buffer_.data() + static_cast<size_t>(tid) * per_thread_; }
  // Splits the batch's tokens into query groups: up to kQueryTile consecutive tokens of
  // one sequence at consecutive positions (a prefill chunk) share a pass over the K/V
  // tiles. group_starts() is the first batch token of each group, then n_tokens; the list
  // is reused, so it allocates only until it has grown to the largest batch. A one-token
  // batch also sizes the split-K states (chunk_state) for its context, growing only.
  void plan_groups(const ForwardBatch& batch);
  const std::vector<int32_t>& group_starts() const { return group_starts_; }
  // Keys per chunk: kChunkSegments segments of the kernel set reserve() saw.
  int64_t chunk_keys() const { return chunk_keys_; }
  // Whether the split-K states hold n_chunks chunks of every KV head (plan_groups sizes
  // them for a one-token batch's context).
  bool holds_chunks(int64_t n_chunks) const {
    return chunk_states_.size() >=
           static_cast<size_t>(n_chunks) * head_state_floats_ * static_cast<size_t>(n_kv_heads_);
  }
  // The fold state of chunk `chunk` of KV head g in a split-K decode of n_chunks chunks a
  // head: the head's query rows' maxima, then their sums, then their head_dim accumulators.
  float* chunk_state(int64_t g, int64_t chunk, int64_t n_chunks) {
    return chunk_states_.data() + static_cast<size_t>(g * n_chunks + chunk) * head_state_floats_;
  }

 private:
  std::vector<float> buffer_;
  std::vector<int32_t> group_starts_;
  std::vector<float> chunk_states_;
  size_t per_thread_ = 0;
  int64_t chunk_keys_ = 0;
  int64_t n_kv_heads_ = 0;
  size_t head_state_floats_ = 0;  // one KV head's rows: n_rep * (2 + head_dim)
};

// Stores each batch token's K and V rows ([n_tokens][n_kv_heads*head_dim]) at its
// position in its sequence's blocks. Throws if a position falls outside the block table.
void write_kv(KvCache& cache, int64_t layer, const ForwardBatch& batch, const float* k,
              const float* v);

// Where one token's K and V go in one layer: the slot in its blocks, and the block of
// its full heads and of its streaming heads (-1 where the layer has none).
struct KvSlot {
  int32_t full_block = -1;
  int32_t stream_block = -1;
  int64_t slot = 0;
};
// Throws as write_kv does if `pos` falls outside the sequence's tables.
KvSlot resolve_kv_slot(const KvCache& cache, int64_t layer, const SequenceView& seq, int64_t pos);
// Stores KV heads [h0, h1) of one token's K and V rows at a resolved slot (cannot throw;
// threads may store disjoint heads of one token concurrently).
void write_kv_heads(KvCache& cache, int64_t layer, const KvSlot& at, const float* k, const float* v,
                    int64_t h0, int64_t h1);

// One layer's attention for a batch whose query groups are planned in `scratch`
// (plan_groups), as work items any thread may run in any order: each query row is
// computed the same way whatever the items and whoever runs them. The items of a pass
// are independent; run_item(i, tid) uses scratch.thread_buffer(tid). Construction only
// reads the scratch, so every thread of a team may build its own pass of one layer.
class AttentionPass {
 public:
  AttentionPass(const KvCache& cache, int64_t layer, const ForwardBatch& batch,
                const AttentionShape& shape, const float* q, float* out, int n_threads,
                AttentionScratch& scratch);
  int64_t n_items() const { return n_items_; }
  void run_item(int64_t item, int tid) const;
  // A split-K decode (kChunkSegments) leaves each item's chunk state in the scratch; once
  // every item has run, merge_item(g, tid) for each KV head g < n_merge_items() (in any
  // order, on any thread) merges them in chunk order and writes the head's output rows.
  // 0 otherwise: run_item wrote them.
  int64_t n_merge_items() const { return n_chunk_split_ > 0 ? shape_.n_kv_heads : 0; }
  void merge_item(int64_t g, int tid) const;
  // A one-token batch (decode) over dense KV heads [g0, g1): prefetches the tiles of their
  // first fold segment and of the block the token is written to, so that they arrive
  // while the caller runs RoPE and the K/V writes. The weights streamed since the last
  // token evicted them, and the folds prefetch each segment's next one, not the first.
  void prefetch_decode_tiles(int64_t g0, int64_t g1) const;

 private:
  const KvCache& cache_;
  int64_t layer_;
  const ForwardBatch& batch_;
  AttentionShape shape_;
  const float* q_;
  float* out_;
  AttentionScratch& scratch_;
  const std::vector<int32_t>& groups_;
  const attention::TileKernels& tk_;
  int64_t n_groups_ = 0, n_split_ = 1, n_items_ = 0;
  int64_t n_chunk_split_ = 0;  // chunks per KV head of a split-K decode, else 0
};

// out[t] = softmax(q[t] . K[0..pos(t)] * scale) V for every batch token (causal within
// its own sequence). q and out are [n_tokens][n_heads*head_dim].
void paged_attention(const KvCache& cache, int64_t layer, const ForwardBatch& batch,
                     const AttentionShape& shape, const float* q, float* out, ThreadPool& pool,
                     AttentionScratch& scratch);

}  // namespace strata

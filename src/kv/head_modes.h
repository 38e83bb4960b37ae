// Per-head attention modes for long-context sparse attention. Every KV head of every
// layer is either `full` (attends to the whole context; its K/V live in the paged pool
// and grow with the sequence) or `streaming` (attends only to the first `sink` tokens
// and the last `window` tokens; its K/V live in a second pool where a sequence holds
// only its sink blocks and the blocks covering its window, StreamingManager releasing
// each block as it leaves the window). Query heads that share a KV head (GQA) share
// its mode. An empty `streaming` vector means dense attention: every head full. Head
// maps (eval/head_map.h) are resolved into HeadModes once at start-up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

struct HeadModes {
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int32_t sink = 4;                // tokens at the start every streaming head keeps
  int32_t window = 64;             // most recent tokens a streaming head keeps (including itself)
  std::vector<uint8_t> streaming;  // [layer * n_kv_heads + head]; empty = dense

  bool dense() const { return streaming.empty(); }
  bool is_streaming(int64_t layer, int64_t head) const {
    return !streaming.empty() && streaming[static_cast<size_t>(layer * n_kv_heads + head)] != 0;
  }
  int64_t n_streaming() const;
  int64_t n_full() const { return n_layers * n_kv_heads - n_streaming(); }
  // Heads of `layer` in each mode.
  int64_t n_streaming_in_layer(int64_t layer) const;
  // "L0: F S S F | L1: ..." for logs.
  std::string describe() const;
  // Stream-pool blocks one sequence needs at most: its sink blocks, the blocks spanning
  // its window plus `chunk_tokens` new tokens, and two partial blocks at the edges.
  int64_t stream_blocks_per_sequence(int64_t block_size, int64_t chunk_tokens) const {
    return (sink + block_size - 1) / block_size +
           (window + chunk_tokens + block_size - 1) / block_size + 2;
  }
};

// Where a streaming head's keys are, for a query at position `pos`: [0, sink_end) and
// [window_begin, pos]. The two ranges touch or overlap when the window reaches back to
// the sinks, and then the head attends exactly like a full one.
struct StreamingRange {
  int64_t sink_end = 0;
  int64_t window_begin = 0;
};
inline StreamingRange streaming_range(int64_t pos, int32_t sink, int32_t window) {
  StreamingRange r;
  r.sink_end = sink < pos + 1 ? sink : pos + 1;
  const int64_t begin = pos + 1 - window;
  r.window_begin = begin > r.sink_end ? begin : r.sink_end;
  return r;
}

}  // namespace strata

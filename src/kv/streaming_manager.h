// Streaming heads (sparse attention): a sequence keeps only the blocks of its first
// `sink` positions and of the last `window` positions before the next query, releasing
// each block as it leaves the window (released blocks stay cached while nothing needs
// the space). A prefix of k blocks is servable when its sink blocks and the blocks of
// the window ending at position k*B are all cached.
#pragma once

#include "kv/single_type_manager.h"

namespace strata {

class StreamingManager final : public SingleTypeManager {
 public:
  StreamingManager(int32_t n_blocks, int32_t block_size, int32_t sink, int32_t window);

  size_t find_hit(std::span<const BlockKey> keys, std::span<const int32_t> tokens,
                  size_t max_blocks) const override;
  void take_hit(BlockTable& table, std::span<const BlockKey> keys, std::span<const int32_t> tokens,
                size_t k) override;
  void register_full(BlockTable& table, std::span<const BlockKey> keys,
                     std::span<const int32_t> tokens) override;
  void release_unneeded(BlockTable& table, int64_t n_computed) override;

 private:
  // Blocks [0, sink_blocks()) hold sinks; a query at `pos` reads from window_first_block(pos) on.
  size_t sink_blocks() const;
  size_t window_first_block(int64_t pos) const;
  // Whether block i is read by a query at position k*B (a sink or in its window).
  bool kept_for_hit(size_t i, size_t k) const;

  int32_t sink_, window_;
};

}  // namespace strata

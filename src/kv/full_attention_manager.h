// Full attention: a sequence holds a block for every position it has computed, and a
// prefix hit is the longest run of cached blocks from the start.
#pragma once

#include "kv/single_type_manager.h"

namespace strata {

class FullAttentionManager final : public SingleTypeManager {
 public:
  using SingleTypeManager::SingleTypeManager;

  size_t find_hit(std::span<const BlockKey> keys, std::span<const int32_t> tokens,
                  size_t max_blocks) const override;
  void take_hit(BlockTable& table, std::span<const BlockKey> keys, std::span<const int32_t> tokens,
                size_t k) override;
  void register_full(BlockTable& table, std::span<const BlockKey> keys,
                     std::span<const int32_t> tokens) override;
  void release_unneeded(BlockTable&, int64_t) override {}
};

}  // namespace strata

#include "kv/full_attention_manager.h"

#include <algorithm>

#include "core/error.h"

namespace strata {

size_t FullAttentionManager::find_hit(std::span<const BlockKey> keys,
                                      std::span<const int32_t> tokens, size_t max_blocks) const {
  size_t k = 0;
  while (k < max_blocks && pool_.find(keys[k], block_tokens(tokens, k)) >= 0) ++k;
  return k;
}

void FullAttentionManager::take_hit(BlockTable& table, std::span<const BlockKey> keys,
                                    std::span<const int32_t> tokens, size_t k) {
  for (size_t i = 0; i < k; ++i) {
    const int32_t id = pool_.find(keys[i], block_tokens(tokens, i));
    if (id < 0) throw Error("kv manager: prefix hit block vanished");
    pool_.retain(id);
    table.ids.push_back(id);
  }
  table.n_registered = k;
}

void FullAttentionManager::register_full(BlockTable& table, std::span<const BlockKey> keys,
                                         std::span<const int32_t> tokens) {
  const size_t n = std::min(keys.size(), table.ids.size());
  for (size_t i = table.n_registered; i < n; ++i)
    pool_.register_block(table.ids[i], keys[i], block_tokens(tokens, i));
  table.n_registered = std::max(table.n_registered, n);
}

}  // namespace strata

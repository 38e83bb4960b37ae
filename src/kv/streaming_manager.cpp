#include "kv/streaming_manager.h"

#include <algorithm>

#include "core/error.h"

namespace strata {

StreamingManager::StreamingManager(int32_t n_blocks, int32_t block_size, int32_t sink,
                                   int32_t window)
    : SingleTypeManager(n_blocks, block_size), sink_(sink), window_(window) {
  if (sink < 0 || window < 1)
    throw Error("kv manager: sparse attention needs sink >= 0 and window >= 1");
}

size_t StreamingManager::sink_blocks() const {
  return static_cast<size_t>((sink_ + block_size_ - 1) / block_size_);
}

size_t StreamingManager::window_first_block(int64_t pos) const {
  return static_cast<size_t>(std::max<int64_t>(0, pos + 1 - window_) / block_size_);
}

bool StreamingManager::kept_for_hit(size_t i, size_t k) const {
  return i < sink_blocks() || i >= window_first_block(static_cast<int64_t>(k) * block_size_);
}

size_t StreamingManager::find_hit(std::span<const BlockKey> keys, std::span<const int32_t> tokens,
                                  size_t max_blocks) const {
  // Not monotone in k (a longer prefix needs a later window), so try each from the top.
  for (size_t k = max_blocks; k > 0; --k) {
    bool ok = true;
    for (size_t i = 0; i < k && ok; ++i) {
      if (kept_for_hit(i, k)) ok = pool_.find(keys[i], block_tokens(tokens, i)) >= 0;
    }
    if (ok) return k;
  }
  return 0;
}

void StreamingManager::take_hit(BlockTable& table, std::span<const BlockKey> keys,
                                std::span<const int32_t> tokens, size_t k) {
  if (k == 0) return;
  table.ids.assign(k, -1);
  for (size_t i = 0; i < k; ++i) {
    if (!kept_for_hit(i, k)) continue;
    const int32_t id = pool_.find(keys[i], block_tokens(tokens, i));
    if (id < 0) throw Error("kv manager: prefix hit block vanished");
    pool_.retain(id);
    table.ids[i] = id;
  }
  table.n_registered = k;
  table.n_released = window_first_block(static_cast<int64_t>(k) * block_size_);
}

void StreamingManager::register_full(BlockTable& table, std::span<const BlockKey> keys,
                                     std::span<const int32_t> tokens) {
  const size_t n = std::min(keys.size(), table.ids.size());
  for (size_t i = table.n_registered; i < n; ++i) {
    if (table.ids[i] >= 0) pool_.register_block(table.ids[i], keys[i], block_tokens(tokens, i));
  }
  table.n_registered = std::max(table.n_registered, n);
}

void StreamingManager::release_unneeded(BlockTable& table, int64_t n_computed) {
  // Blocks wholly before the next position's window, past the sinks, are not read again.
  const size_t first_window = std::min(window_first_block(n_computed), table.ids.size());
  for (size_t i = std::max(table.n_released, sink_blocks()); i < first_window; ++i)
    release_at(table, i);
  table.n_released = std::max(table.n_released, first_window);
}

}  // namespace strata

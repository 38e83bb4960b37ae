#include "kv/single_type_manager.h"

#include <algorithm>

#include "core/error.h"

namespace strata {

SingleTypeManager::SingleTypeManager(int32_t n_blocks, int32_t block_size)
    : pool_(n_blocks), block_size_(block_size) {
  if (block_size <= 0) throw Error("kv manager: block_size must be positive");
}

int32_t SingleTypeManager::blocks_needed(const BlockTable& table, int64_t n_tokens) const {
  const int64_t need = (n_tokens + block_size_ - 1) / block_size_;
  return static_cast<int32_t>(std::max<int64_t>(0, need - static_cast<int64_t>(table.ids.size())));
}

void SingleTypeManager::allocate(BlockTable& table, int64_t n_tokens) {
  for (int32_t i = blocks_needed(table, n_tokens); i > 0; --i) {
    const auto id = pool_.allocate();
    if (!id) throw Error("kv manager: allocation beyond the available blocks");
    table.ids.push_back(*id);
  }
}

void SingleTypeManager::release_at(BlockTable& table, size_t index) {
  int32_t& id = table.ids[index];
  if (id < 0) return;
  pool_.release(id);
  id = -1;
}

void SingleTypeManager::free(BlockTable& table) {
  for (size_t i = table.ids.size(); i-- > 0;) release_at(table, i);
  table.ids.clear();
  table.n_registered = 0;
  table.n_released = 0;
}

void SingleTypeManager::truncate(BlockTable& table, int64_t n_tokens) {
  const auto keep =
      static_cast<size_t>((std::max<int64_t>(0, n_tokens) + block_size_ - 1) / block_size_);
  if (table.n_registered > keep) throw Error("kv manager: truncating registered blocks");
  for (size_t i = table.ids.size(); i-- > keep;) release_at(table, i);
  if (table.ids.size() > keep) table.ids.resize(keep);
}

}  // namespace strata

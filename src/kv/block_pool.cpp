#include "kv/block_pool.h"

#include <string>

#include "core/error.h"

namespace strata {

BlockPool::BlockPool(int32_t n_blocks) {
  if (n_blocks <= 0) throw Error("block pool: n_blocks must be positive");
  ref_counts_.assign(static_cast<size_t>(n_blocks), 0);
  free_.reserve(static_cast<size_t>(n_blocks));
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<int32_t> BlockPool::allocate() {
  if (free_.empty()) return std::nullopt;
  const int32_t b = free_.back();
  free_.pop_back();
  ref_counts_[static_cast<size_t>(b)] = 1;
  return b;
}

void BlockPool::retain(int32_t block) {
  check(block);
  if (ref_counts_[static_cast<size_t>(block)] <= 0) {
    throw Error("block pool: retain of free block " + std::to_string(block));
  }
  ++ref_counts_[static_cast<size_t>(block)];
}

void BlockPool::release(int32_t block) {
  check(block);
  int32_t& rc = ref_counts_[static_cast<size_t>(block)];
  if (rc <= 0) throw Error("block pool: double release of block " + std::to_string(block));
  if (--rc == 0) free_.push_back(block);
}

int32_t BlockPool::ref_count(int32_t block) const {
  check(block);
  return ref_counts_[static_cast<size_t>(block)];
}

void BlockPool::check(int32_t block) const {
  if (block < 0 || block >= n_blocks()) {
    throw Error("block pool: block id " + std::to_string(block) + " out of range");
  }
}

}  // namespace strata

#include "kv/block_pool.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace strata {

BlockPool::BlockPool(int32_t n_blocks) {
  if (n_blocks <= 0) throw Error("block pool: n_blocks must be positive");
  blocks_.resize(static_cast<size_t>(n_blocks));
  free_.reserve(blocks_.size());
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

BlockPool::Block& BlockPool::at(int32_t block) {
  if (block < 0 || block >= n_blocks()) {
    throw Error("block pool: block id " + std::to_string(block) + " out of range");
  }
  return blocks_[static_cast<size_t>(block)];
}

const BlockPool::Block& BlockPool::at(int32_t block) const {
  return const_cast<BlockPool*>(this)->at(block);
}

std::optional<int32_t> BlockPool::allocate() {
  int32_t b = -1;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    b = lru_.front();
    evict(b);
  } else {
    return std::nullopt;
  }
  blocks_[static_cast<size_t>(b)].ref_count = 1;
  return b;
}

void BlockPool::retain(int32_t block) {
  Block& b = at(block);
  if (b.in_lru) {
    lru_.erase(b.lru_pos);
    b.in_lru = false;
  } else if (b.ref_count <= 0) {
    throw Error("block pool: retain of free block " + std::to_string(block));
  }
  ++b.ref_count;
}

void BlockPool::release(int32_t block) {
  Block& b = at(block);
  if (b.ref_count <= 0) throw Error("block pool: double release of block " + std::to_string(block));
  if (--b.ref_count > 0) return;
  if (b.key) {
    b.lru_pos = lru_.insert(lru_.end(), block);
    b.in_lru = true;
  } else {
    free_.push_back(block);
  }
}

int32_t BlockPool::ref_count(int32_t block) const {
  return at(block).ref_count;
}

int32_t BlockPool::find(const BlockKey& key, std::span<const int32_t> tokens) const {
  const auto it = cached_.find(key);
  if (it == cached_.end()) return -1;
  const Block& b = blocks_[static_cast<size_t>(it->second)];
  if (!std::equal(b.tokens.begin(), b.tokens.end(), tokens.begin(), tokens.end())) return -1;
  return it->second;
}

void BlockPool::register_block(int32_t block, const BlockKey& key,
                               std::span<const int32_t> tokens) {
  Block& b = at(block);
  if (cached_.count(key) != 0 || b.key) return;
  b.key = key;
  b.tokens.assign(tokens.begin(), tokens.end());
  cached_.emplace(key, block);
}

void BlockPool::evict(int32_t block) {
  Block& b = blocks_[static_cast<size_t>(block)];
  if (b.in_lru) {
    lru_.erase(b.lru_pos);
    b.in_lru = false;
  }
  if (b.key) {
    cached_.erase(*b.key);
    b.key.reset();
    b.tokens.clear();
    ++evictions_;
  }
}

KvUsage BlockPool::usage() const {
  KvUsage u;
  u.n_blocks = n_blocks();
  u.cached = static_cast<int32_t>(lru_.size());
  u.free = static_cast<int32_t>(free_.size());
  u.used = u.n_blocks - u.cached - u.free;
  return u;
}

void BlockPool::clear_cache() {
  while (!lru_.empty()) {
    const int32_t b = lru_.front();
    evict(b);
    free_.push_back(b);
  }
}

}  // namespace strata

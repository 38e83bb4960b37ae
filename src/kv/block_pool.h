// Integer block ids with reference counts over the paged KV cache. A free list hands out
// blocks; a sequence's block table is the ordered list of ids it holds.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace strata {

class BlockPool {
 public:
  explicit BlockPool(int32_t n_blocks);

  int32_t n_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }

  // Takes a free block (ref count 1), or nullopt when none is left.
  std::optional<int32_t> allocate();
  // Adds a holder to a block that is already in use (sharing a cached prefix).
  void retain(int32_t block);
  // Drops one holder; the block returns to the free list when none remain.
  void release(int32_t block);
  int32_t ref_count(int32_t block) const;

 private:
  void check(int32_t block) const;
  std::vector<int32_t> ref_counts_;
  std::vector<int32_t> free_;  // used as a stack; lowest ids handed out first
};

}  // namespace strata
